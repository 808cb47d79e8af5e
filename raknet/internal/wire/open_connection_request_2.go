package wire

import (
	"fmt"
	"net/netip"
)

// OpenConnectionRequest2 fixes the MTU and introduces the client GUID.
// When the server's reply 1 announced security, the client echoes its
// cookie before the address.
//
//	u8 id | magic | [u32 cookie | bool client security] | server address |
//	u16 MTU | u64 client GUID
type OpenConnectionRequest2 struct {
	HasCookie      bool
	Cookie         uint32
	ClientSecurity bool
	ServerAddr     netip.AddrPort
	MTU            uint16
	ClientGUID     int64
}

// Append appends the encoding of m.
func (m *OpenConnectionRequest2) Append(b []byte) []byte {
	b = append(append(b, IDOpenConnectionRequest2), Magic[:]...)
	if m.HasCookie {
		b = appendBool(appendU32(b, m.Cookie), m.ClientSecurity)
	}
	b = AppendAddr(b, m.ServerAddr)
	b = appendU16(b, m.MTU)
	return appendI64(b, m.ClientGUID)
}

// Decode decodes a request. Whether a cookie is present is decided by the
// length: the form without one must match the datagram exactly.
func (m *OpenConnectionRequest2) Decode(b []byte) (int, error) {
	if err := checkID(b, IDOpenConnectionRequest2); err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REQUEST_2", err)
	}
	r := reader{b: b, off: 1}
	r.magic()
	if r.err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REQUEST_2", r.err)
	}
	rest := r.remaining()
	m.HasCookie = !(rest == addrSizeV4+10 && b[r.off] == 4) && !(rest == addrSizeV6+10 && b[r.off] == 6)
	m.Cookie, m.ClientSecurity = 0, false
	if m.HasCookie {
		m.Cookie = r.u32()
		m.ClientSecurity = r.bool()
	}
	m.ServerAddr = r.addr()
	m.MTU = r.u16()
	m.ClientGUID = r.i64()
	if r.err == nil && m.MTU == 0 {
		r.err = fmt.Errorf("%w: MTU 0", ErrInvalid)
	}
	if r.err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REQUEST_2", r.err)
	}
	return r.off, nil
}

// OpenConnectionReply2 confirms the MTU; the connected handshake follows.
//
//	u8 id | magic | u64 server GUID | client address | u16 MTU | bool encryption
type OpenConnectionReply2 struct {
	ServerGUID int64
	ClientAddr netip.AddrPort
	MTU        uint16
	Encryption bool
}

// Append appends the encoding of m.
func (m *OpenConnectionReply2) Append(b []byte) []byte {
	b = append(append(b, IDOpenConnectionReply2), Magic[:]...)
	b = AppendAddr(appendI64(b, m.ServerGUID), m.ClientAddr)
	return appendBool(appendU16(b, m.MTU), m.Encryption)
}

// Decode decodes a reply.
func (m *OpenConnectionReply2) Decode(b []byte) (int, error) {
	if err := checkID(b, IDOpenConnectionReply2); err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REPLY_2", err)
	}
	r := reader{b: b, off: 1}
	r.magic()
	m.ServerGUID = r.i64()
	m.ClientAddr = r.addr()
	m.MTU = r.u16()
	m.Encryption = r.bool()
	if r.err == nil && m.MTU == 0 {
		r.err = fmt.Errorf("%w: MTU 0", ErrInvalid)
	}
	if r.err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REPLY_2", r.err)
	}
	return r.off, nil
}
