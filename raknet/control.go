package raknet

import (
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// maxPingRTT bounds a plausible connected ping round trip.
const maxPingRTT = time.Minute

// ctlPhase is where a connection's connected handshake stands.
type ctlPhase uint8

const (
	// phaseAwaitRequest: a server waiting for ConnectionRequest (0x09).
	phaseAwaitRequest ctlPhase = iota
	// phaseAwaitNIC: a server that sent ConnectionRequestAccepted (0x10)
	// and waits for NewIncomingConnection (0x13).
	phaseAwaitNIC
	// phaseAwaitAccepted: a client that sent ConnectionRequest and waits
	// for ConnectionRequestAccepted.
	phaseAwaitAccepted
	// phaseEstablished: the handshake is complete.
	phaseEstablished
)

func (p ctlPhase) String() string {
	switch p {
	case phaseAwaitRequest:
		return "await-request"
	case phaseAwaitNIC:
		return "await-new-incoming-connection"
	case phaseAwaitAccepted:
		return "await-accepted"
	default:
		return "established"
	}
}

// ctlEvent is what a message did to the connection.
type ctlEvent uint8

const (
	// evNone: a control message, answered or ignored.
	evNone ctlEvent = iota
	// evData: not a control message; it is the application's.
	evData
	// evEstablished: the handshake completed with this message.
	evEstablished
	// evPeerClosed: the peer sent DisconnectionNotification.
	evPeerClosed
	// evMalformed: a control message that does not decode.
	evMalformed
)

func (e ctlEvent) String() string {
	switch e {
	case evNone:
		return "none"
	case evData:
		return "data"
	case evEstablished:
		return "established"
	case evPeerClosed:
		return "peer-closed"
	default:
		return "malformed"
	}
}

// ctlReply is a control message to send, with its reliability.
type ctlReply struct {
	b   []byte
	rel wire.Reliability
}

// control is the connected control protocol of one connection as a pure
// state machine: connected ping/pong and RakNet timestamps,
// ConnectionRequest → ConnectionRequestAccepted → NewIncomingConnection,
// DisconnectionNotification and DetectLostConnections. It takes a message
// and the time and returns the replies to queue and what changed; it does
// no I/O, takes no lock and reads no clock.
type control struct {
	dial    bool
	created time.Time      // RakNet timestamps count from here
	peer    netip.AddrPort // the peer, IPv4 unmapped
	phase   ctlPhase
	// guid is the client's GUID from its ConnectionRequest (server side).
	guid int64
	// pingSent and pingStamp identify the latest connected ping, so its
	// pong gives an exact round trip.
	pingSent  time.Time
	pingStamp int64
	// latency is the smoothed round trip of connected pings, 0 before the
	// first pong.
	latency time.Duration
	// systemAddrs is how many system addresses ConnectionRequestAccepted
	// and NewIncomingConnection carry: 20 as Bedrock sends, 10 as RakNet.
	systemAddrs int

	replies [2]ctlReply
	// buf holds the encodings of the small replies (pings, pongs, the
	// request) until the next call. The handshake's larger ones, sent once
	// per connection, are allocated: a buffer for them would be carried by
	// every idle connection.
	buf [smallControl]byte
}

// smallControl is the room for the largest small control message,
// ConnectedPong.
const smallControl = max(wire.ConnectedPongSize, wire.ConnectionRequestSize)

// newControl returns the control protocol of a connection created at now.
func newControl(dial bool, peer netip.AddrPort, now time.Time) control {
	c := control{dial: dial, created: now, peer: peer, phase: phaseAwaitRequest, systemAddrs: wire.MaxSystemAddresses}
	if dial {
		c.phase = phaseAwaitAccepted
	}
	return c
}

// established reports whether the handshake completed.
func (c *control) established() bool { return c.phase == phaseEstablished }

// timestamp returns now as RakNet's millisecond clock for this connection.
func (c *control) timestamp(now time.Time) int64 { return now.Sub(c.created).Milliseconds() }

// request returns the client's ConnectionRequest, sent Reliable.
func (c *control) request(guid int64, now time.Time) ctlReply {
	m := wire.ConnectionRequest{ClientGUID: guid, Time: c.timestamp(now)}
	return ctlReply{m.Append(c.buf[:0]), wire.Reliable}
}

// ping returns a connected ping and remembers it for its pong.
func (c *control) ping(now time.Time) ctlReply {
	c.pingSent, c.pingStamp = now, c.timestamp(now)
	m := wire.ConnectedPing{Time: c.pingStamp}
	return ctlReply{m.Append(c.buf[:0]), wire.Unreliable}
}

// disconnect returns DisconnectionNotification: reliable and ordered
// behind everything written before it for a graceful close, unreliable
// for an abort.
func disconnect(graceful bool) ctlReply {
	r := wire.Unreliable
	if graceful {
		r = wire.ReliableOrdered
	}
	return ctlReply{[]byte{wire.IDDisconnectionNotification}, r}
}

// handle takes one message the reliability layer delivered at now. The
// replies it returns are valid until the next call.
func (c *control) handle(msg []byte, now time.Time) (ctlEvent, []ctlReply) {
	if len(msg) == 0 {
		return evMalformed, nil
	}
	switch msg[0] {
	case wire.IDConnectedPing:
		var m wire.ConnectedPing
		if _, err := m.Decode(msg); err != nil {
			return evMalformed, nil
		}
		pong := wire.ConnectedPong{PingTime: m.Time, PongTime: c.timestamp(now)}
		c.replies[0] = ctlReply{pong.Append(c.buf[:0]), wire.Unreliable}
		return evNone, c.replies[:1]
	case wire.IDConnectedPong:
		var m wire.ConnectedPong
		if _, err := m.Decode(msg); err != nil {
			return evMalformed, nil
		}
		c.onPong(m.PingTime, now)
		return evNone, nil
	case wire.IDDetectLostConnections:
		c.replies[0] = c.ping(now)
		return evNone, c.replies[:1]
	case wire.IDDisconnectionNotification:
		return evPeerClosed, nil
	case wire.IDConnectionRequest:
		return c.onRequest(msg, now)
	case wire.IDConnectionRequestAccepted:
		return c.onAccepted(msg, now)
	case wire.IDNewIncomingConnection:
		if c.dial || c.phase != phaseAwaitNIC {
			// Out of order (before ConnectionRequest) or repeated: a
			// connection is established only by request, acceptance and
			// NewIncomingConnection in that order.
			return evNone, nil
		}
		// Its addresses are informational: a NIC that names another
		// address (NAT, port forwarding) or does not parse still completes
		// the handshake.
		c.phase = phaseEstablished
		return evEstablished, nil
	}
	return evData, nil
}

// onRequest answers the first ConnectionRequest with
// ConnectionRequestAccepted. A retried request (a new message from a
// client that did not see the answer yet) gets nothing: the reliability
// layer resends the one ConnectionRequestAccepted until it is
// acknowledged.
func (c *control) onRequest(msg []byte, now time.Time) (ctlEvent, []ctlReply) {
	if c.dial || c.phase != phaseAwaitRequest {
		return evNone, nil
	}
	var m wire.ConnectionRequest
	if _, err := m.Decode(msg); err != nil {
		return evMalformed, nil
	}
	c.guid = m.ClientGUID
	c.phase = phaseAwaitNIC
	acc := wire.ConnectionRequestAccepted{ClientAddr: c.peer, RequestTime: m.Time, AcceptTime: c.timestamp(now)}
	acc.SystemAddrs.N = c.systemAddrs
	c.replies[0] = ctlReply{acc.Append(nil), wire.ReliableOrdered}
	return evNone, c.replies[:1]
}

// onAccepted completes a dialed handshake: NewIncomingConnection and a
// first ping go back.
func (c *control) onAccepted(msg []byte, now time.Time) (ctlEvent, []ctlReply) {
	if !c.dial || c.phase != phaseAwaitAccepted {
		return evNone, nil
	}
	var m wire.ConnectionRequestAccepted
	if _, err := m.Decode(msg); err != nil {
		return evMalformed, nil
	}
	c.phase = phaseEstablished
	nic := wire.NewIncomingConnection{ServerAddr: c.peer, PingTime: m.AcceptTime, PongTime: c.timestamp(now)}
	nic.SystemAddrs.N = c.systemAddrs
	c.replies[0] = ctlReply{nic.Append(nil), wire.ReliableOrdered}
	c.replies[1] = c.ping(now)
	return evEstablished, c.replies[:2]
}

// onPong takes a round-trip sample from a connected pong: exact for the
// latest ping, from the echoed timestamp for an earlier one.
func (c *control) onPong(stamp int64, now time.Time) {
	var rtt time.Duration
	if stamp == c.pingStamp && !c.pingSent.IsZero() {
		rtt = now.Sub(c.pingSent)
	} else {
		rtt = time.Duration(c.timestamp(now)-stamp) * time.Millisecond
	}
	if rtt < 0 || rtt > maxPingRTT {
		return
	}
	rtt = max(rtt, time.Microsecond)
	if c.latency > 0 {
		rtt = (7*c.latency + rtt) / 8
	}
	c.latency = rtt
}
