package proxy

import "time"

// delayed is one datagram waiting in a delayQueue.
type delayed struct {
	at  time.Time // release time
	seq uint64    // push order, so equal release times stay FIFO
	b   []byte
}

// before orders delayed datagrams by release time, then by push order.
func (d *delayed) before(o *delayed) bool {
	if d.at.Equal(o.at) {
		return d.seq < o.seq
	}
	return d.at.Before(o.at)
}

// delayQueue holds delayed datagrams in a binary min-heap ordered by
// release time. It is a pure data structure: no clock, no goroutine, no
// lock. The pipe that owns it supplies now and serialises access. The heap
// is hand-written rather than container/heap so that push and pop do not
// box each entry in an interface.
type delayQueue struct {
	h   []delayed
	seq uint64
}

// push schedules b for release at at.
func (q *delayQueue) push(at time.Time, b []byte) {
	q.h = append(q.h, delayed{at: at, seq: q.seq, b: b})
	q.seq++
	for i := len(q.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.h[i].before(&q.h[parent]) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

// popDue appends to dst, in release order, every datagram due at or before
// now and removes them from the queue.
func (q *delayQueue) popDue(now time.Time, dst [][]byte) [][]byte {
	for len(q.h) > 0 && !q.h[0].at.After(now) {
		dst = append(dst, q.pop())
	}
	return dst
}

// pop removes and returns the head. The queue must not be empty.
func (q *delayQueue) pop() []byte {
	b := q.h[0].b
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = delayed{} // drop the reference to the datagram
	q.h = q.h[:last]
	for i := 0; ; {
		small := i
		l, r := 2*i+1, 2*i+2
		if l < last && q.h[l].before(&q.h[small]) {
			small = l
		}
		if r < last && q.h[r].before(&q.h[small]) {
			small = r
		}
		if small == i {
			break
		}
		q.h[i], q.h[small] = q.h[small], q.h[i]
		i = small
	}
	return b
}

// next reports the earliest release time, and false if the queue is empty.
func (q *delayQueue) next() (time.Time, bool) {
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return q.h[0].at, true
}
