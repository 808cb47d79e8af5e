package reliability

import (
	"errors"
	"testing"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func TestUnwrap(t *testing.T) {
	const top = 1 << 24
	cases := []struct {
		name string
		ref  uint64
		n    wire.Uint24
		want uint64
	}{
		{"same", absBase + 5, 5, absBase + 5},
		{"ahead", absBase + 5, 9, absBase + 9},
		{"behind", absBase + 5, 1, absBase + 1},
		{"behind zero wraps down", absBase, wire.MaxUint24, absBase - 1},
		{"behind small wraps down", absBase + 2, top - 3, absBase - 3},
		{"ahead of top wraps up", absBase + top - 1, 0, absBase + top},
		{"ahead of top by 3", absBase + top - 2, 1, absBase + top + 1},
		{"behind just past top", absBase + top + 1, wire.MaxUint24, absBase + top - 1},
		{"largest ahead", absBase + 10, 10 + 1<<23 - 1, absBase + 10 + 1<<23 - 1},
		{"half way reads as behind", absBase + 10, 10 + 1<<23, absBase + 10 - 1<<23},
		{"half way across the wrap", absBase + top - 1, 1<<23 - 1, absBase + top - 1 - 1<<23},
		{"second lap", absBase + 3*top + 4, 2, absBase + 3*top + 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := unwrap(tc.ref, tc.n)
			if got != tc.want {
				t.Errorf("unwrap(%d, %d): got %v, want %v", tc.ref-absBase, tc.n, int64(got-absBase), int64(tc.want-absBase))
			}
			if u24(got) != tc.n {
				t.Errorf("u24(unwrap): got %v, want %v", u24(got), tc.n)
			}
		})
	}
}

func TestMask(t *testing.T) {
	cases := []struct {
		off, cnt, want uint64
	}{
		{0, 0, 0},
		{0, 1, 1},
		{3, 2, 0b11000},
		{60, 4, 0xf << 60},
		{0, 64, ^uint64(0)},
	}
	for _, tc := range cases {
		if got := mask(tc.off, tc.cnt); got != tc.want {
			t.Errorf("mask(%d, %d): got %#x, want %#x", tc.off, tc.cnt, got, tc.want)
		}
	}
}

// winOp is one operation on a seqWindow in TestSeqWindow.
type winOp struct {
	op     string // "mark", "slide" or "skip"
	n      int64  // offset from the test's start
	fresh  bool   // mark: want new
	tooFar bool   // mark: want errTooFarAhead
}

func TestSeqWindow(t *testing.T) {
	mark := func(n int64) winOp { return winOp{op: "mark", n: n, fresh: true} }
	dup := func(n int64) winOp { return winOp{op: "mark", n: n} }
	far := func(n int64) winOp { return winOp{op: "mark", n: n, tooFar: true} }
	cases := []struct {
		name     string
		start    uint64 // offset from absBase
		maxSpan  int
		ops      []winOp
		wantBase uint64 // offset from start
		wantRing int
		seen     []uint64 // offsets that must read as seen
		unseen   []uint64 // offsets that must not
	}{
		{name: "in order", maxSpan: 256, ops: []winOp{mark(0), mark(1), mark(2)}, wantBase: 3, wantRing: 1, seen: []uint64{0, 2}, unseen: []uint64{3, 200}},
		{name: "duplicate", maxSpan: 256, ops: []winOp{mark(0), dup(0), mark(5), dup(5)}, wantBase: 1, wantRing: 1, seen: []uint64{5}, unseen: []uint64{1, 4, 6}},
		{name: "below base", start: 100, maxSpan: 256, ops: []winOp{dup(-1), dup(-100)}, wantBase: 0, wantRing: 1},
		{name: "gap then fill", maxSpan: 256, ops: []winOp{mark(1), mark(2), mark(0)}, wantBase: 3, wantRing: 1},
		// Start at 60 (in word 0) and run into word 1 and beyond.
		{name: "advance across words", start: 60, maxSpan: 256, ops: markRun(0, 140), wantBase: 140, wantRing: 1},
		{name: "advance across words out of order", start: 60, maxSpan: 256, ops: append(markRun(1, 100), mark(0)), wantBase: 100, wantRing: 4},
		{name: "grow to fit", maxSpan: 512, ops: []winOp{mark(200)}, wantBase: 0, wantRing: 4, seen: []uint64{200}, unseen: []uint64{0, 199, 201}},
		{name: "grow keeps marks", start: 10, maxSpan: 1024, ops: []winOp{mark(3), mark(40), mark(500)}, wantBase: 0, wantRing: 8, seen: []uint64{3, 40, 500}, unseen: []uint64{0, 4, 41}},
		{name: "too far", maxSpan: 256, ops: []winOp{far(256), far(1 << 20)}, wantBase: 0, wantRing: 1, unseen: []uint64{256}},
		{name: "last that fits", maxSpan: 256, ops: []winOp{mark(255)}, wantBase: 0, wantRing: 4, seen: []uint64{255}},
		// With base at 10, the last word ends at 255: 256+ is too far.
		{name: "span counts whole words", start: 10, maxSpan: 256, ops: []winOp{mark(245), far(246)}, wantBase: 0, wantRing: 4},
		// Two words: from base 1000 (word 15) up to 1087 (end of word 16).
		{name: "ring reuse after advance", maxSpan: 128, ops: append(markRun(0, 1000), mark(1050), dup(1050), mark(1087), far(1088)), wantBase: 1000, wantRing: 2, seen: []uint64{999, 1050, 1087}, unseen: []uint64{1000, 1049, 1051}},
		{name: "slide gives up the oldest", maxSpan: 256, ops: []winOp{mark(1), mark(70), {op: "slide", n: 1000}, mark(1000)}, wantBase: 1000 - 1000%64 - 192, wantRing: 4, seen: []uint64{0, 70, 1000}, unseen: []uint64{1000 - 1000%64 - 192, 999}},
		{name: "slide keeps marks in the window", maxSpan: 256, ops: []winOp{mark(200), mark(230), {op: "slide", n: 300}, mark(300)}, wantBase: 64, wantRing: 4, seen: []uint64{200, 230, 300}, unseen: []uint64{64, 231}},
		{name: "slide inside the window is a no-op", maxSpan: 256, ops: []winOp{mark(5), {op: "slide", n: 200}}, wantBase: 0, wantRing: 1, seen: []uint64{5}},
		{name: "skip", maxSpan: 256, ops: []winOp{mark(3), mark(4), mark(9), {op: "skip", n: 3}}, wantBase: 5, wantRing: 1, seen: []uint64{2, 9}, unseen: []uint64{5, 8}},
		// Counters near 2^24: absolute numbers simply continue past it.
		{name: "across the wrap", start: 1<<24 - 70, maxSpan: 256, ops: markRun(0, 200), wantBase: 200, wantRing: 1},
		{name: "across the wrap out of order", start: 1<<24 - 3, maxSpan: 256, ops: []winOp{mark(5), mark(3), mark(0), mark(1), mark(2), mark(4)}, wantBase: 6, wantRing: 2},
		// The start is 28 into its word; +500 is in word 8 after it, so the
		// two-word window keeps words 7 and 8: base = 7·64 - 28 = +420.
		{name: "slide across the wrap", start: 1<<24 - 100, maxSpan: 128, ops: []winOp{mark(0), {op: "slide", n: 500}, mark(500), mark(499)}, wantBase: 420, wantRing: 2, seen: []uint64{0, 419, 499, 500}, unseen: []uint64{420, 498}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := absBase + tc.start
			w := newSeqWindow(start, tc.maxSpan)
			for i, op := range tc.ops {
				switch op.op {
				case "slide":
					w.slide(start + uint64(op.n))
					continue
				case "skip":
					w.skipTo(start + uint64(op.n))
					continue
				}
				fresh, err := w.mark(uint64(int64(start) + op.n))
				if op.tooFar {
					if !errors.Is(err, errTooFarAhead) {
						t.Fatalf("op %d mark(+%d): got error %v, want %v", i, op.n, err, errTooFarAhead)
					}
					continue
				}
				if err != nil {
					t.Fatalf("op %d mark(+%d): got error %v, want nil", i, op.n, err)
				}
				if fresh != op.fresh {
					t.Fatalf("op %d mark(+%d): got fresh %v, want %v", i, op.n, fresh, op.fresh)
				}
			}
			if got := w.base - start; got != tc.wantBase {
				t.Errorf("base: got +%v, want +%v", int64(got), tc.wantBase)
			}
			if len(w.ring) != tc.wantRing {
				t.Errorf("ring words: got %v, want %v", len(w.ring), tc.wantRing)
			}
			for _, n := range tc.seen {
				if !w.seen(start + n) {
					t.Errorf("seen(+%d): got false, want true", n)
				}
			}
			for _, n := range tc.unseen {
				if w.seen(start + n) {
					t.Errorf("seen(+%d): got true, want false", n)
				}
			}
		})
	}
}

// markRun marks lo..hi-1 in order.
func markRun(lo, hi int64) []winOp {
	var ops []winOp
	for n := lo; n < hi; n++ {
		ops = append(ops, winOp{op: "mark", n: n, fresh: true})
	}
	return ops
}

// TestSeqWindowMatchesMap marks random numbers ahead of the base, sliding
// as the receive window does, and compares with a map of what is seen.
func TestSeqWindowMatchesMap(t *testing.T) {
	const span = 512
	start := uint64(absBase + 1<<24 - 1000) // crosses the wrap
	w := newSeqWindow(start, span)
	marked := map[uint64]bool{}
	x := uint64(99)
	high := start
	for range 50000 {
		x = x*6364136223846793005 + 1442695040888963407
		n := w.base + (x>>33)%(span+64)
		if (x>>20)%8 == 0 {
			n = high + (x>>40)%700 // jumps ahead, as datagrams do
		}
		w.slide(n)
		want := n >= w.base && !marked[n]
		fresh, err := w.mark(n)
		if err != nil {
			t.Fatalf("mark(%d) with base %d: got error %v, want nil", n, w.base, err)
		}
		if fresh != want {
			t.Fatalf("mark(%d): got fresh %v, want %v", n, fresh, want)
		}
		marked[n] = true
		high = max(high, n)
		if w.base < start || len(w.ring) > span/64 {
			t.Fatalf("base %d, ring %d words: out of bounds", w.base, len(w.ring))
		}
		for k := w.base; k < w.base+span && k <= high; k += 7 {
			if w.seen(k) != marked[k] {
				t.Fatalf("seen(%d): got %v, want %v (base %d)", k, w.seen(k), marked[k], w.base)
			}
		}
	}
	if w.base < absBase+1<<24 {
		t.Errorf("base did not pass 2^24: got %v", w.base-absBase)
	}
}

// TestSeqWindowCanHold checks that canHold predicts exactly whether mark
// succeeds, from aligned and unaligned bases.
func TestSeqWindowCanHold(t *testing.T) {
	for _, start := range []uint64{0, 1, 10, 63, 64, 1<<24 - 5} {
		for n := uint64(0); n < 400; n++ {
			w := newSeqWindow(absBase+start, 256)
			want := w.canHold(absBase + start + n)
			_, err := w.mark(absBase + start + n)
			if got := err == nil; got != want {
				t.Fatalf("base +%d, mark(+%d): got ok %v, canHold %v", start, n, got, want)
			}
		}
	}
}
