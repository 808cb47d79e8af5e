package wire

import (
	"fmt"
	"net/netip"
)

// ConnectionRequest (0x09) is the first connected message a client sends.
//
//	u8 id | u64 client GUID | i64 time | bool security
type ConnectionRequest struct {
	ClientGUID int64
	Time       int64
	Security   bool
}

// ConnectionRequestSize is the size of an encoded ConnectionRequest.
const ConnectionRequestSize = 1 + 8 + 8 + 1

// Append appends the encoding of m.
func (m *ConnectionRequest) Append(b []byte) []byte {
	b = appendI64(appendI64(append(b, IDConnectionRequest), m.ClientGUID), m.Time)
	return appendBool(b, m.Security)
}

// Decode decodes the message. A missing security byte reads as false.
func (m *ConnectionRequest) Decode(b []byte) (int, error) {
	if err := checkID(b, IDConnectionRequest); err != nil {
		return 0, decodeErr("CONNECTION_REQUEST", err)
	}
	r := reader{b: b, off: 1}
	m.ClientGUID = r.i64()
	m.Time = r.i64()
	m.Security = false
	if r.err == nil && r.remaining() > 0 {
		m.Security = r.bool()
	}
	if r.err != nil {
		return 0, decodeErr("CONNECTION_REQUEST", r.err)
	}
	return r.off, nil
}

// MaxSystemAddresses is the most system addresses ConnectionRequestAccepted
// and NewIncomingConnection carry: RakNet sends 10, Bedrock clients 20.
const MaxSystemAddresses = 20

// SystemAddresses is the fixed list of internal addresses the handshake
// messages carry. It is an array so decoding does not allocate.
type SystemAddresses struct {
	Addrs [MaxSystemAddresses]netip.AddrPort
	N     int
}

func (s *SystemAddresses) append(b []byte) []byte {
	n := min(max(s.N, 0), MaxSystemAddresses)
	for i := range n {
		b = AppendAddr(b, s.Addrs[i])
	}
	return b
}

// decode reads addresses until exactly tail bytes remain.
func (s *SystemAddresses) decode(r *reader, tail int) {
	s.N = 0
	for r.err == nil && r.remaining() > tail {
		if s.N == MaxSystemAddresses {
			r.err = fmt.Errorf("%w: more than %d system addresses", ErrTooMany, MaxSystemAddresses)
			return
		}
		s.Addrs[s.N] = r.addr()
		s.N++
	}
	if r.err == nil && r.remaining() != tail {
		r.err = errUnexpectedEOF
	}
}

// ConnectionRequestAccepted (0x10) accepts a ConnectionRequest.
//
//	u8 id | client address | u16 system index | N system addresses |
//	i64 request time | i64 accept time
type ConnectionRequestAccepted struct {
	ClientAddr  netip.AddrPort
	SystemIndex uint16
	SystemAddrs SystemAddresses
	RequestTime int64
	AcceptTime  int64
}

// Append appends the encoding of m.
func (m *ConnectionRequestAccepted) Append(b []byte) []byte {
	b = AppendAddr(append(b, IDConnectionRequestAccepted), m.ClientAddr)
	b = m.SystemAddrs.append(appendU16(b, m.SystemIndex))
	return appendI64(appendI64(b, m.RequestTime), m.AcceptTime)
}

// Decode decodes the message, reading as many system addresses (up to 20)
// as come before the two trailing timestamps.
func (m *ConnectionRequestAccepted) Decode(b []byte) (int, error) {
	if err := checkID(b, IDConnectionRequestAccepted); err != nil {
		return 0, decodeErr("CONNECTION_REQUEST_ACCEPTED", err)
	}
	r := reader{b: b, off: 1}
	m.ClientAddr = r.addr()
	m.SystemIndex = r.u16()
	m.SystemAddrs.decode(&r, 16)
	m.RequestTime = r.i64()
	m.AcceptTime = r.i64()
	if r.err != nil {
		return 0, decodeErr("CONNECTION_REQUEST_ACCEPTED", r.err)
	}
	return r.off, nil
}

// NewIncomingConnection (0x13) completes the connected handshake.
//
//	u8 id | server address | N system addresses | i64 ping time | i64 pong time
type NewIncomingConnection struct {
	ServerAddr  netip.AddrPort
	SystemAddrs SystemAddresses
	PingTime    int64
	PongTime    int64
}

// Append appends the encoding of m.
func (m *NewIncomingConnection) Append(b []byte) []byte {
	b = AppendAddr(append(b, IDNewIncomingConnection), m.ServerAddr)
	b = m.SystemAddrs.append(b)
	return appendI64(appendI64(b, m.PingTime), m.PongTime)
}

// Decode decodes the message, reading as many system addresses (up to 20)
// as come before the two trailing timestamps.
func (m *NewIncomingConnection) Decode(b []byte) (int, error) {
	if err := checkID(b, IDNewIncomingConnection); err != nil {
		return 0, decodeErr("NEW_INCOMING_CONNECTION", err)
	}
	r := reader{b: b, off: 1}
	m.ServerAddr = r.addr()
	m.SystemAddrs.decode(&r, 16)
	m.PingTime = r.i64()
	m.PongTime = r.i64()
	if r.err != nil {
		return 0, decodeErr("NEW_INCOMING_CONNECTION", r.err)
	}
	return r.off, nil
}
