package reliability

import (
	"fmt"
	"slices"
	"testing"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// setOp is one operation on an intervalSet: add [lo, hi], or remove lo.
type setOp struct {
	remove bool
	lo, hi uint64
}

func add(lo, hi uint64) setOp { return setOp{lo: lo, hi: hi} }
func del(n uint64) setOp      { return setOp{remove: true, lo: n} }

func TestIntervalSet(t *testing.T) {
	cases := []struct {
		name string
		max  int
		ops  []setOp
		want []interval
	}{
		{name: "empty"},
		{name: "single", ops: []setOp{add(5, 5)}, want: []interval{{5, 5}}},
		{name: "in order merges", ops: []setOp{add(1, 1), add(2, 2), add(3, 3)}, want: []interval{{1, 3}}},
		{name: "gap keeps apart", ops: []setOp{add(1, 1), add(3, 3)}, want: []interval{{1, 1}, {3, 3}}},
		{name: "fill gap joins both", ops: []setOp{add(1, 1), add(3, 3), add(2, 2)}, want: []interval{{1, 3}}},
		{name: "duplicate", ops: []setOp{add(1, 3), add(2, 2), add(3, 3)}, want: []interval{{1, 3}}},
		{name: "extend last", ops: []setOp{add(1, 3), add(2, 6)}, want: []interval{{1, 6}}},
		{name: "insert before", ops: []setOp{add(10, 12), add(1, 2)}, want: []interval{{1, 2}, {10, 12}}},
		{name: "insert middle", ops: []setOp{add(1, 2), add(10, 12), add(5, 6)}, want: []interval{{1, 2}, {5, 6}, {10, 12}}},
		{name: "adjacent below", ops: []setOp{add(5, 6), add(10, 12), add(4, 4)}, want: []interval{{4, 6}, {10, 12}}},
		{name: "range swallows several", ops: []setOp{add(1, 1), add(3, 3), add(5, 5), add(7, 7), add(9, 9), add(2, 7)}, want: []interval{{1, 7}, {9, 9}}},
		{name: "range covers all", ops: []setOp{add(3, 3), add(5, 5), add(7, 7), add(0, 100)}, want: []interval{{0, 100}}},
		{name: "remove absent", ops: []setOp{add(1, 3), del(5), del(0)}, want: []interval{{1, 3}}},
		{name: "remove single", ops: []setOp{add(1, 1), add(3, 3), del(1)}, want: []interval{{3, 3}}},
		{name: "remove low end", ops: []setOp{add(1, 3), del(1)}, want: []interval{{2, 3}}},
		{name: "remove high end", ops: []setOp{add(1, 3), del(3)}, want: []interval{{1, 2}}},
		{name: "remove splits", ops: []setOp{add(1, 5), add(8, 9), del(3)}, want: []interval{{1, 2}, {4, 5}, {8, 9}}},
		{name: "remove then add back", ops: []setOp{add(1, 5), del(3), add(3, 3)}, want: []interval{{1, 5}}},
		{name: "trim drops oldest", max: 2, ops: []setOp{add(1, 1), add(3, 3), add(5, 5)}, want: []interval{{3, 3}, {5, 5}}},
		{name: "trim on insert", max: 2, ops: []setOp{add(3, 3), add(5, 5), add(1, 1)}, want: []interval{{3, 3}, {5, 5}}},
		{name: "trim on split", max: 2, ops: []setOp{add(1, 1), add(3, 7), del(5)}, want: []interval{{3, 4}, {6, 7}}},
		{name: "merge below cap", max: 2, ops: []setOp{add(1, 1), add(3, 3), add(2, 2), add(5, 5)}, want: []interval{{1, 3}, {5, 5}}},
		{name: "near 2^24", ops: []setOp{add(absBase+1<<24-2, absBase+1<<24-1), add(absBase+1<<24, absBase+1<<24)}, want: []interval{{absBase + 1<<24 - 2, absBase + 1<<24}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := intervalSet{max: tc.max}
			for _, op := range tc.ops {
				if op.remove {
					s.remove(op.lo)
				} else {
					s.addRange(op.lo, op.hi)
				}
			}
			if !slices.Equal(s.iv, tc.want) {
				t.Errorf("intervals: got %v, want %v", s.iv, tc.want)
			}
			if got, want := s.empty(), len(tc.want) == 0; got != want {
				t.Errorf("empty: got %v, want %v", got, want)
			}
		})
	}
}

// TestIntervalSetMatchesMap checks random adds and removes against a map.
func TestIntervalSetMatchesMap(t *testing.T) {
	s := intervalSet{}
	ref := map[uint64]bool{}
	x := uint64(12345)
	for i := range 20000 {
		x = x*6364136223846793005 + 1442695040888963407
		n := (x >> 33) % 300
		if i%3 == 2 {
			s.remove(n)
			delete(ref, n)
		} else {
			hi := n + (x>>20)%4
			s.addRange(n, hi)
			for k := n; k <= hi; k++ {
				ref[k] = true
			}
		}
	}
	var got []uint64
	for k, v := range s.iv {
		if v.lo > v.hi || (k > 0 && s.iv[k-1].hi+1 >= v.lo) {
			t.Fatalf("interval %d of %v is empty, unsorted or touches its neighbour", k, s.iv)
		}
		for n := v.lo; n <= v.hi; n++ {
			got = append(got, n)
		}
	}
	var want []uint64
	for n := range uint64(310) {
		if ref[n] {
			want = append(want, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("members: got %v, want %v", got, want)
	}
}

func TestIntervalSetAppendAck(t *testing.T) {
	cases := []struct {
		name   string
		nack   bool
		iv     []interval
		limit  int
		want   string // hex of the datagram
		remain []interval
	}{
		{name: "ack single", iv: []interval{{absBase + 7, absBase + 7}}, limit: 1400, want: "c0 0001 01 070000"},
		{name: "nack range", nack: true, iv: []interval{{absBase + 7, absBase + 9}}, limit: 1400, want: "a0 0001 00 070000 090000"},
		{name: "across the wrap", iv: []interval{{absBase + 1<<24 - 1, absBase + 1<<24 + 1}}, limit: 1400, want: "c0 0002 01 ffffff 00 000000 010000"},
		// 3 header bytes + 4 + 7 = 14: the third interval does not fit.
		{name: "limit leaves the rest", iv: []interval{{absBase + 1, absBase + 1}, {absBase + 3, absBase + 4}, {absBase + 9, absBase + 9}}, limit: 14, want: "c0 0002 01 010000 00 030000 040000", remain: []interval{{absBase + 9, absBase + 9}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := intervalSet{iv: slices.Clone(tc.iv)}
			var scratch wire.Ack
			b := s.appendAck([]byte{0xee}, tc.nack, tc.limit, &scratch, nil)
			if b[0] != 0xee {
				t.Fatalf("appendAck clobbered the buffer")
			}
			if got := fmt.Sprintf("% x", b[1:]); got != spaced(tc.want) {
				t.Errorf("datagram: got %v, want %v", got, spaced(tc.want))
			}
			if !slices.Equal(s.iv, tc.remain) {
				t.Errorf("left in the set: got %v, want %v", s.iv, tc.remain)
			}
		})
	}
}

// spaced formats hex written in groups ("c0 0001") as "% x" does.
func spaced(h string) string {
	var out []byte
	for i := 0; i < len(h); i++ {
		if h[i] == ' ' {
			continue
		}
		if len(out) > 0 && len(out)%3 == 2 {
			out = append(out, ' ')
		}
		out = append(out, h[i])
	}
	return string(out)
}
