package wire

import "io"

// Uint24 is a RakNet 24-bit serial number (datagram, reliable, sequence and
// order indexes). It wraps at 2^24 and is compared with serial-number
// arithmetic: b is newer than a when the forward distance from a to b is
// non-zero and below 2^23.
type Uint24 uint32

const (
	// MaxUint24 is the largest value a Uint24 holds.
	MaxUint24 Uint24 = 1<<24 - 1
	// uint24Half is the serial-number comparison horizon.
	uint24Half = 1 << 23
)

// Add returns u+n modulo 2^24.
func (u Uint24) Add(n uint32) Uint24 { return Uint24((uint32(u) + n) & uint32(MaxUint24)) }

// Inc returns u+1 modulo 2^24.
func (u Uint24) Inc() Uint24 { return u.Add(1) }

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

// Before reports whether u comes strictly before v in serial-number order.
func (u Uint24) Before(v Uint24) bool {
	d := u.Distance(v)
	return d != 0 && d < uint24Half
}

// After reports whether u comes strictly after v in serial-number order.
func (u Uint24) After(v Uint24) bool { return v.Before(u) }

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
