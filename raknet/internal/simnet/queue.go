package simnet

import "time"

// Queue holds values until their time: PopDue returns them in time order,
// and values due at the same time in the order they were pushed, so that
// datagrams arriving together are delivered as they left. It is a typed
// binary heap rather than container/heap so that a simulated link does not
// allocate per datagram and benchmarks measure the layers above it. The
// zero value is an empty Queue. It is not safe for concurrent use.
type Queue[T any] struct {
	items []entry[T]
	seq   uint64
}

type entry[T any] struct {
	at  time.Time
	seq uint64
	v   T
}

// Len returns the number of values queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// Next returns the time of the earliest value, the zero time if none.
func (q *Queue[T]) Next() time.Time {
	if len(q.items) == 0 {
		return time.Time{}
	}
	return q.items[0].at
}

// Push queues v until at.
func (q *Queue[T]) Push(at time.Time, v T) {
	q.seq++
	q.items = append(q.items, entry[T]{at: at, seq: q.seq, v: v})
	for i := len(q.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// PopDue removes and returns the earliest value if it is due by now.
func (q *Queue[T]) PopDue(now time.Time) (T, bool) {
	var zero T
	if len(q.items) == 0 || q.items[0].at.After(now) {
		return zero, false
	}
	h := q.items
	v := h[0].v
	last := len(h) - 1
	h[0] = h[last]
	h[last] = entry[T]{}
	q.items = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(l, m) {
			m = l
		}
		if r < last && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return v, true
}

func (q *Queue[T]) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if a.at.Equal(b.at) {
		return a.seq < b.seq
	}
	return a.at.Before(b.at)
}
