package main

import "testing"

// The capacity search finds the largest count held, to within a tenth,
// never reports a count that failed, and stops after its steps.
func TestSearchCapacity(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, steps, limit int
		want, within         int // best in [want-within, want]
	}{
		{lo: 200, hi: 3200, steps: 10, limit: 1000, want: 1000, within: 100},
		{lo: 200, hi: 3200, steps: 10, limit: 250, want: 250, within: 25},
		{lo: 200, hi: 3200, steps: 10, limit: 5000, want: 3200, within: 0},
		{lo: 200, hi: 3200, steps: 10, limit: 100, want: 0, within: 0},
		{lo: 200, hi: 3200, steps: 10, limit: 200, want: 200, within: 0},
		{lo: 200, hi: 3200, steps: 3, limit: 3000, want: 800, within: 0},
	} {
		calls := 0
		best, probes := searchCapacity(tc.lo, tc.hi, tc.steps, func(n int) bool {
			calls++
			if n < tc.lo || n > tc.hi {
				t.Errorf("limit %d: probed %d, outside [%d, %d]", tc.limit, n, tc.lo, tc.hi)
			}
			return n <= tc.limit
		})
		if best > tc.want || best < tc.want-tc.within {
			t.Errorf("limit %d, %d steps: got %d, want %d to %d (probes %v)", tc.limit, tc.steps, best, tc.want-tc.within, tc.want, probes)
		}
		if calls > tc.steps || len(probes) != calls {
			t.Errorf("limit %d: %d calls, %d probes, at most %d steps", tc.limit, calls, len(probes), tc.steps)
		}
		for _, p := range probes {
			if p.ok != (p.n <= tc.limit) {
				t.Errorf("limit %d: probe %+v recorded wrong", tc.limit, p)
			}
			if !p.ok && p.n <= best {
				t.Errorf("limit %d: best %d is not below the failed step %d", tc.limit, best, p.n)
			}
		}
	}
}
