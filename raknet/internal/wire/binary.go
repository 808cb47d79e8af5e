package wire

import (
	"encoding/binary"
	"io"
)

var errUnexpectedEOF = io.ErrUnexpectedEOF

// reader is a bounds-checked cursor over a byte slice. The first failed
// read sets err and every later read returns zero values, so decoders read
// all fields and check err once.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = errUnexpectedEOF
		return false
	}
	return true
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) u8() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) bool() bool { return r.u8() != 0 }

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) i64() int64 {
	if !r.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return int64(v)
}

func (r *reader) u24() Uint24 {
	if !r.need(3) {
		return 0
	}
	v, _ := ReadUint24(r.b[r.off:])
	r.off += 3
	return v
}

func (r *reader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

func (r *reader) magic() {
	m := r.bytes(len(Magic))
	if r.err == nil && [16]byte(m) != Magic {
		r.err = ErrBadMagic
	}
}

func (r *reader) addr() (a addrPort) {
	if r.err != nil {
		return a
	}
	a, n, err := decodeAddr(r.b[r.off:])
	if err != nil {
		r.err = err
		return a
	}
	r.off += n
	return a
}

func appendU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendI64(b []byte, v int64) []byte  { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
