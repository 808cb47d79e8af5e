package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// receivedTracker follows the datagram numbers received: it tells
// duplicates apart and keeps the set of numbers to acknowledge, which is
// due after the ACK delay or at once once ackNowThreshold datagrams wait.
// Every range is acknowledged twice, in one ACK and the next, so one lost
// ACK does not make the peer resend what arrived.
type receivedTracker struct {
	win   seqWindow
	high  uint64 // highest datagram number received + 1
	acks  intervalSet
	first time.Time // when the oldest pending ACK arrived
	last  time.Time // when the last ACK left
	count int       // datagrams acknowledged since the last ACK left
	delay time.Duration
	// lastData is when the last new data datagram was accepted; gap is
	// the smoothed time between such arrivals (0 before the second).
	lastData time.Time
	gap      time.Duration
	// repeat holds the ranges of the last ACK, sent again with the next;
	// fresh is scratch space.
	repeat, fresh []interval
	dups          uint64 // duplicate datagrams
	sent          uint64 // ACKs sent
}

func newReceivedTracker(start uint64, delay time.Duration) receivedTracker {
	return receivedTracker{
		win:   newSeqWindow(start, datagramWindowSpan),
		high:  start,
		acks:  intervalSet{max: maxAckIntervals},
		delay: delay,
	}
}

// number returns the absolute datagram number of n.
func (t *receivedTracker) number(n wire.Uint24) uint64 { return unwrap(t.high, n) }

// duplicate reports whether datagram abs was received before or is too
// old to tell (then it is dropped unacknowledged: its reliable frames
// come again in a resend). A duplicate within the window is acknowledged
// again, as its first ACK may have been lost.
func (t *receivedTracker) duplicate(abs uint64, now time.Time) bool {
	if abs+datagramWindowSpan <= t.high {
		// Numbers the window slid past without seeing read as old too;
		// a sender keeps at most MaxInFlight datagrams in flight, far
		// fewer than the window, so it gave up on those long ago and an
		// ACK of them is ignored.
		t.dups++
		return true
	}
	if t.win.seen(abs) {
		t.add(abs, now)
		t.dups++
		return true
	}
	return false
}

// advance takes datagram abs, not a duplicate, into the window and
// returns the previous high mark. Any jump ahead is taken: datagram
// numbers only feed the ACK and NACK sets and the duplicate window,
// which slides. (A jump of 2^23 or more reads as old.) Refusing jumps
// would wedge a connection whose peer lost a long run of datagrams.
func (t *receivedTracker) advance(abs uint64) (high uint64) {
	t.win.slide(abs)
	high = t.high
	t.high = max(t.high, abs+1)
	return high
}

// accept records datagram abs as received and to be acknowledged.
func (t *receivedTracker) accept(abs uint64, now time.Time) {
	_, _ = t.win.mark(abs) // advance made room
	if !t.lastData.IsZero() {
		t.gap += (max(now.Sub(t.lastData), 0) - t.gap) / 8
	}
	t.lastData = now
	t.add(abs, now)
}

func (t *receivedTracker) add(abs uint64, now time.Time) {
	if t.acks.empty() {
		t.first = now
	}
	t.acks.add(abs)
	t.count++
}

// due reports whether pending ACKs should leave now.
func (t *receivedTracker) due(now time.Time) bool {
	return !t.acks.empty() && (t.count >= ackNowThreshold || !now.Before(t.first.Add(t.delay)))
}

// ackNow makes pending ACKs due at once.
func (t *receivedTracker) ackNow() {
	if !t.acks.empty() {
		t.count = max(t.count, ackNowThreshold)
	}
}

// dense reports whether the peer's datagrams come faster than the ACK
// delay, so pending ACKs are worth holding back for the ones that follow:
// an ACK left within the delay before now, and the smoothed gap between
// the peer's data datagrams is shorter than the delay. The gap keeps two
// datagrams that happen to arrive close together in a sparse stream (a
// game client's ping just after its input) from holding the second one's
// ACK for a timer of its own, when it could leave with the reply.
func (t *receivedTracker) dense(now time.Time) bool {
	return !t.last.IsZero() && now.Sub(t.last) < t.delay && t.gap < t.delay
}

// deadline returns when pending ACKs are due, or the zero time.
func (t *receivedTracker) deadline(now time.Time) time.Time {
	switch {
	case t.acks.empty():
		return time.Time{}
	case t.count >= ackNowThreshold:
		return now
	}
	return t.first.Add(t.delay)
}

// appendAck appends an ACK of the pending numbers, within limit bytes.
func (t *receivedTracker) appendAck(b []byte, now time.Time, limit int, scratch *wire.Ack) []byte {
	// The peer ignores numbers it already saw acknowledged.
	t.fresh = append(t.fresh[:0], t.acks.iv...)
	for _, iv := range t.repeat {
		t.acks.addRange(iv.lo, iv.hi)
	}
	t.repeat = append(t.repeat[:0], t.fresh...)
	b = t.acks.appendAck(b, false, limit, scratch, nil)
	t.sent++
	t.last = now
	if t.acks.empty() {
		t.count = 0
	} else {
		t.first = now
	}
	return b
}
