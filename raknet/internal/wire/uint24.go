package wire

import "io"

// Uint24 is a RakNet 24-bit serial number (datagram, reliable, sequence and
// order indexes). It wraps at 2^24 and is compared with serial-number
// arithmetic: b is newer than a when the forward distance from a to b is
// non-zero and below 2^23, that is when a.Diff(b) > 0.
type Uint24 uint32

const (
	// MaxUint24 is the largest value a Uint24 holds.
	MaxUint24 Uint24 = 1<<24 - 1
	// uint24Half is the serial-number comparison horizon.
	uint24Half = 1 << 23
)

// Distance returns the forward distance from u to v modulo 2^24: how many
// increments take u to v.
func (u Uint24) Distance(v Uint24) uint32 { return (uint32(v) - uint32(u)) & uint32(MaxUint24) }

// Diff returns v-u as a signed distance in [-2^23, 2^23).
func (u Uint24) Diff(v Uint24) int32 {
	d := u.Distance(v)
	if d >= uint24Half {
		return int32(d) - 1<<24
	}
	return int32(d)
}

// AppendUint24 appends u as three little-endian bytes.
func AppendUint24(b []byte, u Uint24) []byte {
	return append(b, byte(u), byte(u>>8), byte(u>>16))
}

// ReadUint24 reads a little-endian u24 from the start of b.
func ReadUint24(b []byte) (Uint24, error) {
	if len(b) < 3 {
		return 0, io.ErrUnexpectedEOF
	}
	return Uint24(b[0]) | Uint24(b[1])<<8 | Uint24(b[2])<<16, nil
}
