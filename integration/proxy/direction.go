package proxy

import "strconv"

// Direction says which way a datagram travels through a Proxy. The zero
// value is Incoming.
type Direction int

const (
	// Incoming is the client-to-server direction.
	Incoming Direction = iota
	// Outgoing is the server-to-client direction.
	Outgoing
)

// numDirections sizes the per-direction counter array.
const numDirections = 2

// String returns "incoming" or "outgoing", or "Direction(n)" for any other
// value.
func (d Direction) String() string {
	switch d {
	case Incoming:
		return "incoming"
	case Outgoing:
		return "outgoing"
	default:
		return "Direction(" + strconv.Itoa(int(d)) + ")"
	}
}
