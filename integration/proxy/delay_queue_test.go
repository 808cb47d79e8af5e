package proxy

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestDelayQueueReleaseOrder(t *testing.T) {
	var q delayQueue
	if _, ok := q.next(); ok {
		t.Fatalf("empty queue: got a next release time, want none")
	}
	// Pushed in one order, released by time; equal times stay FIFO.
	q.push(t0.Add(30*time.Millisecond), []byte("c"))
	q.push(t0.Add(10*time.Millisecond), []byte("a"))
	q.push(t0.Add(20*time.Millisecond), []byte("b1"))
	q.push(t0.Add(20*time.Millisecond), []byte("b2"))
	q.push(t0.Add(20*time.Millisecond), []byte("b3"))

	steps := []struct {
		now      time.Duration
		want     []string
		wantNext time.Duration // 0: empty afterwards
	}{
		{5 * time.Millisecond, nil, 10 * time.Millisecond},
		{10 * time.Millisecond, []string{"a"}, 20 * time.Millisecond},
		{25 * time.Millisecond, []string{"b1", "b2", "b3"}, 30 * time.Millisecond},
		{time.Second, []string{"c"}, 0},
	}
	for _, s := range steps {
		var got []string
		for _, b := range q.popDue(t0.Add(s.now), nil) {
			got = append(got, string(b))
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("popDue(t0+%v): got %q, want %q", s.now, got, s.want)
		}
		next, ok := q.next()
		if s.wantNext == 0 {
			if ok {
				t.Errorf("after t0+%v: got next %v, want empty", s.now, next)
			}
			continue
		}
		if want := t0.Add(s.wantNext); !ok || !next.Equal(want) {
			t.Errorf("after t0+%v: got next %v (%v), want %v",
				s.now, next, ok, want)
		}
	}
}

func TestDelayQueueAppendsToDst(t *testing.T) {
	var q delayQueue
	q.push(t0, []byte("x"))
	dst := [][]byte{[]byte("keep")}
	dst = q.popDue(t0, dst)
	if len(dst) != 2 || string(dst[0]) != "keep" || string(dst[1]) != "x" {
		t.Errorf("got %q, want [keep x]", dst)
	}
}

func BenchmarkDelayQueue(b *testing.B) {
	var q delayQueue
	pkt := make([]byte, 1400)
	dst := make([][]byte, 0, 64)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		// 64 datagrams with scattered delays, then release them all.
		for i := range 64 {
			q.push(now.Add(time.Duration(i*37%64)*time.Millisecond), pkt)
		}
		now = now.Add(time.Second)
		dst = q.popDue(now, dst[:0])
	}
}

// TestDelayQueueMatchesSort pushes pseudo-random release times, many of
// them equal, and checks the heap releases them in (time, push) order.
func TestDelayQueueMatchesSort(t *testing.T) {
	type entry struct {
		at  time.Duration
		seq int
	}
	var q delayQueue
	var want []entry
	x := uint32(1)
	for i := range 500 {
		x = x*1664525 + 1013904223 // LCG; any fixed sequence will do
		at := time.Duration(x>>24%50) * time.Millisecond
		q.push(t0.Add(at), []byte{byte(i), byte(i >> 8)})
		want = append(want, entry{at, i})
	}
	slices.SortStableFunc(want, func(a, b entry) int {
		return int(a.at - b.at)
	})
	got := q.popDue(t0.Add(time.Hour), nil)
	if len(got) != len(want) {
		t.Fatalf("got %d datagrams, want %d", len(got), len(want))
	}
	for i, b := range got {
		if seq := int(b[0]) | int(b[1])<<8; seq != want[i].seq {
			t.Fatalf("position %d: got datagram %d, want %d",
				i, seq, want[i].seq)
		}
	}
}
