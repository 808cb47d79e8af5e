package reliability

import "time"

// prober covers a loss that leaves no gap to NACK: a lost datagram that
// nothing followed. While received data waits for something missing, a
// silence longer than the probe delay after the last arrival sends a NACK
// of the numbers the peer uses next; some senders otherwise resend such
// a datagram only on a slow timeout. A sender ignores a NACK of numbers it
// has not used. The delay is twice the smoothed RTT (at least
// minProbeDelay) and doubles with each probe, up to maxProbeWait, until a
// datagram arrives.
type prober struct {
	lastArrival time.Time
	wait        time.Duration // the backed-off delay, 0 before the first probe
	set         intervalSet   // a probe's NACK, sent once
}

func newProber() prober { return prober{set: intervalSet{max: 1}} }

// arrived notes a datagram from the peer: the silence is over.
func (p *prober) arrived(now time.Time) { p.lastArrival, p.wait = now, 0 }

// delay is how long after the last arrival the next probe is due.
func (p *prober) delay(srtt time.Duration) time.Duration {
	if p.wait == 0 {
		return max(minProbeDelay, 2*srtt)
	}
	return p.wait
}

// due reports whether the silence has lasted long enough for a probe,
// should data wait.
func (p *prober) due(now time.Time, srtt time.Duration) bool {
	return !p.lastArrival.IsZero() && !now.Before(p.lastArrival.Add(p.delay(srtt)))
}

// fire queues a probe naming the probeSpan numbers from high on and backs
// the delay off.
func (p *prober) fire(now time.Time, srtt time.Duration, high uint64) {
	p.set.addRange(high, high+probeSpan-1)
	p.wait = min(2*p.delay(srtt), maxProbeWait)
	p.lastArrival = now
}

// check fires a probe if it is due and data waits.
func (p *prober) check(now time.Time, waiting bool, srtt time.Duration, high uint64) {
	if waiting && p.due(now, srtt) {
		p.fire(now, srtt, high)
	}
}

// deadline adds when the next probe is due to d, for data that waits.
func (p *prober) deadline(d *deadline, srtt time.Duration) {
	d.add(p.lastArrival.Add(p.delay(srtt)))
}
