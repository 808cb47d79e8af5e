package reliability

import "time"

// rttStats estimates the round-trip time as in RFC 6298: a smoothed RTT and
// a mean deviation, giving RTO = max(SRTT + max(G, 4·RTTVAR, SRTT/2),
// 5/4 of the recent peak) with a floor, a
// ceiling and exponential backoff.
type rttStats struct {
	srtt, rttvar, minRTT time.Duration
	// peak follows the longest a recent ACK took for the oldest datagram
	// it named, decaying by 1/8 per ACK.
	peak      time.Duration
	hasSample bool
	backoff   uint // RTO doublings since the last sample
}

// update adds a sample and resets the backoff.
func (r *rttStats) update(sample time.Duration) {
	if sample <= 0 {
		sample = time.Microsecond
	}
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

// notePeak records the longest round trip one ACK answered.
func (r *rttStats) notePeak(d time.Duration) {
	r.peak = max(d, r.peak-r.peak/8)
}

// baseRTO returns the RTO before backoff.
func (r *rttStats) baseRTO() time.Duration {
	if !r.hasSample {
		return InitialRTO
	}
	// The variance term is at least half the SRTT, and the RTO stays a
	// quarter above the recent peak: a peer that acknowledges on a fixed
	// tick (go-raknet every 100 ms) holds some ACKs back a whole tick,
	// which the smoothed RTT and its variance do not show.
	rto := r.srtt + max(rtoGranularity, 4*r.rttvar, r.srtt/2)
	return min(max(rto, r.peak*5/4, MinRTO), MaxRTO)
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
