package reliability

import (
	"errors"
	"math/bits"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// errTooFarAhead is returned for a number beyond a window's span.
var errTooFarAhead = errors.New("index too far ahead of the window")

// absBase offsets every 64-bit counter so that unwrapping a number that
// lies before a small counter never goes below zero. It is a multiple of
// 2^24, so the low 24 bits of a counter are its wire value.
const absBase = 1 << 32

// u24 returns the wire value of an absolute counter.
func u24(abs uint64) wire.Uint24 { return wire.Uint24(abs & uint64(wire.MaxUint24)) }

// unwrap turns a u24 wire number into a 64-bit counter, taking the one
// nearest ref (within 2^23 either way).
func unwrap(ref uint64, n wire.Uint24) uint64 {
	return uint64(int64(ref) + int64(wire.Uint24(ref).Diff(n)))
}

// seqWindow tracks which numbers of a sequence have been seen. Numbers
// below base were all seen (or given up on); numbers in [base, base+span)
// are tracked in a bitmap that grows on demand up to maxWords words, so an
// idle connection holds one word.
type seqWindow struct {
	base     uint64   // lowest number not yet seen
	ring     []uint64 // ring of words; word w holds numbers [64w, 64w+64)
	maxWords int
}

func newSeqWindow(start uint64, maxSpan int) seqWindow {
	return seqWindow{base: start, ring: make([]uint64, 1), maxWords: max(1, maxSpan/64)}
}

// word returns the ring slot of absolute number n.
func (w *seqWindow) slot(n uint64) (word *uint64, bit uint64) {
	return &w.ring[(n/64)&uint64(len(w.ring)-1)], 1 << (n % 64)
}

// fits reports whether n lies inside the current ring.
func (w *seqWindow) fits(n uint64) bool {
	return n/64-w.base/64 < uint64(len(w.ring))
}

// grow doubles the ring until n fits, up to maxWords; it reports whether n
// fits afterwards.
func (w *seqWindow) grow(n uint64) bool {
	need := n/64 - w.base/64 + 1
	if need > uint64(w.maxWords) {
		return false
	}
	size := len(w.ring)
	for uint64(size) < need {
		size *= 2
	}
	ring := make([]uint64, size)
	for word := w.base / 64; word < w.base/64+uint64(len(w.ring)); word++ {
		ring[word&uint64(size-1)] = w.ring[word&uint64(len(w.ring)-1)]
	}
	w.ring = ring
	return true
}

// mark records n as seen. It reports whether n was new; a number more than
// the window's maximum span ahead of base returns errTooFarAhead.
func (w *seqWindow) mark(n uint64) (bool, error) {
	if n < w.base {
		return false, nil
	}
	if !w.fits(n) && !w.grow(n) {
		return false, errTooFarAhead
	}
	word, bit := w.slot(n)
	if *word&bit != 0 {
		return false, nil
	}
	*word |= bit
	if n == w.base {
		w.advance()
	}
	return true, nil
}

// seen reports whether n has been marked.
func (w *seqWindow) seen(n uint64) bool {
	if n < w.base {
		return true
	}
	if !w.fits(n) {
		return false
	}
	word, bit := w.slot(n)
	return *word&bit != 0
}

// advance moves base past every consecutive seen number, clearing the bits
// it passes so the ring can be reused.
func (w *seqWindow) advance() {
	for {
		word, _ := w.slot(w.base)
		off := w.base % 64
		ones := uint64(bits.TrailingZeros64(^(*word >> off)))
		if ones > 64-off {
			ones = 64 - off
		}
		if ones == 0 {
			return
		}
		*word &^= mask(off, ones)
		w.base += ones
		if w.base%64 != 0 {
			return
		}
	}
}

// skipTo gives up on every number below n: base moves to n (if ahead), and
// the bits for numbers that fall out of the window are cleared.
func (w *seqWindow) skipTo(n uint64) {
	for w.base < n {
		word, _ := w.slot(w.base)
		off := w.base % 64
		cnt := min(64-off, n-w.base)
		*word &^= mask(off, cnt)
		w.base += cnt
	}
	w.advance()
}

// slide moves the window forward, giving up on its oldest numbers, until
// n fits in it.
func (w *seqWindow) slide(n uint64) {
	if n >= w.base && n/64-w.base/64 >= uint64(w.maxWords) {
		w.skipTo((n/64 - uint64(w.maxWords) + 1) * 64)
	}
}

// mask returns cnt set bits starting at off.
func mask(off, cnt uint64) uint64 {
	if cnt >= 64 {
		return ^uint64(0)
	}
	return ((1 << cnt) - 1) << off
}

// canHold reports whether mark(n) can record n: n is below base, or in
// one of the maxWords words from base's word on. From a base that is not
// word-aligned this reaches fewer than maxWords·64 numbers ahead.
func (w *seqWindow) canHold(n uint64) bool {
	return n < w.base || n/64-w.base/64 < uint64(w.maxWords)
}
