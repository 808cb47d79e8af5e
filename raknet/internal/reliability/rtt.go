package reliability

import "time"

// RTO bounds. RakNet datagram numbers are never reused, so every ACK
// identifies one transmission; samples are still only taken from datagrams
// that carried no resent frames, and the backed-off RTO is kept until such
// a sample arrives (Karn's rule).
const (
	InitialRTO = 300 * time.Millisecond
	MinRTO     = 40 * time.Millisecond
	MaxRTO     = 3 * time.Second
	// rtoGranularity is the smallest variance term the RTO adds.
	rtoGranularity = 5 * time.Millisecond
)

// rttStats estimates the round-trip time as in RFC 6298: a smoothed RTT and
// a mean deviation, giving RTO = SRTT + max(G, 4·RTTVAR, SRTT/2) with a floor, a
// ceiling and exponential backoff.
type rttStats struct {
	srtt, rttvar, latest, minRTT time.Duration
	hasSample                    bool
	backoff                      uint // RTO doublings since the last sample
}

// update adds a sample and resets the backoff.
func (r *rttStats) update(sample time.Duration) {
	if sample <= 0 {
		sample = time.Microsecond
	}
	r.latest = sample
	r.backoff = 0
	if !r.hasSample {
		r.hasSample = true
		r.srtt, r.rttvar, r.minRTT = sample, sample/2, sample
		return
	}
	r.minRTT = min(r.minRTT, sample)
	d := r.srtt - sample
	if d < 0 {
		d = -d
	}
	r.rttvar = (3*r.rttvar + d) / 4
	r.srtt = (7*r.srtt + sample) / 8
}

// baseRTO returns the RTO before backoff.
func (r *rttStats) baseRTO() time.Duration {
	if !r.hasSample {
		return InitialRTO
	}
	// The variance term is at least half the SRTT: peers that acknowledge
	// on a fixed tick (go-raknet every 100 ms) give samples so regular
	// that 4·RTTVAR alone leaves no room for one late tick.
	return min(max(r.srtt+max(rtoGranularity, 4*r.rttvar, r.srtt/2), MinRTO), MaxRTO)
}

// rto returns the current retransmission timeout, backoff included.
func (r *rttStats) rto() time.Duration {
	rto := r.baseRTO()
	for i := uint(0); i < r.backoff && rto < MaxRTO; i++ {
		rto *= 2
	}
	return min(rto, MaxRTO)
}

// onTimeout doubles the RTO for the next timeout.
func (r *rttStats) onTimeout() {
	if r.rto() < MaxRTO {
		r.backoff++
	}
}

// smoothed returns the SRTT, or the initial RTO's worth before a sample.
func (r *rttStats) smoothed() time.Duration {
	if !r.hasSample {
		return InitialRTO / 3
	}
	return r.srtt
}
