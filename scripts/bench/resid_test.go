package main

import (
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

func TestResidencePercentiles(t *testing.T) {
	var h residence
	for i := range 100 {
		h.add(time.Duration(i) * time.Microsecond) // 0..99 µs
	}
	h.add(time.Hour) // into the last bucket
	h.add(-time.Second)
	n, p := h.percentiles(50, 99, 100)
	if n != 102 {
		t.Fatalf("n = %d, want 102", n)
	}
	// Bucket i holds [i, i+1) µs and reports its upper bound. Sorted, the
	// 102 values are -1s (bucket 0), 0..99 µs, 1 h: rank 51 is 49 µs
	// (bucket 49), rank 101 is 99 µs, rank 102 the hour.
	want := []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, residBuckets * time.Microsecond}
	for i := range want {
		if p[i] != want[i] {
			t.Errorf("percentile %d: got %v, want %v", i, p[i], want[i])
		}
	}
	h.reset()
	if n, p := h.percentiles(99); n != 0 || p[0] != 0 {
		t.Errorf("after reset: n=%d p99=%v, want 0 0", n, p[0])
	}
}

func TestSchedDelta(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-3, math.Inf(1)}
	a := &metrics.Float64Histogram{Counts: []uint64{5, 5, 5}, Buckets: buckets}
	b := &metrics.Float64Histogram{Counts: []uint64{5, 103, 7}, Buckets: buckets}
	n, p := schedDelta(a, b, 50, 99, 100)
	if n != 100 {
		t.Fatalf("n = %d, want 100", n)
	}
	// 98 in [1 µs, 1 ms), 2 in [1 ms, inf): the last reports its lower bound.
	want := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	for i := range want {
		if p[i] != want[i] {
			t.Errorf("percentile %d: got %v, want %v", i, p[i], want[i])
		}
	}
	if n, _ := schedDelta(nil, b, 50); n != 0 {
		t.Errorf("nil histogram: n = %d, want 0", n)
	}
	if h := schedHist(); h == nil || len(h.Counts) == 0 {
		t.Errorf("the runtime has no %s histogram", schedMetric)
	}
}
