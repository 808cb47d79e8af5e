package reliability

import (
	"testing"
	"time"
)

func TestRTTStats(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		samples  []time.Duration
		timeouts int
		srtt     time.Duration
		rttvar   time.Duration
		minRTT   time.Duration
		rto      time.Duration
	}{
		{name: "no sample", rto: InitialRTO},
		{name: "no sample backoff", timeouts: 2, rto: 4 * InitialRTO},
		// First sample: SRTT = R, RTTVAR = R/2, RTO = R + 4·R/2.
		{name: "first sample", samples: []time.Duration{100 * ms}, srtt: 100 * ms, rttvar: 50 * ms, minRTT: 100 * ms, rto: 300 * ms},
		// RTTVAR = (3·50 + |100-200|)/4, SRTT = (7·100 + 200)/8.
		{name: "smoothing", samples: []time.Duration{100 * ms, 200 * ms}, srtt: 112500 * time.Microsecond, rttvar: 62500 * time.Microsecond, minRTT: 100 * ms, rto: 362500 * time.Microsecond},
		// 60 ms: RTTVAR 47.5, SRTT 95; 80 ms: RTTVAR 39.375, SRTT 93.125.
		{name: "min tracks smallest", samples: []time.Duration{100 * ms, 60 * ms, 80 * ms}, srtt: 93125 * time.Microsecond, rttvar: 39375 * time.Microsecond, minRTT: 60 * ms, rto: 250625 * time.Microsecond},
		// 1 ms + max(G, 4·0.5 ms) = 6 ms, raised to the floor.
		{name: "floor", samples: []time.Duration{ms}, srtt: ms, rttvar: ms / 2, minRTT: ms, rto: MinRTO},
		{name: "zero sample", samples: []time.Duration{0}, srtt: time.Microsecond, rttvar: 500 * time.Nanosecond, minRTT: time.Microsecond, rto: MinRTO},
		// Constant samples shrink RTTVAR until the SRTT/2 term rules: a
		// peer acking on a fixed tick still gets room for one late tick.
		// (rttvar -1: not checked, it is a few nanoseconds by then.)
		{name: "half SRTT", samples: repeat(50*ms, 60), srtt: 50 * ms, rttvar: -1, minRTT: 50 * ms, rto: 75 * ms},
		// With a small SRTT the granularity term rules: 8 + max(5, 4) = 13,
		// raised to the floor; 36 ms gives 36 + 18 = 54.
		{name: "granularity", samples: repeat(8*ms, 60), srtt: 8 * ms, rttvar: -1, minRTT: 8 * ms, rto: MinRTO},
		{name: "half SRTT above the floor", samples: repeat(36*ms, 60), srtt: 36 * ms, rttvar: -1, minRTT: 36 * ms, rto: 54 * ms},
		{name: "ceiling", samples: []time.Duration{2 * time.Second}, srtt: 2 * time.Second, rttvar: time.Second, minRTT: 2 * time.Second, rto: MaxRTO},
		{name: "backoff once", samples: []time.Duration{100 * ms}, timeouts: 1, srtt: 100 * ms, rttvar: 50 * ms, minRTT: 100 * ms, rto: 600 * ms},
		{name: "backoff thrice", samples: []time.Duration{100 * ms}, timeouts: 3, srtt: 100 * ms, rttvar: 50 * ms, minRTT: 100 * ms, rto: 2400 * ms},
		{name: "backoff capped", samples: []time.Duration{100 * ms}, timeouts: 10, srtt: 100 * ms, rttvar: 50 * ms, minRTT: 100 * ms, rto: MaxRTO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r rttStats
			for _, s := range tc.samples {
				r.update(s)
			}
			for range tc.timeouts {
				r.onTimeout()
			}
			if r.srtt != tc.srtt {
				t.Errorf("srtt: got %v, want %v", r.srtt, tc.srtt)
			}
			if tc.rttvar >= 0 && r.rttvar != tc.rttvar {
				t.Errorf("rttvar: got %v, want %v", r.rttvar, tc.rttvar)
			}
			if r.minRTT != tc.minRTT {
				t.Errorf("minRTT: got %v, want %v", r.minRTT, tc.minRTT)
			}
			if got := r.rto(); got != tc.rto {
				t.Errorf("rto: got %v, want %v", got, tc.rto)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

// TestRTTBackoff follows the RTO through timeouts, the ceiling, and the
// reset a new sample brings.
func TestRTTBackoff(t *testing.T) {
	var r rttStats
	r.update(100 * time.Millisecond)
	want := []time.Duration{300, 600, 1200, 2400, 3000, 3000, 3000}
	for i, w := range want {
		if got := r.rto(); got != w*time.Millisecond {
			t.Fatalf("after %d timeouts: got %v, want %v", i, got, w*time.Millisecond)
		}
		r.onTimeout()
	}
	// The doubling count stops at the ceiling, so one sample undoes it.
	if r.backoff != 4 {
		t.Errorf("backoff: got %v, want %v", r.backoff, 4)
	}
	r.update(100 * time.Millisecond)
	if r.backoff != 0 {
		t.Errorf("backoff after sample: got %v, want %v", r.backoff, 0)
	}
	if got, want := r.rto(), 100*time.Millisecond+4*r.rttvar; got != want {
		t.Errorf("rto after sample: got %v, want %v", got, want)
	}
}

func TestRTTSmoothed(t *testing.T) {
	var r rttStats
	if got, want := r.smoothed(), InitialRTO/3; got != want {
		t.Errorf("before a sample: got %v, want %v", got, want)
	}
	r.update(42 * time.Millisecond)
	if got, want := r.smoothed(), 42*time.Millisecond; got != want {
		t.Errorf("after a sample: got %v, want %v", got, want)
	}
}

// A peer that holds ACKs back for a tick: the newest datagram of each ACK
// gives small samples, the oldest shows the tick, and the RTO stays a
// quarter above it so no datagram times out while its ACK waits.
func TestRTOCoversTheAckTick(t *testing.T) {
	var r rttStats
	for range 50 {
		r.update(2 * time.Millisecond)
		r.notePeak(100 * time.Millisecond)
	}
	if got, want := r.rto(), 125*time.Millisecond; got != want {
		t.Errorf("rto with a 100ms tick: got %v, want %v", got, want)
	}
	// Once ACKs come promptly again the peak decays by 1/8 per ACK.
	for range 60 {
		r.update(2 * time.Millisecond)
		r.notePeak(2 * time.Millisecond)
	}
	if got := r.rto(); got != MinRTO {
		t.Errorf("rto after the tick is gone: got %v, want %v", got, MinRTO)
	}
}
