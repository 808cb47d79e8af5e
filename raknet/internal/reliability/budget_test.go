package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// budgetPeer is a receiving Layer charged to a fakeBudget, whose Deliver
// keeps every message for a reader until take.
type budgetPeer struct {
	*sinkLayer
	b    *fakeBudget
	kept [][]byte
}

func newBudgetPeer(t *testing.T, limit int, cfg Config) *budgetPeer {
	t.Helper()
	p := &budgetPeer{b: &fakeBudget{t: t, limit: limit}}
	cfg.MaxDatagram = testMaxDatagram
	cfg.Budget = p.b
	p.sinkLayer = withSink(New(cfg, t0), func(m []byte, _ bool) bool {
		p.kept = append(p.kept, append([]byte(nil), m...))
		return true
	})
	return p
}

// take has the reader take every kept message.
func (p *budgetPeer) take(now time.Time) [][]byte {
	got := p.kept
	p.kept = nil
	for _, m := range got {
		p.consumedT(now, len(m))
	}
	return got
}

// nacked reports whether a NACK among ds names datagram n.
func nacked(t *testing.T, ds [][]byte, n wire.Uint24) bool {
	t.Helper()
	for _, d := range ds {
		if d[0]&wire.FlagNACK == 0 {
			continue
		}
		for _, r := range decodeAck(t, d).Ranges {
			if r.Start.Distance(n) < r.Len() {
				return true
			}
		}
	}
	return false
}

// A frame the budget refuses is backpressure: not acknowledged, pulled
// on the pull interval once the budget has room again (freed by another
// connection: nothing in this layer changes), and then delivered.
func TestBudgetRefusalIsBackpressure(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split %v", split), func(t *testing.T) {
			a := newTestPeer(t, Config{})
			b := newBudgetPeer(t, 0, Config{})
			size := 500
			if split {
				size = 5000
			}
			m := msg(0, size)
			mustSend(t, a.sinkLayer, t0, m, wire.ReliableOrdered, 0)
			ds := drain(a.sinkLayer, t0)
			now := t0.Add(ms(10))
			for i, d := range ds {
				err := b.handleT(now, d)
				if !errors.Is(err, ErrBudget) {
					t.Fatalf("datagram %d: got error %v, want %v", i, err, ErrBudget)
				}
				n, _ := decodeData(t, d)
				if acked(b.sinkLayer, uint32(n)) {
					t.Errorf("refused datagram %d: got acked, want not", n)
				}
			}
			if st := b.Stats(); st.BudgetRefused != uint64(len(ds)) || st.Reserved != 0 || b.b.held != 0 {
				t.Fatalf("after the refusals: got %d refused, %d reserved, %d held by the budget, want %d, 0, 0", st.BudgetRefused, st.Reserved, b.b.held, len(ds))
			}
			// The budget stays full: the tries find no room and ask for
			// nothing that would be refused again, backing off.
			first, _ := decodeData(t, ds[0])
			for _, wait := range []time.Duration{pullInterval, 2 * pullInterval, 4 * pullInterval, 8 * pullInterval, maxBudgetPullWait} {
				if d := b.NextDeadline(now); d.After(now.Add(wait)) || !b.adm.at.Equal(now.Add(wait)) {
					t.Fatalf("next try: got %v (NextDeadline %v), want in %v", b.adm.at.Sub(now), d.Sub(now), wait)
				}
				now = now.Add(wait)
				if out := drain(b.sinkLayer, now); nacked(t, out, first) {
					t.Fatal("pulled a refusal while the budget had no room")
				}
			}
			// Another connection frees room: the next try pulls.
			b.b.limit = 1 << 20
			now = b.adm.at
			out := drain(b.sinkLayer, now)
			for _, d := range ds {
				if n, _ := decodeData(t, d); !nacked(t, out, n) {
					t.Fatalf("after the budget freed: datagram %d not pulled", n)
				}
			}
			for _, d := range out {
				mustHandle(t, a.sinkLayer, now.Add(ms(10)), d)
			}
			now = now.Add(ms(10))
			for _, d := range drain(a.sinkLayer, now) {
				mustHandle(t, b.sinkLayer, now.Add(ms(10)), d)
			}
			if len(b.kept) != 1 || checkMsg(t, b.kept[0]) != 0 || len(b.kept[0]) != size {
				t.Fatalf("delivered %d messages, want message 0 of %d bytes", len(b.kept), size)
			}
			checkCharge(t, b.sinkLayer, b.b)
			if b.b.held != size {
				t.Errorf("budget while the reader holds it: got %d held, want %d", b.b.held, size)
			}
			b.take(now.Add(ms(10)))
			checkCharge(t, b.sinkLayer, b.b)
			if b.b.held != 0 {
				t.Errorf("budget once the reader took it: got %d held, want 0", b.b.held)
			}
		})
	}
}

// Messages that wait behind a missing one leave room in the budget for
// it: they are refused before the one their channel waits for would be.
func TestBudgetKeepsRoomForHead(t *testing.T) {
	const size, limit = 1000, 20000
	b := newBudgetPeer(t, limit, Config{})
	ord := func(i uint32) []byte {
		return dataDatagram(i, wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(i), OrderIndex: wire.Uint24(i), Payload: msg(int(i), size)})
	}
	// Message 0 is missing; 1 to 30 arrive.
	queued := 0
	for i := uint32(1); i <= 30; i++ {
		err := b.handleT(t0, ord(i))
		switch {
		case err == nil:
			queued++
		case !errors.Is(err, ErrBudget):
			t.Fatalf("message %d: got error %v, want nil or %v", i, err, ErrBudget)
		}
		checkCharge(t, b.sinkLayer, b.b)
	}
	// Those queued took at most three quarters of the budget.
	if queued == 0 || queued == 30 || b.b.held > limit*3/4 {
		t.Fatalf("queued %d messages holding %d bytes, want some refused and at most %d held", queued, b.b.held, limit*3/4)
	}
	if st := b.Stats(); st.BudgetRefused != uint64(30-queued) {
		t.Errorf("BudgetRefused: got %v, want %v", st.BudgetRefused, 30-queued)
	}
	// The one they wait for gets in, and delivers them all.
	mustHandle(t, b.sinkLayer, t0, ord(0))
	if len(b.kept) != queued+1 {
		t.Fatalf("delivered %d messages, want %d", len(b.kept), queued+1)
	}
	checkCharge(t, b.sinkLayer, b.b)
	b.take(t0)
	checkCharge(t, b.sinkLayer, b.b)
	if b.b.held != 0 {
		t.Errorf("after the reader took them: %d bytes held by the budget, want 0", b.b.held)
	}
}

// A split message is charged its estimated size from its first fragment,
// so the rest of it gets in however the budget fills meanwhile.
func TestBudgetSplitCommitted(t *testing.T) {
	b := newBudgetPeer(t, 1<<20, Config{})
	part := make([]byte, 1000)
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, splitFrame(0, 1, 4, 0, part)))
	want := 4 * (1000 + partOverhead)
	if b.b.held != want {
		t.Fatalf("after the first fragment: %d bytes held by the budget, want the estimate %d", b.b.held, want)
	}
	b.b.limit = b.b.held // another connection took the rest
	for i := uint32(1); i < 4; i++ {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(i, splitFrame(i, 1, 4, i, part)))
		checkCharge(t, b.sinkLayer, b.b)
	}
	if len(b.kept) != 1 || len(b.kept[0]) != 4000 || b.b.held != 4000 {
		t.Fatalf("got %d messages delivered, %d bytes held by the budget, want one of 4000, 4000", len(b.kept), b.b.held)
	}
}

// Close gives back everything: reassembly, ordering queues and the
// messages the reader holds; nothing is released twice, and nothing is
// taken after.
func TestBudgetClose(t *testing.T) {
	b := newBudgetPeer(t, 1<<20, Config{})
	ord := func(n, i uint32, size int) []byte {
		return dataDatagram(n, wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(n), OrderIndex: wire.Uint24(i), Payload: msg(int(i), size)})
	}
	mustHandle(t, b.sinkLayer, t0, ord(0, 0, 300))                                             // kept by the reader
	mustHandle(t, b.sinkLayer, t0, ord(1, 2, 400))                                             // waits for order 1
	mustHandle(t, b.sinkLayer, t0, dataDatagram(2, splitFrame(2, 9, 3, 0, make([]byte, 500)))) // in reassembly
	checkCharge(t, b.sinkLayer, b.b)
	st := b.Stats()
	if st.Held != 1 || b.rcv.order.bytes == 0 || b.rcv.asm.committed == 0 {
		t.Fatalf("before Close: got %d held, %d queued bytes, %d in reassembly, want some of each", st.Held, b.rcv.order.bytes, b.rcv.asm.committed)
	}
	b.Close()
	if b.b.held != 0 || b.Stats().Reserved != 0 || b.b.reserved != b.b.released {
		t.Fatalf("after Close: %d held by the budget, %d reserved by the layer, want 0, 0", b.b.held, b.Stats().Reserved)
	}
	// The reader takes what it held: nothing more is released.
	b.take(t0)
	if err := b.handleT(t0, ord(3, 1, 100)); !errors.Is(err, ErrBudget) {
		t.Errorf("a frame after Close: got error %v, want %v", err, ErrBudget)
	}
	if b.b.held != 0 || b.b.reserved != b.b.released {
		t.Errorf("after Close: budget holds %d, want 0", b.b.held)
	}
}

// The accounting follows random traffic through a lossy, duplicating,
// reordering link, with the budget's room changing as other connections
// come and go and a reader that takes its messages at random: at every
// step what the layer reserved is what it holds, nothing is lost, and
// Close gives back the rest.
func TestBudgetAccounting(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			p := linkParams{loss: 0.05, dup: 0.05, delay: 10 * time.Millisecond, jitter: 8 * time.Millisecond}
			s := newSimLink(t, seed, p, Config{MaxHeldMessages: 64, MaxHeldBytes: 64 << 10})
			s.refusals = true
			rng := rand.New(rand.NewPCG(seed, 7))
			fb := &fakeBudget{t: t, limit: 64 << 10}
			r := s.layers[1]
			r.cfg.Budget, r.charge.b = fb, fb
			var kept [][]byte
			next := []int{0, 1, 2} // per channel, the next message expected
			got := 0
			s.onDeliver = func(side int, m []byte) bool {
				if side == 0 {
					return false
				}
				i := checkMsg(t, m)
				if ch := i % 3; i != next[ch] {
					t.Fatalf("channel %d: got message %d, want %d", ch, i, next[ch])
				}
				next[i%3] += 3
				got++
				kept = append(kept, append([]byte(nil), m...))
				return true
			}
			sizes := []int{20, 300, 1200, 3000, 9000, 30000}
			const n = 600
			limits := []int{0, 8 << 10, 64 << 10, 256 << 10}
			check := func() {
				t.Helper()
				checkCharge(t, r, fb)
			}
			sent := 0
			for steps := 0; got < n; steps++ {
				if steps > 2_000_000 {
					t.Fatalf("stalled: %d of %d delivered (stats %+v)", got, n, r.Stats())
				}
				for sent < n && s.layers[0].Buffered() < 256<<10 {
					s.send(0, msg(sent, sizes[rng.IntN(len(sizes))]), wire.ReliableOrdered, uint8(sent%3))
					sent++
				}
				if rng.IntN(50) == 0 {
					// Room comes and goes with other connections; at the
					// end there is plenty.
					fb.limit = fb.held + limits[rng.IntN(len(limits))]
					if sent == n {
						fb.limit = max(fb.limit, 1<<20)
					}
				}
				if !s.step() {
					t.Fatalf("nothing scheduled with %d of %d delivered", got, n)
				}
				check()
				if len(kept) > 0 && rng.IntN(4) == 0 {
					k := 1 + rng.IntN(len(kept))
					for _, m := range kept[:k] {
						r.consumedT(s.now, len(m))
						check()
					}
					kept = slices.Delete(kept, 0, k)
				}
			}
			st := r.Stats()
			t.Logf("%d messages in %v: %d frames refused for the budget, %d datagrams deferred in all", n, s.now.Sub(t0), st.BudgetRefused, s.errs)
			if st.BudgetRefused == 0 {
				t.Errorf("the budget never refused a frame (stats %+v)", st)
			}
			r.Close()
			if fb.held != 0 || fb.reserved != fb.released {
				t.Errorf("after Close: budget holds %d (%d reserved, %d released), want 0", fb.held, fb.reserved, fb.released)
			}
		})
	}
}

// atomicBudget is a Budget shaped like a shared one: lock-free, one word.
type atomicBudget struct {
	held  atomic.Int64
	limit int64
}

func (b *atomicBudget) Reserve(n int) bool {
	for {
		h := b.held.Load()
		if h+int64(n) > b.limit {
			return false
		}
		if b.held.CompareAndSwap(h, h+int64(n)) {
			return true
		}
	}
}

func (b *atomicBudget) Release(n int) { b.held.Add(-int64(n)) }

// orNil returns b as a Budget, nil if b is nil.
func (b *atomicBudget) orNil() Budget {
	if b == nil {
		return nil
	}
	return b
}

// BenchmarkCleanPathBudget is BenchmarkCleanPath with a reader that keeps
// every message and takes them each op, without a budget and with one:
// the cost of charging it.
func BenchmarkCleanPathBudget(b *testing.B) {
	for _, msgs := range []int{1, 10} {
		for _, budget := range []bool{false, true} {
			b.Run(fmt.Sprintf("msgs=%d/budget=%v", msgs, budget), func(b *testing.B) {
				var ab *atomicBudget
				if budget {
					ab = &atomicBudget{limit: 1 << 20}
				}
				op, _, r := cleanPathKept(b, msgs, true, ab.orNil())
				b.ReportAllocs()
				for b.Loop() {
					op()
				}
				if st := r.Stats(); st.Errors != 0 || st.Reserved != 0 {
					b.Fatalf("got %d refused, %d reserved, want 0, 0", st.Errors, st.Reserved)
				}
			})
		}
	}
}
