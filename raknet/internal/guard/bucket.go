package guard

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// MaxRate is the highest rate a Bucket, PrefixLimiter or ByteLimiter
// accepts, in tokens per second: time is kept in nanoseconds, so faster than
// one token per nanosecond cannot be told apart.
const MaxRate = 1_000_000_000

// maxWindow bounds how long an empty bucket takes to fill (burst / rate).
// It keeps every sum of a Unix time in nanoseconds and a window far from
// int64 overflow until the 2260s; no limiter has a use for more than hours.
const maxWindow = 30 * 24 * time.Hour

// rate is a token bucket's rate and burst as integer time, in the form of
// the generic cell rate algorithm (GCRA, ITU-T I.371): one token is worth
// perToken nanoseconds, the bucket holds window nanoseconds' worth, and a
// bucket's whole state is the time tat ("theoretical arrival time") at
// which it is full again. A request of cost tokens at now is allowed when
// max(tat, now) + cost·perToken − now ≤ window, and then moves tat there.
//
// perToken is kept as a 32.32 fixed-point number so rates that do not
// divide a second still work without floats. Both it and window round
// down, so a full bucket always admits its whole burst; a sustained flood
// gains at most one nanosecond per allowed request, which is exact for
// every rate that divides 10^9 and within 0.1% for costs of a microsecond
// or more.
type rate struct {
	perToken uint64 // nanoseconds per token << 32
	window   int64  // nanoseconds the burst is worth
	burst    int64
}

// newRate returns the rate of perSecond tokens per second with room for
// burst, panicking on values no limiter could mean.
func newRate(perSecond, burst int64) rate {
	if perSecond < 1 || perSecond > MaxRate {
		panic(fmt.Sprintf("guard: rate %d per second outside [1, %d]", perSecond, MaxRate))
	}
	if burst < 1 || burst/perSecond >= int64(maxWindow/time.Second) {
		panic(fmt.Sprintf("guard: burst %d at %d per second outside [1, %v]", burst, perSecond, maxWindow))
	}
	r := rate{perToken: (uint64(time.Second) << 32) / uint64(perSecond), burst: burst}
	r.window = r.cost(burst)
	return r
}

// cost returns what n tokens are worth in nanoseconds; n ≤ r.burst.
func (r *rate) cost(n int64) int64 {
	hi, lo := bits.Mul64(uint64(n), r.perToken)
	return int64(hi<<32 | lo>>32)
}

// allow decides a request of n tokens at now against a bucket full at tat.
// It returns the bucket's new tat and whether the request is allowed. A
// refused request leaves the bucket as it was, except that a tat further
// ahead than one window (the clock stepped back) is pulled in to now+window,
// an empty bucket, so the step costs at most one refill. tat is only ever
// compared, never subtracted, so emptyTAT cannot overflow.
func (r *rate) allow(tat, now int64, n int64) (int64, bool) {
	if n <= 0 {
		return tat, true
	}
	if tat > now+r.window {
		tat = now + r.window
	}
	if n > r.burst {
		return tat, false
	}
	next := max(tat, now) + r.cost(n) // a full bucket banks no idle time
	if next-now > r.window {
		return tat, false
	}
	return next, true
}

// emptyTAT is the tat of a bucket that has never been used: full at any
// time a caller can pass.
const emptyTAT = math.MinInt64

// Bucket is a token bucket refilled at a fixed rate up to a burst, with
// integer nanosecond arithmetic and no floats (see rate). It starts full.
//
// A Bucket is safe for concurrent use: its whole state is one int64 updated
// by compare-and-swap. Times come from the caller; a clock that steps back
// leaves the bucket at worst empty, never refusing for longer than one
// burst takes to refill. The zero Bucket refuses every request of positive
// cost; make one with NewBucket.
type Bucket struct {
	r   rate
	tat atomic.Int64
}

// NewBucket returns a full bucket refilled at perSecond tokens per second
// that holds up to burst tokens. It panics if perSecond is outside
// [1, MaxRate] or burst is below 1 or takes more than 30 days to refill.
func NewBucket(perSecond, burst int64) *Bucket {
	b := &Bucket{r: newRate(perSecond, burst)}
	b.tat.Store(emptyTAT)
	return b
}

// Allow reports whether cost tokens are available at now and, if they are,
// takes them. A cost of zero or less is always allowed and takes nothing; a
// cost above the burst is always refused.
func (b *Bucket) Allow(now time.Time, cost int) bool {
	t := now.UnixNano()
	for {
		old := b.tat.Load()
		next, ok := b.r.allow(old, t, int64(cost))
		if next == old || b.tat.CompareAndSwap(old, next) {
			return ok
		}
	}
}

// Tokens returns the whole tokens the bucket holds at now, for tests and
// metrics.
func (b *Bucket) Tokens(now time.Time) int64 {
	return b.r.tokens(b.tat.Load(), now.UnixNano())
}

// tokens returns the whole tokens a bucket full at tat holds at now.
func (r *rate) tokens(tat, now int64) int64 {
	if r.burst == 0 {
		return 0
	}
	if tat <= now {
		return r.burst
	}
	free := r.window - (tat - now)
	if free <= 0 {
		return 0
	}
	// free·2^32 / perToken, in 128 bits.
	q, _ := bits.Div64(uint64(free)>>32, uint64(free)<<32, r.perToken)
	return min(int64(q), r.burst)
}

// ByteLimiter caps the bytes a listener sends in reply to unproven peers
// (pongs, OpenConnectionReply1, refusals) across all of them together, so
// no mix of sources and no number of addresses can make the listener a
// large reflector. It is a Bucket counted in bytes.
//
// A ByteLimiter is safe for concurrent use. The zero value refuses every
// non-empty reply; make one with NewByteLimiter.
type ByteLimiter struct {
	b Bucket
}

// NewByteLimiter returns a full limiter allowing perSecond bytes per second
// with bursts up to burst bytes. burst must be at least the largest reply
// (one MTU) or that reply is never sent. It panics on the values NewBucket
// panics on.
func NewByteLimiter(perSecond, burst int64) *ByteLimiter {
	l := &ByteLimiter{b: Bucket{r: newRate(perSecond, burst)}}
	l.b.tat.Store(emptyTAT)
	return l
}

// Allow reports whether a reply of n bytes may be sent at now and, if so,
// counts it.
func (l *ByteLimiter) Allow(now time.Time, n int) bool {
	return l.b.Allow(now, n)
}
