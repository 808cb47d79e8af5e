package wire

import "fmt"

// UnconnectedPong answers a ping with the server's pong data (for Bedrock,
// the semicolon MOTD).
//
//	u8 id | i64 echoed time | u64 server GUID | magic | u16 BE length | data
type UnconnectedPong struct {
	Time       int64
	ServerGUID int64
	Data       []byte
}

// MaxPongData is the most pong data a pong can carry (the u16 length).
const MaxPongData = 0xffff

// Append appends the encoding of m. Data longer than MaxPongData is a
// programmer error.
func (m *UnconnectedPong) Append(b []byte) []byte {
	if len(m.Data) > MaxPongData {
		panic(fmt.Sprintf("wire: pong data of %d bytes exceeds %d", len(m.Data), MaxPongData))
	}
	b = appendI64(append(b, IDUnconnectedPong), m.Time)
	b = appendI64(b, m.ServerGUID)
	b = append(b, Magic[:]...)
	b = appendU16(b, uint16(len(m.Data)))
	return append(b, m.Data...)
}

// Decode decodes a pong. Data aliases b. A pong whose length prefix does
// not match what follows is read leniently: a prefix larger than the rest,
// or no prefix at all, yields the rest of the datagram as the data.
func (m *UnconnectedPong) Decode(b []byte) (int, error) {
	r := reader{b: b}
	if err := checkID(b, IDUnconnectedPong); err != nil {
		return 0, decodeErr("UNCONNECTED_PONG", err)
	}
	r.off = 1
	m.Time = r.i64()
	m.ServerGUID = r.i64()
	r.magic()
	if r.err != nil {
		return 0, decodeErr("UNCONNECTED_PONG", r.err)
	}
	rest := r.remaining()
	if rest >= 2 {
		if n := int(b[r.off])<<8 | int(b[r.off+1]); n <= rest-2 {
			r.off += 2
			m.Data = r.bytes(n)
			return r.off, nil
		}
	}
	m.Data = r.bytes(rest)
	return r.off, nil
}
