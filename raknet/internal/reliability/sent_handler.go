package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// sentHandler follows the data datagrams in flight: it takes RTT samples
// from ACKs, hands the frames of acknowledged datagrams back to the send
// queue and those of lost ones to its resend queue, and feeds both events
// to the congestion window. A datagram is lost when a NACK names it, when
// a later one is acknowledged and it has been out clearly longer than a
// round trip (fast resend), or when its RTO runs out.
type sentHandler struct {
	hist  sentHistory
	rtt   rttStats
	cc    congestion
	nacks nackBudget
	lost  uint64 // datagrams NACKed, skipped or timed out
	// waiting counts the datagrams in flight that carry frames waiting
	// for their acknowledgement (reliable ones, receipts). Only those
	// need the RTO: a datagram of unreliable frames alone, such as a
	// pong, has nothing to resend, so the connection does not wake for
	// it; it leaves the window on a later pass if it is never
	// acknowledged.
	waiting int
	// badAcks counts ACKs and NACKs refused whole by sentHistory.check,
	// nacksIgnored the datagrams NACKed beyond the NACK budget.
	badAcks, nacksIgnored uint64
}

// nackBudget is a token bucket of datagrams that NACKs may make us
// resend: maxNACKedPerSecond, up to nackBurst at once. It starts full.
type nackBudget struct {
	tokens int
	last   time.Time // tokens are credited up to here
}

// nackToken is the time one token takes to earn: exactly 1/512 s.
const nackToken = time.Second / maxNACKedPerSecond

func newNackBudget(now time.Time) nackBudget { return nackBudget{tokens: nackBurst, last: now} }

// refill credits the tokens earned by now, keeping the fraction of one
// still being earned.
func (b *nackBudget) refill(now time.Time) {
	if b.tokens >= nackBurst {
		b.last = now
		return
	}
	if d := now.Sub(b.last); d >= nackToken {
		n := d / nackToken
		b.tokens += int(min(n, nackBurst))
		b.last = b.last.Add(n * nackToken)
		if b.tokens >= nackBurst {
			b.tokens, b.last = nackBurst, now
		}
	}
}

// take spends one token and reports whether there was one.
func (b *nackBudget) take() bool {
	if b.tokens == 0 {
		return false
	}
	b.tokens--
	return true
}

// canSend reports whether one more datagram of size bytes fits the
// in-flight span and the congestion window.
func (h *sentHandler) canSend(size int) bool {
	return h.hist.span() < MaxInFlight && h.cc.canSend(size)
}

// sent records datagram s of size bytes, just packed, as in flight.
func (h *sentHandler) sent(s *sentDatagram, size int, now time.Time) {
	s.inFlight, s.size, s.sentAt = true, size, now
	if len(s.frames) > 0 {
		h.waiting++
	}
	h.cc.onSent(size)
}

// onAck processes an ACK or NACK. One whose records are not sorted,
// disjoint and within the numbers sent is refused whole (see
// sentHistory.check): the cost of any ACK is then bounded by its records
// and the history's size.
func (h *sentHandler) onAck(now time.Time, a *wire.Ack, q *sendQueue) error {
	hist := &h.hist
	if err := hist.check(a); err != nil {
		h.badAcks++
		return err
	}
	if a.NACK {
		h.nacks.refill(now)
	}
	ref := hist.next - 1
	var largest uint64
	var newest, oldest time.Duration
	sampled := false
	floor := hist.lateFloor()
	for _, r := range a.Ranges {
		lo := unwrap(ref, r.Start)
		hi := min(lo+uint64(r.Len())-1, hist.next-1)
		if !a.NACK {
			// Datagrams that left the window as lost may be acknowledged
			// after all.
			for n := max(lo, floor); n < hist.oldest && n <= hi; n++ {
				if s := hist.slot(n); s.num == n && s.late {
					h.ackLate(s, q)
				}
			}
		}
		lo = max(lo, hist.oldest)
		for n := lo; n <= hi && lo <= hi; n++ {
			s := hist.slot(n)
			if !s.inFlight {
				if s.late && !a.NACK {
					h.ackLate(s, q)
				}
				continue
			}
			if a.NACK {
				if !h.nacks.take() {
					// Over the budget: the datagram stays in flight
					// and its RTO resends it if it was lost.
					h.nacksIgnored++
					continue
				}
				h.lose(n, s, now, true, q)
				s.frames = s.frames[:0]
				continue
			}
			if !s.retrans {
				sample := now.Sub(s.sentAt)
				if !sampled || sample < newest {
					newest = sample
				}
				oldest = max(oldest, sample)
				sampled = true
			}
			h.ack(s, q)
			largest = max(largest, n)
		}
	}
	if sampled {
		// One sample per ACK, from the newest datagram it names, as QUIC
		// does: a peer that acknowledges a whole tick's worth at once
		// must not outweigh one that acknowledges each datagram. The
		// oldest one bounds how long the peer may hold an ACK back.
		h.rtt.update(newest)
		h.rtt.notePeak(oldest)
	}
	if !a.NACK && largest != 0 {
		// Fast resend: an older datagram still unacknowledged when a later
		// one was acked is lost once it has been out clearly longer than a
		// round trip. Time, not a count of later datagrams, is the test:
		// a burst reordered by a few milliseconds of jitter overtakes many
		// datagrams at once and is not lost.
		srtt := h.rtt.smoothed()
		threshold := now.Add(-max(srtt*9/8, srtt+2*h.rtt.rttvar, minReorderWindow))
		for n := hist.oldest; n < largest; n++ {
			s := hist.slot(n)
			if !s.inFlight {
				continue
			}
			if !s.sentAt.Before(threshold) {
				break // numbered in send order: the rest are younger
			}
			h.lose(n, s, now, true, q)
			s.late = true
		}
	}
	hist.advance()
	q.noteIdle(now)
	return nil
}

// onTimers declares lost every datagram whose RTO ran out by now, backs
// the RTO off and collapses the window once for them all.
func (h *sentHandler) onTimers(now time.Time, q *sendQueue) {
	hist := &h.hist
	if hist.oldest == hist.next {
		return
	}
	rto := h.rtt.rto()
	timedOut := false
	for n := hist.oldest; n < hist.next; n++ {
		s := hist.slot(n)
		if !s.inFlight {
			continue
		}
		if now.Before(s.sentAt.Add(rto)) {
			break
		}
		if len(s.frames) == 0 {
			// Nothing waits for it: its bytes leave the window, without
			// a congestion event or backoff. A peer that acknowledges on
			// a tick (go-raknet every 100 ms) would otherwise collapse
			// the window with every pong it has not acknowledged yet.
			s.inFlight, s.late = false, true
			h.cc.onTimedOut(s.size)
			continue
		}
		h.lose(n, s, now, false, q)
		s.late = true
		timedOut = true
	}
	if timedOut {
		h.rtt.onTimeout()
		h.cc.onTimeout(now)
	}
	hist.advance()
}

// rtoDeadline returns when the oldest datagram in flight times out, or
// the zero time while none in flight carries frames waiting for an ACK.
func (h *sentHandler) rtoDeadline() time.Time {
	if h.waiting == 0 {
		return time.Time{}
	}
	if s := h.hist.firstInFlight(); s != nil {
		return s.sentAt.Add(h.rtt.rto())
	}
	return time.Time{}
}

// lose handles datagram n as lost: its reliable frames that are still
// carried by it go to the resend queue, unreliable receipts report loss.
//
// Its frames stay listed for a late ACK (see sentDatagram.late) unless the
// caller clears them: a NACK says the datagram did not arrive.
func (h *sentHandler) lose(n uint64, s *sentDatagram, now time.Time, congestionEvent bool, q *sendQueue) {
	h.lost++
	h.unwait(s)
	for _, ref := range s.frames {
		if !ref.live() || ref.f.dgram != n {
			continue
		}
		q.lost(ref)
	}
	s.inFlight = false
	if congestionEvent {
		h.cc.onLost(s.size, s.sentAt, now)
	} else {
		h.cc.onTimedOut(s.size)
	}
}

// ackLate handles an ACK of datagram s that was deemed lost: its frames
// are acknowledged wherever they are now (queued for resend, or in flight
// again, whose copy is then ignored), and the RTO backoff ends. The bytes
// already left the congestion window when it was deemed lost.
func (h *sentHandler) ackLate(s *sentDatagram, q *sendQueue) {
	h.rtt.backoff = 0
	for _, ref := range s.frames {
		if ref.live() {
			q.acked(ref.f)
		}
	}
	s.frames = s.frames[:0]
	s.late = false
}

// ack handles datagram s as delivered.
func (h *sentHandler) ack(s *sentDatagram, q *sendQueue) {
	// Datagram numbers are never reused, so an ACK of any datagram proves
	// the path works and ends the backoff; RTT samples come only from
	// datagrams without resent frames (Karn's rule), taken per ACK in
	// onAck.
	h.rtt.backoff = 0
	h.unwait(s)
	for _, ref := range s.frames {
		if ref.live() {
			q.acked(ref.f)
		}
	}
	s.frames = s.frames[:0]
	s.inFlight = false
	h.cc.onAcked(s.size, s.sentAt)
}

// unwait takes datagram s, in flight, out of the count of those waited
// for.
func (h *sentHandler) unwait(s *sentDatagram) {
	if len(s.frames) > 0 {
		h.waiting--
	}
}
