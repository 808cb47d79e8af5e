package guard

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// step is one request to a bucket: cost tokens at t0+at, and the answer.
type step struct {
	at   time.Duration
	cost int
	want bool
}

func TestBucketAllow(t *testing.T) {
	tests := []struct {
		name         string
		rate, burst  int64
		steps        []step
		tokensAt     time.Duration
		wantTokensAt int64
	}{
		{
			name: "burst then refill", rate: 10, burst: 5,
			steps: []step{
				{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
				{0, 1, false},
				{99 * time.Millisecond, 1, false},
				{100 * time.Millisecond, 1, true},
				{100 * time.Millisecond, 1, false},
				{300 * time.Millisecond, 2, true},
				{300 * time.Millisecond, 1, false},
			},
			tokensAt: 800 * time.Millisecond, wantTokensAt: 5,
		},
		{
			name: "idle time banks no more than a burst", rate: 10, burst: 5,
			steps: []step{
				{time.Hour, 5, true},
				{time.Hour, 1, false},
			},
			tokensAt: time.Hour + 250*time.Millisecond, wantTokensAt: 2,
		},
		{
			name: "cost above burst never allowed", rate: 10, burst: 5,
			steps: []step{
				{0, 6, false},
				{0, 5, true},
			},
			tokensAt: 0, wantTokensAt: 0,
		},
		{
			name: "zero and negative cost take nothing", rate: 10, burst: 1,
			steps: []step{
				{0, 0, true}, {0, -3, true},
				{0, 1, true},
				{0, 0, true},
				{0, 1, false},
			},
			tokensAt: 50 * time.Millisecond, wantTokensAt: 0,
		},
		{
			// 10^9/3 ns per token rounds down; the whole burst must
			// still fit and the refill point must fall on the right
			// nanosecond.
			name: "rate that does not divide a second", rate: 3, burst: 3,
			steps: []step{
				{0, 1, true}, {0, 1, true}, {0, 1, true},
				{0, 1, false},
				{333_333_332, 1, false},
				{333_333_333, 1, true},
			},
			tokensAt: 2 * time.Second, wantTokensAt: 3,
		},
		{
			name: "byte costs", rate: 1000, burst: 1500,
			steps: []step{
				{0, 1400, true},
				{0, 101, false},
				{0, 100, true},
				{time.Millisecond, 2, false},
				{time.Millisecond, 1, true},
				{time.Second, 1000, false},
				{time.Second, 999, true},
			},
			tokensAt: time.Second + 1500*time.Millisecond, wantTokensAt: 1500,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBucket(tc.rate, tc.burst)
			for i, s := range tc.steps {
				if got := b.Allow(t0.Add(s.at), s.cost); got != s.want {
					t.Fatalf("step %d: Allow(t0+%v, %d): got %v, want %v", i, s.at, s.cost, got, s.want)
				}
			}
			if got := b.Tokens(t0.Add(tc.tokensAt)); got != tc.wantTokensAt {
				t.Errorf("Tokens(t0+%v): got %d, want %d", tc.tokensAt, got, tc.wantTokensAt)
			}
		})
	}
}

// TestBucketClockStepsBack checks that a wall clock stepped back an hour
// leaves the bucket empty, not refusing for the hour.
func TestBucketClockStepsBack(t *testing.T) {
	b := NewBucket(10, 5)
	if !b.Allow(t0, 5) {
		t.Fatal("Allow(t0, 5): got false, want true")
	}
	back := t0.Add(-time.Hour)
	if b.Allow(back, 1) {
		t.Errorf("Allow an hour back: got true, want false")
	}
	if got := b.Tokens(back); got != 0 {
		t.Errorf("Tokens an hour back: got %d, want 0", got)
	}
	if !b.Allow(back.Add(100*time.Millisecond), 1) {
		t.Errorf("Allow one refill after the step: got false, want true")
	}
}

func TestBucketZeroValue(t *testing.T) {
	var b Bucket
	if b.Allow(t0, 1) {
		t.Errorf("zero Bucket Allow(1): got true, want false")
	}
	if !b.Allow(t0, 0) {
		t.Errorf("zero Bucket Allow(0): got false, want true")
	}
	if got := b.Tokens(t0); got != 0 {
		t.Errorf("zero Bucket Tokens: got %d, want 0", got)
	}
	var l ByteLimiter
	if l.Allow(t0, 1) {
		t.Errorf("zero ByteLimiter Allow(1): got true, want false")
	}
}

func TestNewBucketPanics(t *testing.T) {
	tests := []struct {
		rate, burst int64
		panics      bool
	}{
		{0, 1, true},
		{-1, 1, true},
		{MaxRate + 1, 1, true},
		{10, 0, true},
		{1, 30 * 24 * 3600, true},
		{1, 30*24*3600 - 1, false},
		{MaxRate, MaxRate, false},
		{1, 1, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("rate=%d,burst=%d", tc.rate, tc.burst), func(t *testing.T) {
			defer func() {
				if got := recover() != nil; got != tc.panics {
					t.Errorf("panicked: got %v, want %v", got, tc.panics)
				}
			}()
			NewBucket(tc.rate, tc.burst)
		})
	}
}

// TestBucketConcurrent checks that goroutines racing on one bucket at one
// instant share exactly its burst, and exactly the refill later.
func TestBucketConcurrent(t *testing.T) {
	b := NewBucket(100, 1000)
	var allowed atomic.Int64
	race := func(at time.Time) int64 {
		allowed.Store(0)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 500 {
					if b.Allow(at, 1) {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return allowed.Load()
	}
	if got := race(t0); got != 1000 {
		t.Errorf("allowed at t0: got %d, want 1000", got)
	}
	if got := race(t0.Add(2 * time.Second)); got != 200 {
		t.Errorf("allowed 2 s later: got %d, want 200", got)
	}
}

func TestByteLimiter(t *testing.T) {
	l := NewByteLimiter(10_000, 1500)
	steps := []step{
		{0, 1500, true},
		{0, 1, false},
		{100 * time.Millisecond, 1000, true},
		{100 * time.Millisecond, 1, false},
		{time.Second, 1501, false},
		{time.Second, 1500, true},
	}
	for i, s := range steps {
		if got := l.Allow(t0.Add(s.at), s.cost); got != s.want {
			t.Errorf("step %d: Allow(t0+%v, %d): got %v, want %v", i, s.at, s.cost, got, s.want)
		}
	}
}

func TestBucketAllocs(t *testing.T) {
	b := NewBucket(1_000_000, 1_000_000)
	l := NewByteLimiter(1_000_000, 1_000_000)
	now := t0
	n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Microsecond)
		b.Allow(now, 1)
		l.Allow(now, 100)
	})
	if n != 0 {
		t.Errorf("allocations per Allow: got %v, want 0", n)
	}
}

// BenchmarkBucketAllow measures an allowed request (hit) and a refused one
// (miss, the flood case).
func BenchmarkBucketAllow(b *testing.B) {
	b.Run("hit", func(b *testing.B) {
		k := NewBucket(MaxRate, MaxRate)
		now := t0
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(time.Nanosecond)
			if !k.Allow(now, 1) {
				b.Fatal("Allow: got false, want true")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		k := NewBucket(1, 1)
		k.Allow(t0, 1)
		b.ReportAllocs()
		for b.Loop() {
			if k.Allow(t0, 1) {
				b.Fatal("Allow: got true, want false")
			}
		}
	})
}
