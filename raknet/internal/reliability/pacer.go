package reliability

import "time"

// pacer spreads a window's worth of datagrams over a round trip with a
// token bucket: up to burst bytes leave at once, then datagrams are spaced
// at 1.25·cwnd/SRTT.
type pacer struct {
	budget   int // bytes that may leave now
	last     time.Time
	maxBurst int
}

func newPacer(mtu int, now time.Time) pacer {
	return pacer{budget: pacingBurst * mtu, last: now, maxBurst: pacingBurst * mtu}
}

// pacingRate returns the pacing rate in bytes per second.
func pacingRate(cwnd int, srtt time.Duration) float64 {
	if srtt <= 0 {
		srtt = time.Millisecond
	}
	return 1.25 * float64(cwnd) / srtt.Seconds()
}

// refill adds the budget earned since the last call.
func (p *pacer) refill(now time.Time, rate float64) {
	if now.After(p.last) {
		p.budget = min(p.maxBurst, p.budget+int(rate*now.Sub(p.last).Seconds()))
		p.last = now
	}
}

// canSend reports whether size bytes may leave now.
func (p *pacer) canSend(size int) bool { return p.budget >= size }

func (p *pacer) onSent(size int) { p.budget -= size }

// next returns when size bytes will be available.
func (p *pacer) next(size int, rate float64) time.Time {
	if p.budget >= size {
		return p.last
	}
	d := time.Duration(float64(size-p.budget) / rate * float64(time.Second))
	return p.last.Add(max(d, minPacingDelay))
}
