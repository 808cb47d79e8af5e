package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// nackQueue decides what to NACK and when. A gap in the datagram numbers
// waits a reordering allowance before it is NACKed, so mild reordering
// does not cost a resend (and a window cut); many separate gaps leave at
// once. What a NACK named is named again renackDelay later, then twice
// and four times that: a lost NACK would otherwise leave the gap to the
// sender's timeout, which for some senders grows to seconds. A sender
// ignores a NACK of what it already resent, and a number that arrives is
// taken out of every repeat.
type nackQueue struct {
	set intervalSet
	at  time.Time // when set is due
	// re[i] holds what NACKs named, to be named again at reAt[i] and then
	// moved to re[i+1].
	re   [nackRepeats]intervalSet
	reAt [nackRepeats]time.Time
	sent uint64 // NACKs sent
}

func newNackQueue() nackQueue {
	q := nackQueue{set: intervalSet{max: maxAckIntervals}}
	for i := range q.re {
		q.re[i].max = maxAckIntervals
	}
	return q
}

// nackDelay is how long a gap may stay open before it is NACKed: long
// enough that mild reordering does not cause a resend, short against any
// RTO.
func nackDelay(rttvar time.Duration) time.Duration {
	return min(max(minNACKDelay, rttvar), maxNACKDelay)
}

// gap records that datagram abs arrived when high was the next number
// expected: the numbers between are missing. Gaps above maxNACKGap are
// left to the sender's timeout.
func (q *nackQueue) gap(high, abs uint64, now time.Time, delay time.Duration) {
	if gap := abs - high; gap == 0 || gap > maxNACKGap {
		return
	}
	if q.set.empty() {
		q.at = now.Add(delay)
	}
	q.set.addRange(high, abs-1)
	if len(q.set.iv) >= nackNowIntervals {
		q.at = now
	}
}

// arrived takes datagram abs, which filled a gap, out of every NACK.
func (q *nackQueue) arrived(abs uint64) {
	q.set.remove(abs)
	for i := range q.re {
		q.re[i].remove(abs)
	}
}

// pull adds datagram abs to the next NACK, which leaves at once.
func (q *nackQueue) pull(abs uint64, now time.Time) {
	q.set.add(abs)
	q.at = now
}

// pending reports whether any NACK waits to be sent or repeated.
func (q *nackQueue) pending() bool {
	n := len(q.set.iv)
	for i := range q.re {
		n += len(q.re[i].iv)
	}
	return n > 0
}

// appendDue appends the NACK due at now, if any, and reports whether it
// did.
func (q *nackQueue) appendDue(b []byte, now time.Time, limit int, scratch *wire.Ack) ([]byte, bool) {
	if !q.set.empty() && !now.Before(q.at) {
		return q.appendNack(b, &q.set, 0, now, limit, scratch), true
	}
	for i := range q.re {
		if !q.re[i].empty() && !now.Before(q.reAt[i]) {
			return q.appendNack(b, &q.re[i], i+1, now, limit, scratch), true
		}
	}
	return b, false
}

// appendNack appends a NACK of what set holds and hands what it named to
// repeat number next (none past nackRepeats).
func (q *nackQueue) appendNack(b []byte, set *intervalSet, next int, now time.Time, limit int, scratch *wire.Ack) []byte {
	q.sent++
	var written *intervalSet
	if next < nackRepeats {
		written = &q.re[next]
		if written.empty() {
			q.reAt[next] = now.Add(renackDelay << next)
		}
	}
	return set.appendAck(b, true, limit, scratch, written)
}

// deadline adds when the next NACK is due to d.
func (q *nackQueue) deadline(d *deadline) {
	if !q.set.empty() {
		d.add(q.at)
	}
	for i := range q.re {
		if !q.re[i].empty() {
			d.add(q.reAt[i])
		}
	}
}

// deadline is the earliest of the times added to it.
type deadline struct{ t time.Time }

// add takes t if it is earlier; the zero time means none.
func (d *deadline) add(t time.Time) {
	if !t.IsZero() && (d.t.IsZero() || t.Before(d.t)) {
		d.t = t
	}
}
