package wire

import "fmt"

// OpenConnectionRequest1 starts MTU discovery. The client pads it with
// zeroes so the whole UDP payload is as large as the MTU it probes, minus
// the IP and UDP headers (28 bytes for IPv4, 48 for IPv6).
//
//	u8 id | magic | u8 RakNet protocol | zero padding
type OpenConnectionRequest1 struct {
	Protocol byte
	// Size is the UDP payload size: Append pads to it, Decode sets it to
	// the length of the datagram.
	Size int
}

// OpenConnectionRequest1MinSize is the size of the message without padding.
const OpenConnectionRequest1MinSize = 1 + 16 + 1

// Append appends m padded to m.Size bytes.
func (m *OpenConnectionRequest1) Append(b []byte) []byte {
	b = append(append(b, IDOpenConnectionRequest1), Magic[:]...)
	b = append(b, m.Protocol)
	if pad := m.Size - OpenConnectionRequest1MinSize; pad > 0 {
		b = append(b, make([]byte, pad)...)
	}
	return b
}

// Decode decodes a request; the padding is consumed, not checked.
func (m *OpenConnectionRequest1) Decode(b []byte) (int, error) {
	if err := checkID(b, IDOpenConnectionRequest1); err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REQUEST_1", err)
	}
	r := reader{b: b, off: 1}
	r.magic()
	m.Protocol = r.u8()
	if r.err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REQUEST_1", r.err)
	}
	m.Size = len(b)
	return len(b), nil
}

// OpenConnectionReply1 answers with the MTU the server grants.
//
//	u8 id | magic | u64 server GUID | bool security | [u32 cookie] | u16 MTU
type OpenConnectionReply1 struct {
	ServerGUID int64
	Security   bool
	Cookie     uint32
	MTU        uint16
}

// Append appends the encoding of m.
func (m *OpenConnectionReply1) Append(b []byte) []byte {
	b = append(append(b, IDOpenConnectionReply1), Magic[:]...)
	b = appendBool(appendI64(b, m.ServerGUID), m.Security)
	if m.Security {
		b = appendU32(b, m.Cookie)
	}
	return appendU16(b, m.MTU)
}

// Decode decodes a reply.
func (m *OpenConnectionReply1) Decode(b []byte) (int, error) {
	if err := checkID(b, IDOpenConnectionReply1); err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REPLY_1", err)
	}
	r := reader{b: b, off: 1}
	r.magic()
	m.ServerGUID = r.i64()
	m.Security = r.bool()
	m.Cookie = 0
	if m.Security {
		m.Cookie = r.u32()
	}
	m.MTU = r.u16()
	if r.err == nil && m.MTU == 0 {
		r.err = fmt.Errorf("%w: MTU 0", ErrInvalid)
	}
	if r.err != nil {
		return 0, decodeErr("OPEN_CONNECTION_REPLY_1", r.err)
	}
	return r.off, nil
}
