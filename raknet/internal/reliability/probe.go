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

// check queues a probe naming the probeSpan numbers from high on if the
// silence has lasted long enough while data waits.
func (p *prober) check(now time.Time, waiting bool, srtt time.Duration, high uint64) {
	if p.lastArrival.IsZero() || !waiting {
		return
	}
	wait := p.delay(srtt)
	if now.Before(p.lastArrival.Add(wait)) {
		return
	}
	p.set.addRange(high, high+probeSpan-1)
	p.wait = min(2*wait, maxProbeWait)
	p.lastArrival = now
}

// deadline adds when the next probe is due to d.
func (p *prober) deadline(d *deadline, waiting bool, srtt time.Duration) {
	if waiting {
		d.add(p.lastArrival.Add(p.delay(srtt)))
	}
}
