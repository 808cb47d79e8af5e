package reliability

import "time"

// lossBeta is the multiplicative decrease on a loss event (as CUBIC:
// random loss on a game link should not halve the rate every time).
const lossBetaNum, lossBetaDen = 7, 10

// congestion is RakNet's sliding window in bytes: slow start doubles it per
// RTT until ssthresh, congestion avoidance adds one datagram per window,
// and a loss event multiplies it by lossBeta at most once per round trip
// (losses of datagrams sent before the last reduction do not count again).
// A timeout halves it.
type congestion struct {
	mtu        int
	cwnd       int
	ssthresh   int
	maxCwnd    int
	recovering bool
	recoveryAt time.Time // losses of datagrams sent before this are one event
	inFlight   int       // bytes of unacknowledged data datagrams
}

func newCongestion(mtu, maxDatagrams int) congestion {
	return congestion{
		mtu:      mtu,
		cwnd:     initialWindow * mtu,
		ssthresh: maxDatagrams * mtu,
		maxCwnd:  maxDatagrams * mtu,
	}
}

// canSend reports whether a datagram of size bytes fits the window.
func (c *congestion) canSend(size int) bool {
	return c.inFlight == 0 || c.inFlight+size <= c.cwnd
}

func (c *congestion) onSent(size int) { c.inFlight += size }

// onAcked grows the window for a datagram of size bytes that was acked.
func (c *congestion) onAcked(size int, sentAt time.Time) {
	c.inFlight -= size
	if c.recovering && !sentAt.After(c.recoveryAt) {
		return
	}
	c.recovering = false
	if c.cwnd < c.ssthresh {
		c.cwnd += size
	} else {
		c.cwnd += max(1, c.mtu*size/c.cwnd)
	}
	c.cwnd = min(c.cwnd, c.maxCwnd)
}

// onLost removes a lost datagram from flight and, unless it was sent before
// the last reduction, shrinks the window.
func (c *congestion) onLost(size int, sentAt, now time.Time) {
	c.inFlight -= size
	if c.recovering && !sentAt.After(c.recoveryAt) {
		return
	}
	c.cwnd = max(c.cwnd*lossBetaNum/lossBetaDen, minWindow*c.mtu)
	c.ssthresh = c.cwnd
	c.recovering = true
	c.recoveryAt = now
}

// onTimedOut removes a datagram lost to a timeout from flight; the window
// reacts once per timeout event, in onTimeout.
func (c *congestion) onTimedOut(size int) { c.inFlight -= size }

// onTimeout collapses the window after a retransmission timeout.
func (c *congestion) onTimeout(now time.Time) {
	c.ssthresh = max(c.cwnd/2, minWindow*c.mtu)
	c.cwnd = c.ssthresh
	c.recovering = true
	c.recoveryAt = now
}
