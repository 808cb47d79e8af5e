package session

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

// t0 is the fixed start of the clock in budget tests.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestTokenBucket(t *testing.T) {
	const rate, burst = 1000, 4000
	type step struct {
		at   time.Duration // since t0
		take int           // tokens taken after checking
		want int           // available at at, before taking
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"starts full", []step{{0, 0, burst}}},
		{"spends and refills at the rate", []step{
			{0, burst, burst},
			{0, 0, 0},
			{500 * time.Millisecond, 0, 500},
			{1500 * time.Millisecond, 1000, 1500},
			{1500 * time.Millisecond, 0, 500},
		}},
		{"refills no further than the burst", []step{
			{0, burst, burst},
			{time.Hour, 0, burst},
		}},
		{"overspending empties it, with no debt", []step{
			{0, 3 * burst, burst},
			{0, 0, 0},
			{time.Second, 0, rate},
		}},
		{"a clock that goes back earns nothing", []step{
			{0, burst, burst},
			{-time.Hour, 0, 0},
			// Counted from t0, the last time it moved forward, not from
			// an hour before.
			{time.Second, 0, rate},
		}},
		{"a century idle does not overflow", []step{
			{0, burst, burst},
			{100 * 365 * 24 * time.Hour, 0, burst},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTokenBucket(rate, burst, t0)
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if got := b.available(now); got != s.want {
					t.Fatalf("step %d at t0%+v: got %d tokens, want %d", i, s.at, got, s.want)
				}
				b.take(s.take, now)
			}
		})
	}
	t.Run("zero value has no limit", func(t *testing.T) {
		var b tokenBucket
		b.take(math.MaxInt, t0)
		if got := b.available(t0); got != math.MaxInt {
			t.Errorf("got %d tokens, want %d", got, math.MaxInt)
		}
	})
}

// fixedClock is a clock a test sets by hand.
type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

// sizedBatch returns a DEFLATE batch of one packet (id 0x7e, which no
// handler in these tests handles) that decompresses to exactly n bytes,
// n ≥ 3: a varuint32 length, a one-byte header and zeros.
func sizedBatch(t testing.TB, n int) []byte {
	t.Helper()
	for p := n - 2; p >= 0; p-- {
		if len(binary.AppendUvarint(nil, uint64(p+1)))+1+p == n {
			return clientBatch(t, deflated, Packet{ID: 0x7e, Payload: make([]byte, p)})
		}
	}
	t.Fatalf("no one-packet batch of %d bytes", n)
	return nil
}

// TestDecodeBatchBudget checks the decompression budget at fixed times: a
// batch that would inflate beyond what is left is refused having inflated
// one byte more than that, and the budget refills at its rate up to its
// burst.
func TestDecodeBatchBudget(t *testing.T) {
	const maxSize, rate = 1 << 20, 512 << 10
	type step struct {
		at      time.Duration // since t0
		batch   []byte
		want    error // nil, ErrTooLarge or ErrDecompressionBudget
		charged int64 // bytes inflated by this batch
	}
	kib := func(n int) []byte { return sizedBatch(t, n<<10) }
	uncompressed := clientBatch(t, plain, Packet{ID: 0x7e, Payload: make([]byte, 64<<10)})
	tests := []struct {
		name  string
		steps []step
	}{
		{"a full burst, then one byte too many", []step{
			{0, kib(1024), nil, 1 << 20},
			{0, kib(64), ErrDecompressionBudget, 1},
		}},
		{"refills at the rate", []step{
			{0, kib(1024), nil, 1 << 20},
			{time.Second, kib(512), nil, 512 << 10},
			{1500 * time.Millisecond, kib(256), nil, 256 << 10},
			{1500 * time.Millisecond, kib(4), ErrDecompressionBudget, 1},
		}},
		{"partly drained, refused at what is left", []step{
			{0, kib(768), nil, 768 << 10},
			{0, kib(512), ErrDecompressionBudget, 256<<10 + 1},
		}},
		{"refills no further than the burst", []step{
			{0, kib(1024), nil, 1 << 20},
			{time.Hour, kib(1024), nil, 1 << 20},
			{time.Hour, kib(1), ErrDecompressionBudget, 1},
		}},
		{"the cap, not the budget, refuses a batch over it", []step{
			{0, sizedBatch(t, maxSize+1), ErrTooLarge, maxSize + 1},
		}},
		{"uncompressed batches are not charged", []step{
			{0, kib(1024), nil, 1 << 20},
			{0, uncompressed, nil, 0},
			{0, uncompressed, nil, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fixedClock{t: t0}
			d := batchDecoder{maxSize: maxSize, compressed: true, now: clk.now}
			d.budget = newTokenBucket(rate, maxSize, t0)
			for i, s := range tc.steps {
				clk.t = t0.Add(s.at)
				before := d.inflated
				_, err := d.decode(s.batch)
				d.release()
				if s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
					t.Fatalf("step %d at t0%+v: got %v, want %v", i, s.at, err, s.want)
				}
				if got := d.inflated - before; got != s.charged {
					t.Fatalf("step %d at t0%+v: inflated %d bytes, want %d", i, s.at, got, s.charged)
				}
			}
		})
	}
}
