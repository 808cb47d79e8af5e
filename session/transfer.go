package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// IDTransfer is the server's Transfer packet (0x55), which sends the client
// to another server.
const IDTransfer uint32 = 0x55

// transfer is the Transfer packet, laid out as in gophertunnel v1.62.0's
// transfer.go and minecraft-data's packet_transfer, the same at every
// protocol this build speaks:
//
//	server address           string
//	port                     u16 (little-endian)
//	reload world             bool
//	gatherings configuration option, absent
type transfer struct {
	Address string
	Port    uint16
}

// Append appends the packet's fields to b.
func (m *transfer) Append(b []byte) []byte {
	b = appendString(b, m.Address)
	b = binary.LittleEndian.AppendUint16(b, m.Port)
	b = appendBool(b, false) // reload world: the client decides
	return appendBool(b, false)
}

// Transfer sends the client to the server at address, "host:port" (a host
// name or an IP address, IPv6 in brackets), with a Transfer packet, and
// ends the session as DisconnectWith does: the packet goes after anything
// already buffered, the Conn is closed gracefully so it is delivered, and
// Run returns nil. The client connects to address on its own; the server
// there needs no word of it. It returns an error for an address without a
// host or a port from 1 to 65535, and one wrapping net.ErrClosed if the
// session was already ending. It never blocks.
func (s *Session) Transfer(address string) error {
	host, p, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return fmt.Errorf("transfer: port %q: want 1 to 65535", p)
	}
	if host == "" {
		return errors.New("transfer: no host")
	}
	pk := transfer{Address: host, Port: uint16(port)}
	if !s.requestClose(nil, &Packet{ID: IDTransfer, Payload: pk.Append(nil)}) {
		return fmt.Errorf("transfer: %w", net.ErrClosed)
	}
	if e := s.Log().Debug(); e.Enabled() {
		e.Str("to", net.JoinHostPort(host, p)).Msg("transferring the player")
	}
	return nil
}
