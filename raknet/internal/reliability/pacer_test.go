package reliability

import (
	"testing"
	"time"
)

func TestPacerBurstThenSpacing(t *testing.T) {
	const size = 1000
	const rate = 125_000.0 // bytes per second: one datagram per 8 ms
	p := newPacer(size, t0)
	for i := range pacingBurst {
		p.refill(t0, rate)
		if !p.canSend(size) {
			t.Fatalf("burst datagram %d: got canSend false, want true", i)
		}
		p.onSent(size)
	}
	p.refill(t0, rate)
	if p.canSend(size) {
		t.Fatalf("datagram after the burst: got canSend true, want false")
	}
	if got, want := p.next(size, rate), t0.Add(8*time.Millisecond); !got.Equal(want) {
		t.Errorf("next after the burst: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	// Half way the budget is half a datagram and next stays put.
	p.refill(t0.Add(4*time.Millisecond), rate)
	if p.canSend(size) {
		t.Errorf("after 4 ms: got canSend true, want false")
	}
	if got, want := p.budget, 500; got != want {
		t.Errorf("budget after 4 ms: got %v, want %v", got, want)
	}
	if got, want := p.next(size, rate), t0.Add(8*time.Millisecond); !got.Equal(want) {
		t.Errorf("next after 4 ms: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	p.refill(t0.Add(8*time.Millisecond), rate)
	if !p.canSend(size) {
		t.Fatalf("after 8 ms: got canSend false, want true")
	}
	if got, want := p.next(size, rate), t0.Add(8*time.Millisecond); !got.Equal(want) {
		t.Errorf("next with budget: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	p.onSent(size)
	// Datagrams are then spaced one per 8 ms.
	for i := 2; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * 8 * time.Millisecond)
		if got := p.next(size, rate); !got.Equal(at) {
			t.Fatalf("spacing %d: got next %v, want %v", i, got.Sub(t0), at.Sub(t0))
		}
		p.refill(at, rate)
		if !p.canSend(size) {
			t.Fatalf("spacing %d: got canSend false, want true", i)
		}
		p.onSent(size)
	}
	// A long idle period refills only one burst.
	p.refill(t0.Add(time.Hour), rate)
	if got, want := p.budget, pacingBurst*size; got != want {
		t.Errorf("budget after idling: got %v, want %v", got, want)
	}
}

func TestPacerNext(t *testing.T) {
	cases := []struct {
		name   string
		budget int
		rate   float64
		want   time.Duration
	}{
		{"enough budget", 1000, 1000, 0},
		{"deficit", 0, 100_000, 10 * time.Millisecond},
		{"tiny deficit waits the minimum", 999, 1_000_000, minPacingDelay},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pacer{budget: tc.budget, last: t0, maxBurst: 16000}
			if got := p.next(1000, tc.rate); !got.Equal(t0.Add(tc.want)) {
				t.Errorf("next: got %v, want %v", got.Sub(t0), tc.want)
			}
		})
	}
}

func TestPacingRate(t *testing.T) {
	cases := []struct {
		cwnd int
		srtt time.Duration
		want float64
	}{
		{32000, 100 * time.Millisecond, 400_000},
		{8000, 10 * time.Millisecond, 1_000_000},
		{8000, 0, 10_000_000}, // no sample yet: 1 ms
	}
	for _, tc := range cases {
		if got := pacingRate(tc.cwnd, tc.srtt); got != tc.want {
			t.Errorf("pacingRate(%d, %v): got %v, want %v", tc.cwnd, tc.srtt, got, tc.want)
		}
	}
}
