package reliability

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// fuzzConfig has small caps so that fuzzing reaches them.
var fuzzConfig = Config{
	MaxDatagram:         576 - 28,
	MaxMessageSize:      64 << 10,
	MaxSendBuffer:       64 << 10,
	MaxSplitCount:       64,
	MaxConcurrentSplits: 4,
	MaxSplitBytes:       32 << 10,
	SplitTimeout:        2 * time.Second,
	MaxOrderQueue:       64,
	MaxOrderBytes:       16 << 10,
	ReliableWindow:      512,
	MaxHeldMessages:     4,
	MaxHeldBytes:        4 << 10,
	InitialSend:         uint32(wire.MaxUint24) - 3,
	InitialRecv:         uint32(wire.MaxUint24) - 3,
}

// fuzzStart is the first wire number of every counter in fuzzConfig.
const fuzzStart = uint32(wire.MaxUint24) - 3

// fuzzBudget is the Config.Budget a second run of every input is charged
// to: below fuzzConfig's limits, so that it refuses.
const fuzzBudget = 6 << 10

// fakeBudget is a Budget of limit bytes that fails the test on a release
// of more than it counts.
type fakeBudget struct {
	t                  testing.TB
	limit, held        int
	reserved, released int // every byte ever reserved and released
}

func (b *fakeBudget) Reserve(n int) bool {
	if n < 0 {
		b.t.Fatalf("Reserve(%d)", n)
	}
	if b.held+n > b.limit {
		return false
	}
	b.held += n
	b.reserved += n
	return true
}

func (b *fakeBudget) Release(n int) {
	if n < 0 || n > b.held {
		b.t.Fatalf("Release(%d) with %d held", n, b.held)
	}
	b.held -= n
	b.released += n
}

// checkCharge checks that what the layer reserved from b is what it
// holds.
func checkCharge(t testing.TB, l *sinkLayer, b *fakeBudget) {
	t.Helper()
	if h := l.rcv.holds(); b.held != h || l.charge.reserved != h || b.reserved-b.released != h {
		t.Fatalf("budget: %d held (%d reserved - %d released), layer reserved %d, want what it holds, %d", b.held, b.reserved, b.released, l.charge.reserved, h)
	}
}

// fuzzRecord encodes one step of FuzzReceiver's input: a byte whose low 7
// bits advance the clock in milliseconds (the top bit asks the receiver
// to send what it has, after its reader took what it held), a u16 BE
// length, and the datagram. The reader keeps the messages of odd length.
func fuzzRecord(b []byte, step byte, d []byte) []byte {
	b = append(b, step)
	b = binary.BigEndian.AppendUint16(b, uint16(len(d)))
	return append(b, d...)
}

// fuzzSeeds returns valid inputs built with the wire encoders.
func fuzzSeeds() [][]byte {
	n := func(i uint32) uint32 { return (fuzzStart + i) & uint32(wire.MaxUint24) }
	ord := func(i, dg uint32, ch uint8, p string) []byte {
		return dataDatagram(n(dg), wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(n(i)), OrderIndex: wire.Uint24(n(i)), OrderChannel: ch, Payload: []byte(p)})
	}
	frag := func(rel, dg uint32, idx uint32, p string) []byte {
		return dataDatagram(n(dg), wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(n(rel)), OrderIndex: wire.Uint24(n(0)), OrderChannel: 1, Split: true, SplitID: 7, SplitCount: 3, SplitIndex: idx, Payload: []byte(p)})
	}
	seq := func(s, dg uint32, r wire.Reliability) []byte {
		f := wire.Frame{Reliability: r, SequenceIndex: wire.Uint24(n(s)), OrderIndex: wire.Uint24(n(0)), OrderChannel: 2, Payload: []byte{byte(s)}}
		if r.Reliable() {
			f.ReliableIndex = wire.Uint24(n(s))
		}
		return dataDatagram(n(dg), f)
	}
	var seeds [][]byte
	// In order across the wrap, then an ACK flush.
	var s []byte
	for i := range uint32(8) {
		s = fuzzRecord(s, 1, ord(i, i, 0, "hello"))
	}
	seeds = append(seeds, fuzzRecord(s, 0x80|10, nil))
	// Out of order with a gap, a duplicate and a late arrival.
	s = nil
	for _, i := range []uint32{0, 2, 2, 5, 1, 4, 3} {
		s = fuzzRecord(s, 0x80, ord(i, i, 3, "x"))
	}
	seeds = append(seeds, s)
	// A split message, a duplicate fragment, then completion.
	s = fuzzRecord(nil, 0, frag(0, 0, 0, "aaaa"))
	s = fuzzRecord(s, 1, frag(0, 1, 0, "aaaa"))
	s = fuzzRecord(s, 1, frag(2, 2, 2, "cc"))
	s = fuzzRecord(s, 0x80|5, frag(1, 3, 1, "bbb"))
	seeds = append(seeds, s)
	// Sequenced frames out of order.
	s = nil
	for i, sq := range []uint32{0, 3, 1, 4, 2} {
		r := wire.UnreliableSequenced
		if i%2 == 1 {
			r = wire.ReliableSequenced
		}
		s = fuzzRecord(s, 0x80|1, seq(sq, uint32(i), r))
	}
	seeds = append(seeds, s)
	// ACKs and NACKs of what the receiver sent, including across the wrap.
	all := wire.AckRange{Start: wire.Uint24(n(0)), End: wire.Uint24(n(5))}
	s = fuzzRecord(nil, 0x80|20, ackDatagram(true, wire.AckRange{Start: wire.Uint24(n(0)), End: wire.Uint24(n(0))}))
	s = fuzzRecord(s, 0x80|20, ackDatagram(false, all))
	s = fuzzRecord(s, 0x80|20, ackDatagram(false, wire.AckRange{Start: wire.Uint24(n(6)), End: wire.Uint24(n(9))}))
	seeds = append(seeds, s)
	// Let everything time out.
	s = nil
	for range 20 {
		s = fuzzRecord(s, 0x80|0x7f, nil)
	}
	seeds = append(seeds, s)
	// Hostile: split count and order index far ahead, reliable index far.
	s = fuzzRecord(nil, 0, dataDatagram(n(0), splitFrame(n(0), 1, 1<<32-1, 0, []byte{1})))
	s = fuzzRecord(s, 0, ord(1000, 1, 4, "far"))
	s = fuzzRecord(s, 0, dataDatagram(n(2), reliableFrame(n(1<<22), []byte{1})))
	s = fuzzRecord(s, 0x80, dataDatagram(n(1<<14), reliableFrame(n(0), []byte{1})))
	seeds = append(seeds, s)
	return seeds
}

// FuzzReceiver feeds arbitrary datagrams to a Layer that also has messages
// of its own in flight, advancing a fake clock, and checks that it never
// panics and that every bound holds.
func FuzzReceiver(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		runReceiver(t, in, 0)
		runReceiver(t, in, fuzzBudget)
	})
}

// runReceiver is FuzzReceiver's body. It returns the messages delivered
// and the layer's counters. With a budget, the layer is charged to a
// fakeBudget of that many bytes, which has no more room during the steps
// that advance the clock by an odd count (the rest went to other
// connections); after every step what it reserved must be what it holds,
// and after Close nothing.
func runReceiver(t *testing.T, in []byte, budget int) ([][]byte, Stats) {
	now := t0
	receipts := map[uint32]int{}
	var got [][]byte
	var held []int // sizes of the messages kept
	cfg := fuzzConfig
	var l *sinkLayer
	// The messages delivered as owned, and a copy of each: the layer must
	// never write to them again, nor hand over the datagram's bytes.
	var owned [][2][]byte
	sink := func(m []byte, own bool) bool {
		if len(m) == 0 || len(m) > cfg.MaxSplitBytes {
			t.Fatalf("delivered message size: got %v, want 1..%v", len(m), cfg.MaxSplitBytes)
		}
		got = append(got, append([]byte(nil), m...))
		if own {
			owned = append(owned, [2][]byte{m, got[len(got)-1]})
		}
		if len(m)%2 == 0 {
			return false
		}
		// The bound holds with the message counted, but for one message
		// alone, which is always delivered.
		if st := l.Stats(); st.Held > 1 && (st.Held > cfg.MaxHeldMessages || st.HeldBytes > cfg.MaxHeldBytes) {
			t.Fatalf("delivered %d bytes with %d messages, %d bytes held", len(m), st.Held, st.HeldBytes)
		}
		held = append(held, len(m))
		return true
	}
	var fb *fakeBudget
	if budget > 0 {
		fb = &fakeBudget{t: t, limit: budget}
		cfg.Budget = fb
	}
	l = withSink(New(cfg, now), sink)
	// Messages of its own so that ACKs and NACKs have something to hit.
	for i, r := range []wire.Reliability{wire.ReliableOrdered, wire.ReliableWithAckReceipt, wire.UnreliableWithAckReceipt, wire.Reliable, wire.ReliableOrderedWithAckReceipt} {
		size := 100
		if i == 3 {
			size = 2000 // split
		}
		if _, err := l.Send(make([]byte, size), r, uint8(i)); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	// takeReceipts counts what the layer reported: each message's fate
	// once.
	takeReceipts := func() {
		for _, r := range l.Receipts() {
			if receipts[r.ID]++; receipts[r.ID] > 1 {
				t.Fatalf("receipt %d reported: got %v times, want 1", r.ID, receipts[r.ID])
			}
		}
	}
	var buf []byte
	send := func() {
		for len(held) > 0 {
			size := held[0]
			held = held[1:]
			l.consumedT(now, size)
		}
		for range 1000 {
			d := l.AppendDatagram(buf[:0], now)
			if d == nil {
				return
			}
			buf = d
			checkOutgoing(t, d, cfg.MaxDatagram)
		}
		t.Fatalf("AppendDatagram did not stop")
	}
	send()
	var scratch []byte
	for len(in) > 0 {
		step := in[0]
		in = in[1:]
		size := 0
		if len(in) >= 2 {
			size = int(binary.BigEndian.Uint16(in))
			in = in[2:]
		}
		size = min(size, len(in))
		d := in[:size]
		in = in[size:]
		now = now.Add(time.Duration(step&0x7f) * time.Millisecond)
		if fb != nil {
			fb.limit = budget
			if step&1 != 0 {
				fb.limit = fb.held
			}
		}
		if size > 0 {
			// The layer reads the datagram from a buffer that is
			// scribbled over afterwards, as a socket's next read does.
			scratch = append(scratch[:0], d...)
			_ = l.handleT(now, scratch)
			for i := range scratch {
				scratch[i] = 0xa5
			}
		}
		if step&0x80 != 0 {
			send()
		}
		takeReceipts()
		checkBounds(t, l)
		if fb != nil {
			checkCharge(t, l, fb)
		}
		if dl := l.NextDeadline(now); !dl.IsZero() && dl.Before(now.Add(-MaxRTO-cfg.SplitTimeout)) {
			t.Fatalf("NextDeadline %v is long past (now %v)", dl.Sub(t0), now.Sub(t0))
		}
	}
	for i, o := range owned {
		if !bytes.Equal(o[0], o[1]) {
			t.Fatalf("owned message %d changed after its delivery", i)
		}
	}
	st := l.Stats()
	if fb != nil {
		l.Close()
		if fb.held != 0 || l.Stats().Reserved != 0 {
			t.Fatalf("after Close: %d bytes held by the budget, %d reserved, want 0, 0", fb.held, l.Stats().Reserved)
		}
	}
	return got, st
}

// checkOutgoing checks that d fits and decodes.
func checkOutgoing(t *testing.T, d []byte, maxDatagram int) {
	t.Helper()
	if len(d) > maxDatagram {
		t.Fatalf("sent datagram size: got %v, want <= %v", len(d), maxDatagram)
	}
	if d[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		var a wire.Ack
		if _, err := a.Decode(d); err != nil {
			t.Fatalf("sent an ACK that does not decode: %v", err)
		}
		return
	}
	var h wire.DatagramHeader
	n, err := h.Decode(d)
	if err != nil {
		t.Fatalf("sent a datagram that does not decode: %v", err)
	}
	for rest := d[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			t.Fatalf("sent a frame that does not decode: %v", err)
		}
		rest = rest[k:]
	}
}

// checkBounds checks every cap of a Layer's state.
func checkBounds(t *testing.T, l *sinkLayer) {
	t.Helper()
	c := &l.cfg
	if len(l.rcv.asm.list) > c.MaxConcurrentSplits || l.rcv.asm.bytes > c.MaxSplitBytes || l.rcv.asm.bytes < 0 {
		t.Fatalf("assembler: got %v messages, %v bytes, want <= %v, 0..%v", len(l.rcv.asm.list), l.rcv.asm.bytes, c.MaxConcurrentSplits, c.MaxSplitBytes)
	}
	sum := 0
	for _, m := range l.rcv.asm.list {
		sum += m.bytes
		if uint32(len(m.have)) != (m.count+63)/64 || m.count > uint32(c.MaxSplitCount) || m.received >= m.count {
			t.Fatalf("assembly %d: %d words of arrivals, count %d, received %d", m.id, len(m.have), m.count, m.received)
		}
		// The buffer reassembly allocates ahead is within what the
		// message was committed, which admission bounded.
		if cap(m.buf) > m.share() {
			t.Fatalf("assembly %d: buffer of %d bytes, committed %d", m.id, cap(m.buf), m.share())
		}
	}
	if sum != l.rcv.asm.bytes {
		t.Fatalf("assembler bytes: got %v, want the sum of its messages %v", l.rcv.asm.bytes, sum)
	}
	if l.rcv.order.bytes > c.MaxOrderBytes || l.rcv.order.bytes < 0 {
		t.Fatalf("order queue bytes: got %v, want 0..%v", l.rcv.order.bytes, c.MaxOrderBytes)
	}
	sum = 0
	for i := range l.rcv.order.ch {
		ch := &l.rcv.order.ch[i]
		if ch.queued > c.MaxOrderQueue || len(ch.ring) > 2*c.MaxOrderQueue {
			t.Fatalf("channel %d: got %v queued, %v ring slots, want <= %v, <= %v", i, ch.queued, len(ch.ring), c.MaxOrderQueue, 2*c.MaxOrderQueue)
		}
		n := 0
		sum += len(ch.ring) * slotSize
		for _, m := range ch.ring {
			if m != nil {
				n++
				sum += len(m)
			}
		}
		if n != ch.queued {
			t.Fatalf("channel %d queued: got %v, want what the ring holds %v", i, ch.queued, n)
		}
	}
	if sum != l.rcv.order.bytes {
		t.Fatalf("order bytes: got %v, want what the rings hold and take %v", l.rcv.order.bytes, sum)
	}
	if st := l.Stats(); st.Held > c.MaxHeldMessages || (st.Held > 1 && st.HeldBytes > c.MaxHeldBytes) {
		t.Fatalf("held: got %v messages, %v bytes, want <= %v, %v", st.Held, st.HeldBytes, c.MaxHeldMessages, c.MaxHeldBytes)
	}
	if len(l.recv.acks.iv) > maxAckIntervals || len(l.nacks.set.iv) > maxAckIntervals {
		t.Fatalf("ACK sets: got %v and %v intervals, want <= %v", len(l.recv.acks.iv), len(l.nacks.set.iv), maxAckIntervals)
	}
	for _, w := range []*seqWindow{&l.rcv.relWin, &l.recv.win, &l.q.relAcked} {
		if len(w.ring) > 2*w.maxWords {
			t.Fatalf("window words: got %v, want <= %v", len(w.ring), 2*w.maxWords)
		}
	}
	if l.sent.cc.inFlight < 0 || l.q.buffered < 0 || l.sent.hist.oldest > l.sent.hist.next || l.sent.hist.next-l.sent.hist.oldest > MaxInFlight {
		t.Fatalf("send state: inFlight %d, buffered %d, oldest %d, next %d", l.sent.cc.inFlight, l.q.buffered, l.sent.hist.oldest, l.sent.hist.next)
	}
	if l.sent.cc.cwnd < minWindow*l.sent.cc.mtu || l.sent.cc.cwnd > l.sent.cc.maxCwnd {
		t.Fatalf("congestion window: got %v, want %v..%v", l.sent.cc.cwnd, minWindow*l.sent.cc.mtu, l.sent.cc.maxCwnd)
	}
}

// TestFuzzSeeds checks that the seeds do what they were built for, so the
// fuzzer starts from inputs that reach deep into the layer.
func TestFuzzSeeds(t *testing.T) {
	seeds := fuzzSeeds()
	want := []string{
		"hello hello hello hello hello hello hello hello",
		"x x x x x x",
		"aaaabbbcc",
		"\x00 \x03 \x04", // sequenced: 1 and 2 arrive late and are dropped
		"",
		"",
		"\x01", // a datagram number far ahead is taken; its frame is new
	}
	if len(seeds) != len(want) {
		t.Fatalf("got %d seeds, want %d", len(seeds), len(want))
	}
	refused := uint64(0)
	for i, s := range seeds {
		var parts []string
		got, _ := runReceiver(t, s, 0)
		for _, m := range got {
			parts = append(parts, string(m))
		}
		if got := strings.Join(parts, " "); got != want[i] {
			t.Errorf("seed %d delivered: got %q, want %q", i, got, want[i])
		}
		_, st := runReceiver(t, s, fuzzBudget)
		refused += st.BudgetRefused
	}
	if refused == 0 {
		t.Error("no seed has the budget refuse a frame")
	}
}
