package simnet

import (
	"slices"
	"testing"
	"time"
)

func TestQueue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var q Queue[string]
	if !q.Next().IsZero() || q.Len() != 0 {
		t.Fatalf("empty: got Next %v, Len %d, want zero, 0", q.Next(), q.Len())
	}
	for _, p := range []struct {
		at time.Duration
		v  string
	}{{3, "c1"}, {1, "a1"}, {3, "c2"}, {2, "b1"}, {1, "a2"}, {3, "c3"}, {0, "z"}} {
		q.Push(t0.Add(p.at), p.v)
	}
	if got := q.Next(); !got.Equal(t0) {
		t.Fatalf("Next: got %v, want %v", got, t0)
	}
	for _, step := range []struct {
		now  time.Duration
		want []string
	}{
		{-1, nil},
		{0, []string{"z"}},
		{2, []string{"a1", "a2", "b1"}},
		{2, nil},
		{10, []string{"c1", "c2", "c3"}},
	} {
		var got []string
		for v, ok := q.PopDue(t0.Add(step.now)); ok; v, ok = q.PopDue(t0.Add(step.now)) {
			got = append(got, v)
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("PopDue up to %v: got %v, want %v", step.now, got, step.want)
		}
	}
	if q.Len() != 0 {
		t.Errorf("Len after draining: got %d, want 0", q.Len())
	}
}

func BenchmarkQueue(b *testing.B) {
	b.ReportAllocs()
	var q Queue[int]
	t0 := time.Now()
	for i := range 64 {
		q.Push(t0.Add(time.Duration(i%7)), i)
	}
	i := 0
	for b.Loop() {
		q.Push(t0.Add(time.Duration(i%7)), i)
		q.PopDue(t0.Add(time.Hour))
		i++
	}
}
