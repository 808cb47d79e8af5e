package reliability

import (
	"fmt"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// testMaxDatagram is the UDP payload of a 1400-byte MTU over IPv4.
const testMaxDatagram = 1400 - 28

// testPeer is a Layer with its deliveries and receipts recorded.
type testPeer struct {
	*sinkLayer
	got   [][]byte
	taken []Receipt // receipts taken from the layer so far
}

func newTestPeer(t testing.TB, cfg Config) *testPeer {
	t.Helper()
	p := &testPeer{}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = testMaxDatagram
	}
	p.sinkLayer = withSink(New(cfg, t0), func(m []byte, _ bool) bool {
		p.got = append(p.got, append([]byte(nil), m...))
		return false
	})
	return p
}

// receipts returns every receipt the layer reported so far.
func (p *testPeer) receipts() []Receipt {
	p.taken = append(p.taken, p.Receipts()...)
	return p.taken
}

// idle reports whether nothing is queued, in flight or awaiting an ACK
// from l.
func idle(l *sinkLayer) bool {
	return l.q.buffered == 0 && !l.q.hasData() && l.recv.acks.empty() && l.nacks.set.empty()
}

// drain returns every datagram l has to send at now.
func drain(l *sinkLayer, now time.Time) [][]byte {
	var out [][]byte
	for {
		d := l.AppendDatagram(nil, now)
		if d == nil {
			return out
		}
		out = append(out, d)
	}
}

// mustSend queues p and fails the test on an error.
func mustSend(t testing.TB, l *sinkLayer, now time.Time, p []byte, r wire.Reliability, ch uint8) uint32 {
	t.Helper()
	id, err := l.Send(p, r, ch)
	if err != nil {
		t.Fatalf("Send(%d bytes, %v, %d): got error %v, want nil", len(p), r, ch, err)
	}
	return id
}

// mustHandle feeds d to l and fails the test on an error.
func mustHandle(t testing.TB, l *sinkLayer, now time.Time, d []byte) {
	t.Helper()
	if err := l.handleT(now, d); err != nil {
		t.Fatalf("HandleDatagram(% x): got error %v, want nil", d[:min(len(d), 24)], err)
	}
}

// dataDatagram encodes a data datagram numbered n carrying frames.
func dataDatagram(n uint32, frames ...wire.Frame) []byte {
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(n)}
	b := h.Append(nil)
	for i := range frames {
		b = frames[i].Append(b)
	}
	return b
}

// ackDatagram encodes an ACK or NACK of the given ranges.
func ackDatagram(nack bool, ranges ...wire.AckRange) []byte {
	a := wire.Ack{NACK: nack, Ranges: ranges}
	return a.Append(nil)
}

// reliableFrame is a Reliable frame with reliable index idx.
func reliableFrame(idx uint32, p []byte) wire.Frame {
	return wire.Frame{Reliability: wire.Reliable, ReliableIndex: wire.Uint24(idx), Payload: p}
}

// decodeData decodes a data datagram, failing the test on ACKs and errors.
func decodeData(t testing.TB, d []byte) (wire.Uint24, []wire.Frame) {
	t.Helper()
	var h wire.DatagramHeader
	n, err := h.Decode(d)
	if err != nil {
		t.Fatalf("decode data datagram % x: %v", d[:min(len(d), 16)], err)
	}
	var frames []wire.Frame
	for rest := d[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			t.Fatalf("decode frame: %v", err)
		}
		frames = append(frames, f)
		rest = rest[k:]
	}
	return h.Number, frames
}

// decodeAck decodes an ACK or NACK datagram, failing the test otherwise.
func decodeAck(t testing.TB, d []byte) wire.Ack {
	t.Helper()
	var a wire.Ack
	if len(d) == 0 || d[0]&(wire.FlagACK|wire.FlagNACK) == 0 {
		t.Fatalf("datagram % x: got data, want ACK or NACK", d[:min(len(d), 16)])
	}
	if _, err := a.Decode(d); err != nil {
		t.Fatalf("decode ACK % x: %v", d, err)
	}
	return a
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// cleanPath returns one step of the clean path between two layers (msgs
// messages sent, packed, received and acknowledged), warmed up so that
// rings, free lists and windows are at their steady size, and the
// counters it keeps.
func cleanPath(tb testing.TB, msgs int) (op func(), datagrams *int, r *sinkLayer) {
	return cleanPathKept(tb, msgs, false, nil)
}

// cleanPathKept is cleanPath whose receiver, if keep is set, keeps every
// message for a reader that consumes them all each step, and is charged
// to b if it is not nil.
func cleanPathKept(tb testing.TB, msgs int, keep bool, b Budget) (op func(), datagrams *int, r *sinkLayer) {
	deliver := func([]byte, bool) bool { return keep }
	a := withSink(New(Config{MaxDatagram: testMaxDatagram}, t0), nil)
	r = withSink(New(Config{MaxDatagram: testMaxDatagram, Budget: b}, t0), deliver)
	p := make([]byte, 100)
	buf := make([]byte, 0, testMaxDatagram)
	now := t0
	datagrams = new(int)
	op = func() {
		now = now.Add(100 * time.Microsecond)
		for range msgs {
			if _, err := a.Send(p, wire.ReliableOrdered, 0); err != nil {
				tb.Fatalf("Send: %v", err)
			}
		}
		for d := a.AppendDatagram(buf[:0], now); d != nil; d = a.AppendDatagram(buf[:0], now) {
			*datagrams++
			if err := r.handleT(now, d); err != nil {
				tb.Fatalf("HandleDatagram: %v", err)
			}
		}
		if keep {
			for range r.Stats().Held {
				r.consumedT(now, len(p))
			}
		}
		for d := r.AppendDatagram(buf[:0], now); d != nil; d = r.AppendDatagram(buf[:0], now) {
			if err := a.handleT(now, d); err != nil {
				tb.Fatalf("HandleDatagram: %v", err)
			}
		}
	}
	for range 10_000 {
		op()
	}
	*datagrams = 0
	return op, datagrams, r
}

// TestCleanPathAllocs holds the clean path to zero allocations per step,
// one message or ten, with a budget or without.
func TestCleanPathAllocs(t *testing.T) {
	for _, msgs := range []int{1, 10} {
		for _, keep := range []bool{false, true} {
			for _, budget := range []bool{false, true} {
				var b *atomicBudget
				if budget {
					b = &atomicBudget{limit: 1 << 20}
				}
				op, _, r := cleanPathKept(t, msgs, keep, b.orNil())
				if n := testing.AllocsPerRun(1000, op); n != 0 {
					t.Errorf("msgs=%d keep=%v budget=%v: got %v allocations per step, want 0", msgs, keep, budget, n)
				}
				if st := r.Stats(); st.Held != 0 || st.Errors != 0 || st.Reserved != 0 {
					t.Errorf("msgs=%d keep=%v budget=%v: got %d held, %d refused, %d reserved, want 0, 0, 0", msgs, keep, budget, st.Held, st.Errors, st.Reserved)
				}
				if budget && b.held.Load() != 0 {
					t.Errorf("msgs=%d keep=%v: budget holds %d, want 0", msgs, keep, b.held.Load())
				}
			}
		}
	}
}

// BenchmarkCleanPath measures one sender and one receiver on a lossless
// path: each op sends msgs 100-byte messages that go out in one datagram,
// which the receiver handles; its ACKs (every AckDelay or 32 datagrams) go
// back to the sender. allocs/op is allocations per data datagram.
func BenchmarkCleanPath(b *testing.B) {
	for _, msgs := range []int{1, 10} {
		b.Run(fmt.Sprintf("msgs=%d", msgs), func(b *testing.B) {
			op, datagrams, r := cleanPath(b, msgs)
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
			if *datagrams != b.N {
				b.Fatalf("sent %d datagrams in %d ops, want one per op", *datagrams, b.N)
			}
			if got := r.Stats().MessagesDelivered; got != uint64(msgs*(b.N+10_000)) {
				b.Fatalf("delivered %d messages, want %d", got, msgs*(b.N+10_000))
			}
		})
	}
}

// AppendFinal sends its message at once, though the window is full of
// unacknowledged data, and the peer delivers it.
func TestAppendFinalBypassesWindow(t *testing.T) {
	p := newTestPeer(t, Config{})
	for i := range 200 {
		mustSend(t, p.sinkLayer, t0, make([]byte, 1000), wire.ReliableOrdered, uint8(i%2))
	}
	drain(p.sinkLayer, t0)
	if d := p.AppendDatagram(nil, t0); d != nil {
		t.Fatal("the window is not full")
	}
	d := p.AppendFinal(nil, []byte{0x15})
	peer := newTestPeer(t, Config{})
	mustHandle(t, peer.sinkLayer, t0, d)
	if len(peer.got) != 1 || peer.got[0][0] != 0x15 {
		t.Errorf("peer got %x, want the final message", peer.got)
	}
}
