package session

import (
	"math"
	"time"
)

// Decompression budgets. DEFLATE expands up to about 1032 times, so the
// bytes a client sends say little about the work it makes the server do:
// inflating costs about 2 ms of one core per MiB of output (a 16 KiB batch
// of zeros inflating to 16 MiB takes about 30 ms, BenchmarkDecodeBomb).
// Each session therefore has a token bucket of decompressed bytes, and a
// batch that would inflate beyond the tokens left ends the session (see
// ErrDecompressionBudget) rather than being dropped: the batches are one
// reliable, ordered stream, so skipping one would leave client and server
// disagreeing about the game from then on, while the client kept its slot
// and its power to make the server inflate up to the refusal. Uncompressed
// batches are not charged: their cost is the bytes the transport carried,
// which it bounds itself.
const (
	// decompressRate is what a logged-in player may inflate per second,
	// with a burst of the largest batch (Config.MaxDecompressedSize).
	// Vanilla clients send tens of KiB per second while playing, and the
	// largest batches, a skin change or a Login, a few MiB once: 32 MiB/s
	// is far beyond any of them, and holds one session to about 6% of a
	// core.
	decompressRate = 32 << 20
	// preLoginDecompressRate is what a client may inflate per second before
	// its player has logged in, with a burst of Config.MaxPreLoginSize.
	// Before Login a client sends nothing compressed but the Login itself
	// (and perhaps a small PacketViolationWarning), so the burst is the
	// allowance and the rate only a trickle: until the login deadline, a
	// connection that never logs in can make the server inflate at most
	// MaxPreLoginSize plus 64 KiB a second.
	preLoginDecompressRate = 64 << 10
)

// tokenBucket is a token bucket of bytes: it holds at most burst tokens and
// gains rate tokens per second. It is a pure state machine: every method
// takes the time, and nothing reads the clock. The zero value has no limit.
// It is not safe for concurrent use.
type tokenBucket struct {
	rate   float64 // tokens per second; 0 means no limit
	burst  float64
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// newTokenBucket returns a full bucket at now gaining rate tokens per
// second up to burst. rate 0 means no limit.
func newTokenBucket(rate, burst int, now time.Time) tokenBucket {
	return tokenBucket{rate: float64(rate), burst: float64(burst), tokens: float64(burst), last: now}
}

// available returns the whole tokens the bucket holds at now, or
// math.MaxInt when it has no limit.
func (b *tokenBucket) available(now time.Time) int {
	if b.rate == 0 {
		return math.MaxInt
	}
	b.refill(now)
	return int(b.tokens)
}

// take spends n tokens at now. Taking more than the bucket holds empties
// it: a debt would only postpone the refusal it already earned.
func (b *tokenBucket) take(n int, now time.Time) {
	if b.rate == 0 {
		return
	}
	b.refill(now)
	b.tokens = max(b.tokens-float64(n), 0)
}

// refill adds the tokens earned since the last update. A clock that went
// backwards earns nothing and moves nothing, so time cannot be minted by
// going back and forth.
func (b *tokenBucket) refill(now time.Time) {
	d := now.Sub(b.last)
	if d <= 0 {
		return
	}
	b.last = now
	b.tokens = min(b.tokens+d.Seconds()*b.rate, b.burst)
}
