package session

import (
	"errors"
	"io"
)

// errVarintOverflow reports a varuint32 or varint32 that does not fit in 32
// bits: more than five bytes, or a fifth byte above 0x0f.
var errVarintOverflow = errors.New("varint overflows 32 bits")

// appendVaruint32 appends v as LEB128: seven bits per byte, low bits first,
// the top bit set on every byte but the last.
func appendVaruint32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// varuint32Len returns how many bytes appendVaruint32 writes for v.
func varuint32Len(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// readVaruint32 decodes a LEB128 varuint32 from the front of b and returns it
// with the number of bytes it took. A truncated value returns
// io.ErrUnexpectedEOF; one that needs more than 32 bits returns
// errVarintOverflow.
func readVaruint32(b []byte) (v uint32, n int, err error) {
	for i := range 5 {
		if i == len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, errVarintOverflow
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errVarintOverflow
}

// appendVarint32 appends v zigzag-encoded ((v << 1) ^ (v >> 31)) as a
// varuint32, the layout Bedrock calls varint32.
func appendVarint32(b []byte, v int32) []byte {
	return appendVaruint32(b, uint32(v<<1)^uint32(v>>31))
}

// readVarint32 decodes a zigzag varint32 from the front of b.
func readVarint32(b []byte) (int32, int, error) {
	u, n, err := readVaruint32(b)
	return int32(u>>1) ^ -int32(u&1), n, err
}

// appendString appends s as a varuint32 byte length followed by its bytes.
func appendString(b []byte, s string) []byte {
	b = appendVaruint32(b, uint32(len(s)))
	return append(b, s...)
}

// readString decodes a varuint32-length-prefixed string from the front of b.
// Lengths beyond the remaining input return io.ErrUnexpectedEOF before any
// allocation.
func readString(b []byte) (string, int, error) {
	l, n, err := readVaruint32(b)
	if err != nil {
		return "", 0, err
	}
	if uint64(l) > uint64(len(b)-n) {
		return "", 0, io.ErrUnexpectedEOF
	}
	end := n + int(l)
	return string(b[n:end]), end, nil
}
