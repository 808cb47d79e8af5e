package main

import (
	"fmt"
	"math"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// residBuckets is how many 1 µs buckets a residence histogram has; longer
// times fall into the last.
const residBuckets = 1 << 17

// residence is a histogram of how long an echo server holds each message:
// from ReadPacket returning it to Write returning. Its methods are safe
// for concurrent use; reset races with add only by losing a few counts.
type residence struct {
	b [residBuckets]atomic.Uint64
}

func (h *residence) add(d time.Duration) {
	i := min(max(d.Microseconds(), 0), residBuckets-1)
	h.b[i].Add(1)
}

func (h *residence) reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
}

// percentiles returns how many times were recorded and the p-th
// percentiles of them, to the microsecond.
func (h *residence) percentiles(ps ...float64) (n uint64, out []time.Duration) {
	counts := make([]uint64, residBuckets)
	for i := range h.b {
		counts[i] = h.b[i].Load()
		n += counts[i]
	}
	out = make([]time.Duration, len(ps))
	for k, p := range ps {
		rank := uint64(math.Ceil(p / 100 * float64(n)))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= rank && c > 0 {
				out[k] = time.Duration(i+1) * time.Microsecond
				break
			}
		}
	}
	return n, out
}

// schedMetric is the runtime's histogram of how long goroutines stayed
// runnable before they ran: the process's wake-up delay.
const schedMetric = "/sched/latencies:seconds"

// schedHist reads the process's scheduling-latency histogram.
func schedHist() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// schedDelta returns the p-th percentiles (upper bucket bounds) of the
// scheduling latencies recorded between histograms a and b, and how many.
func schedDelta(a, b *metrics.Float64Histogram, ps ...float64) (n uint64, out []time.Duration) {
	out = make([]time.Duration, len(ps))
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return 0, out
	}
	d := make([]uint64, len(b.Counts))
	for i := range d {
		d[i] = b.Counts[i] - a.Counts[i]
		n += d[i]
	}
	for k, p := range ps {
		rank := uint64(math.Ceil(p / 100 * float64(n)))
		var seen uint64
		for i, c := range d {
			seen += c
			if seen >= rank && c > 0 {
				hi := b.Buckets[i+1]
				if math.IsInf(hi, 1) {
					hi = b.Buckets[i]
				}
				out[k] = time.Duration(hi * float64(time.Second))
				break
			}
		}
	}
	return n, out
}

// residLine answers the "resid" command: the residence times since the
// last "resid reset" and the server process's scheduling latencies
// since then, in microseconds.
func (s *server) residLine() string {
	n, r := s.resid.percentiles(50, 99, 99.9)
	s.schedMu.Lock()
	sn, sl := schedDelta(s.sched0, schedHist(), 50, 99, 99.9)
	s.schedMu.Unlock()
	return fmt.Sprintf("resid n=%d p50=%d p99=%d p999=%d sched_n=%d sched_p50=%d sched_p99=%d sched_p999=%d",
		n, r[0].Microseconds(), r[1].Microseconds(), r[2].Microseconds(),
		sn, sl[0].Microseconds(), sl[1].Microseconds(), sl[2].Microseconds())
}

// residReset starts a new residence and scheduling window.
func (s *server) residReset() {
	s.resid.reset()
	s.schedMu.Lock()
	s.sched0 = schedHist()
	s.schedMu.Unlock()
}
