package reliability

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func TestHeldBudget(t *testing.T) {
	type op struct {
		take, release int // a size to take (if it fits) or release, -1 for none
		fits          bool
	}
	cases := []struct {
		name string
		ops  []op
		msgs int
		size int
	}{
		{name: "within both", ops: []op{{take: 10, release: -1, fits: true}, {take: 20, release: -1, fits: true}}, msgs: 2, size: 30},
		{name: "message bound", ops: []op{{take: 1, release: -1, fits: true}, {take: 1, release: -1, fits: true}, {take: 1, release: -1, fits: true}, {take: 1, release: -1}}, msgs: 3, size: 3},
		{name: "byte bound", ops: []op{{take: 60, release: -1, fits: true}, {take: 41, release: -1}, {take: 40, release: -1, fits: true}}, msgs: 2, size: 100},
		{name: "one oversize message when empty", ops: []op{{take: 500, release: -1, fits: true}, {take: 1, release: -1}}, msgs: 1, size: 500},
		{name: "released makes room", ops: []op{{take: 100, release: -1, fits: true}, {take: 1, release: -1}, {take: -1, release: 100}, {take: 100, release: -1, fits: true}}, msgs: 1, size: 100},
		{name: "release never goes below zero", ops: []op{{take: -1, release: 50}, {take: 10, release: -1, fits: true}}, msgs: 1, size: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := heldBudget{maxMsgs: 3, maxBytes: 100}
			for i, o := range tc.ops {
				if o.release >= 0 {
					h.release(o.release)
					continue
				}
				if got := h.claim(o.take); got != o.fits {
					t.Fatalf("op %d: claim(%d) got %v, want %v", i, o.take, got, o.fits)
				}
			}
			if h.msgs != tc.msgs || h.bytes != tc.size {
				t.Errorf("held: got %d messages, %d bytes, want %d, %d", h.msgs, h.bytes, tc.msgs, tc.size)
			}
		})
	}
}

// heldPeer is a receiving Layer that keeps every message for a reader
// that takes them when told to.
type heldPeer struct {
	*sinkLayer
	t      *testing.T
	cfg    Config
	queue  [][]byte // kept, not yet consumed
	got    [][]byte // every message delivered, in order
	checks int
}

func newHeldPeer(t *testing.T, cfg Config) *heldPeer {
	p := &heldPeer{t: t}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = testMaxDatagram
	}
	sink := func(m []byte, _ bool) bool {
		// The bound holds with the message counted, but for one message
		// alone, which is always delivered.
		st := p.Stats()
		if st.Held > 1 && (st.Held > p.cfg.MaxHeldMessages || st.HeldBytes > p.cfg.MaxHeldBytes) {
			t.Fatalf("delivered %d bytes: %d messages, %d bytes held: bound %d, %d", len(m), st.Held, st.HeldBytes, p.cfg.MaxHeldMessages, p.cfg.MaxHeldBytes)
		}
		c := append([]byte(nil), m...)
		p.queue = append(p.queue, c)
		p.got = append(p.got, c)
		return true
	}
	cfg.fill()
	p.cfg = cfg
	p.sinkLayer = withSink(New(cfg, t0), sink)
	return p
}

// check fails the test if the held messages exceed the bound.
func (p *heldPeer) check() {
	p.t.Helper()
	p.checks++
	st := p.Stats()
	if st.Held != len(p.queue) {
		p.t.Fatalf("Stats.Held: got %d, want %d", st.Held, len(p.queue))
	}
	if st.Held > p.cfg.MaxHeldMessages || (st.Held > 1 && st.HeldBytes > p.cfg.MaxHeldBytes) {
		p.t.Fatalf("held: got %d messages, %d bytes, want <= %d, %d", st.Held, st.HeldBytes, p.cfg.MaxHeldMessages, p.cfg.MaxHeldBytes)
	}
}

// consume has the reader take n held messages (all of them for n < 0).
func (p *heldPeer) consume(now time.Time, n int) {
	for ; n != 0 && len(p.queue) > 0; n-- {
		m := p.queue[0]
		p.queue = p.queue[1:]
		p.consumedT(now, len(m))
		p.check()
	}
}

// TestHeldBoundIsExact floods a receiver whose reader is slow with every
// kind of message from a sender that ignores flow control: at no step do
// the messages held exceed MaxHeldMessages or MaxHeldBytes, and every
// reliable message still arrives once, ordered ones in order.
func TestHeldBoundIsExact(t *testing.T) {
	seed := seedFromEnv(t)
	t.Logf("seed %d (replay with BASALT_SIM_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	recv := newHeldPeer(t, Config{MaxHeldMessages: 8, MaxHeldBytes: 6000})
	snd := &floodSender{rng: rng, next: absBase, unacked: map[uint64]floodFrame{}, timeout: 2 * time.Second}
	now := t0
	var link simnet.Queue[inflight]
	seq := 0
	put := func(b []byte, to int, at time.Time) {
		seq++
		link.Push(at.Add(time.Millisecond), inflight{to: to, b: b})
	}
	// Message i is (kind i%5): reliable, ordered on channel 0, ordered on
	// channel 1 in 3 fragments, reliable in 2 fragments, unreliable.
	const messages = 200
	rel, order := uint32(0), [2]uint32{}
	split := uint16(0)
	reliable := 0
	for i := range messages {
		p := msg(i, 100+i*7%900)
		var frames []wire.Frame
		switch i % 5 {
		case 0:
			frames = []wire.Frame{{Reliability: wire.Reliable, Payload: p}}
		case 1:
			frames = []wire.Frame{{Reliability: wire.ReliableOrdered, OrderIndex: wire.Uint24(order[0]), Payload: p}}
			order[0]++
		case 2, 3:
			count, r, ch := 3, wire.ReliableOrdered, uint8(1)
			if i%5 == 3 {
				count, r, ch = 2, wire.Reliable, 0
			}
			part := (len(p) + count - 1) / count
			for k := range count {
				f := wire.Frame{Reliability: r, OrderChannel: ch, Split: true, SplitID: split, SplitCount: uint32(count), SplitIndex: uint32(k), Payload: p[k*part : min(len(p), (k+1)*part)]}
				if r.Ordered() {
					f.OrderIndex = wire.Uint24(order[1])
				}
				frames = append(frames, f)
			}
			if r.Ordered() {
				order[1]++
			}
			split++
		case 4:
			frames = []wire.Frame{{Reliability: wire.Unreliable, Payload: p}}
		}
		for _, f := range frames {
			if f.Reliability.Reliable() {
				f.ReliableIndex = wire.Uint24(rel)
				rel++
			}
			put(snd.send(f, now), 1, now.Add(time.Duration(seq)*time.Microsecond))
		}
		if i%5 != 4 {
			reliable++
		}
	}
	nextTick, nextRead := now.Add(300*time.Millisecond), now.Add(100*time.Millisecond)
	delivered := func() int {
		n := 0
		for _, m := range recv.got {
			if checkMsg(t, m)%5 != 4 {
				n++
			}
		}
		return n
	}
	for delivered() < reliable {
		next := nextTick
		if nextRead.Before(next) {
			next = nextRead
		}
		if at := link.Next(); !at.IsZero() && at.Before(next) {
			next = at
		}
		if d := recv.NextDeadline(now); !d.IsZero() && d.Before(next) {
			next = d
		}
		if next.After(now) {
			now = next
		}
		if now.Sub(t0) > time.Minute {
			t.Fatalf("after %v: %d of %d reliable messages delivered (stats %+v)", now.Sub(t0), delivered(), reliable, recv.Stats())
		}
		for d, ok := link.PopDue(now); ok; d, ok = link.PopDue(now) {
			if d.to == 1 {
				_ = recv.handleT(now, d.b)
				recv.check()
				continue
			}
			for _, b := range snd.ack(t, d.b, now) {
				put(b, 1, now)
			}
		}
		if !now.Before(nextRead) {
			// A slow reader: one message every 5 ms.
			recv.consume(now, 1)
			nextRead = now.Add(5 * time.Millisecond)
		}
		if !now.Before(nextTick) {
			for _, b := range snd.tick(now) {
				put(b, 1, now)
			}
			nextTick = now.Add(300 * time.Millisecond)
		}
		for d := recv.AppendDatagram(nil, now); d != nil; d = recv.AppendDatagram(nil, now) {
			put(d, 0, now)
		}
	}
	seen := map[int]int{}
	last := [2]int{-1, -1}
	for _, m := range recv.got {
		i := checkMsg(t, m)
		seen[i]++
		if k := i % 5; k == 1 || k == 2 {
			if ch := k - 1; i <= last[ch] {
				t.Fatalf("ordered channel %d: message %d after %d", ch, i, last[ch])
			} else {
				last[ch] = i
			}
		}
	}
	for i := range messages {
		if i%5 != 4 && seen[i] != 1 {
			t.Errorf("reliable message %d: delivered %d times, want 1", i, seen[i])
		}
		if seen[i] > 1 {
			t.Errorf("message %d: delivered %d times", i, seen[i])
		}
	}
	st := recv.Stats()
	t.Logf("delivered %d messages in %v simulated, %d checks; %d refusals", len(recv.got), now.Sub(t0), recv.checks, st.Errors)
	if st.Errors == 0 {
		t.Errorf("nothing was refused: the bound was not exercised")
	}
}

// TestHeldOversizeMessage checks that a message larger than MaxHeldBytes
// is delivered when nothing is held, and that another waits until the
// reader took it: the budget never wedges, and is never exceeded by two.
func TestHeldOversizeMessage(t *testing.T) {
	const limit = 1000
	b := newHeldPeer(t, Config{MaxHeldBytes: limit})
	big := func(i uint32) wire.Frame {
		return reliableFrame(i, bytes.Repeat([]byte{byte(i)}, 1200))
	}
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, big(0)))
	b.check()
	if len(b.queue) != 1 {
		t.Fatalf("held after an oversize message: got %d, want 1", len(b.queue))
	}
	handleRefused(t, b.sinkLayer, t0, dataDatagram(1, big(1)), ErrHeldFull)
	if len(b.got) != 1 {
		t.Fatalf("delivered: got %d, want 1", len(b.got))
	}
	// A split one larger than the limit waits the same way.
	mustHandle(t, b.sinkLayer, t0, dataDatagram(2, splitFrame(2, 5, 2, 0, make([]byte, 900))))
	handleRefused(t, b.sinkLayer, t0, dataDatagram(3, splitFrame(3, 5, 2, 1, make([]byte, 900))), ErrHeldFull)
	// Nothing is pulled while the reader holds the room (a probe for
	// numbers not yet used may go out: the split message waits).
	now := t0.Add(time.Second)
	for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
		if a := decodeAck(t, d); a.NACK && a.Ranges[0].Start <= 3 {
			t.Fatalf("got NACK %v with the reader stalled, want none of datagrams 1 or 3", a.Ranges)
		}
	}
	// The reader takes it: the refused datagrams are pulled at once.
	b.consume(now, -1)
	var named []wire.AckRange
	for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
		if a := decodeAck(t, d); a.NACK {
			named = append(named, a.Ranges...)
		}
	}
	// The room of one message takes one refusal at a time.
	if want := []wire.AckRange{{Start: 1, End: 1}}; !slices.Equal(named, want) {
		t.Fatalf("NACKed after the read: got %v, want %v", named, want)
	}
	mustHandle(t, b.sinkLayer, now, dataDatagram(4, big(1)))
	b.check()
	b.consume(now, -1)
	mustHandle(t, b.sinkLayer, now, dataDatagram(5, splitFrame(3, 5, 2, 1, make([]byte, 900))))
	b.check()
	if len(b.got) != 3 || len(b.got[1]) != 1200 || len(b.got[2]) != 1800 {
		t.Fatalf("delivered: got %d messages, want 3 (1200, 1200 and 1800 bytes)", len(b.got))
	}
}

// TestHeldOrderedWaitForConsumed delivers ordered messages beyond the
// room for them: they are acknowledged and wait in the ordering queue,
// then Consumed delivers them in order, one per message consumed.
func TestHeldOrderedWaitForConsumed(t *testing.T) {
	b := newHeldPeer(t, Config{MaxHeldMessages: 2})
	frame := func(i uint32) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(i), OrderIndex: wire.Uint24(i), OrderChannel: 2, Payload: []byte{byte(i)}}
	}
	// 0, 1 and 2 arrive in order, 3 before 4: 0 and 1 are delivered.
	for i, order := range []uint32{0, 1, 2, 4, 3} {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(uint32(i), frame(order)))
		b.check()
		if !acked(b.sinkLayer, uint32(i)) {
			t.Fatalf("datagram %d: got not acknowledged, want acknowledged", i)
		}
	}
	if len(b.got) != 2 {
		t.Fatalf("delivered before a read: got %d, want 2", len(b.got))
	}
	if got := b.rcv.order.get(2).queued; got != 3 {
		t.Fatalf("queued: got %d, want 3", got)
	}
	// Waiting for the reader is not waiting for the network: no probes.
	if b.waiting() {
		t.Errorf("waiting: got true with only the reader to wait for, want false")
	}
	for want := 3; want <= 5; want++ {
		b.consume(t0, 1)
		if len(b.got) != want {
			t.Fatalf("after a read: got %d delivered, want %d", len(b.got), want)
		}
	}
	b.consume(t0, -1)
	for i, m := range b.got {
		if m[0] != byte(i) {
			t.Fatalf("delivery %d: got message %d, want %d", i, m[0], i)
		}
	}
	if b.rcv.order.bytes != 0 || b.rcv.order.get(2).ring != nil {
		t.Errorf("ordering queue after the reads: got %d bytes, ring %d, want 0, none", b.rcv.order.bytes, len(b.rcv.order.get(2).ring))
	}
}

// TestHeldConsumedDuringDeliver has Deliver consume a message itself: the
// layer delivers what that made room for once Deliver returns, in order.
func TestHeldConsumedDuringDeliver(t *testing.T) {
	var l *sinkLayer
	var got []byte
	var kept [][]byte
	l = withSink(New(Config{MaxDatagram: testMaxDatagram, MaxHeldMessages: 2}, t0), func(m []byte, _ bool) bool {
		got = append(got, m[0])
		if m[0] == 2 {
			// The reader takes the oldest kept message meanwhile.
			l.consumedT(t0, len(kept[0]))
			kept = kept[1:]
		}
		kept = append(kept, []byte{m[0]})
		return true
	})
	for i := range uint32(4) {
		f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(i), OrderIndex: wire.Uint24(i), Payload: []byte{byte(i)}}
		mustHandle(t, l, t0, dataDatagram(i, f))
	}
	if want := []byte{0, 1}; !bytes.Equal(got, want) {
		t.Fatalf("delivered: got %v, want %v", got, want)
	}
	l.consumedT(t0, len(kept[0]))
	kept = kept[1:]
	// 2 took the room 0 left and gave back 1's: 3 follows.
	if want := []byte{0, 1, 2, 3}; !bytes.Equal(got, want) {
		t.Errorf("delivered: got %v, want %v", got, want)
	}
	if st := l.Stats(); st.Held != len(kept) || st.Held != 2 {
		t.Errorf("Stats.Held: got %d, want %d", st.Held, len(kept))
	}
}

// TestReaderStallRecoversByPulls stalls the reader of a busy connection
// for seconds, long enough for the sender's RTO to back off to its
// ceiling, then has it read everything: the datagrams refused for want of
// room are pulled at once, and the rest arrives within a few round trips,
// not after the sender's next timeout. Ordered messages wait in their
// queue meanwhile; the unordered ones between them are refused.
func TestReaderStallRecoversByPulls(t *testing.T) {
	const (
		messages = 600
		delay    = 10 * time.Millisecond // one way
		stall    = 5 * time.Second
		held     = 64
	)
	s := newSimLink(t, seedFromEnv(t), linkParams{delay: delay}, Config{MaxHeldMessages: held})
	s.refusals = true
	var queue [][]byte
	got := make([]int, messages)
	lastOrdered, delivered := -1, 0
	s.onDeliver = func(side int, m []byte) bool {
		if side == 0 {
			return false
		}
		i := checkMsg(t, m)
		if got[i]++; got[i] > 1 {
			t.Fatalf("message %d delivered twice", i)
		}
		if i%2 == 1 {
			if i < lastOrdered {
				t.Fatalf("ordered message %d after %d", i, lastOrdered)
			}
			lastOrdered = i
		}
		delivered++
		queue = append(queue, append([]byte(nil), m...))
		return true
	}
	for i := range messages {
		r := wire.Reliable
		if i%2 == 1 {
			r = wire.ReliableOrdered
		}
		s.send(0, msg(i, 200+i%300), r, 0)
	}
	start := s.now
	for s.now.Sub(start) < stall && s.step() {
	}
	s.now = start.Add(stall)
	st := s.layers[1].Stats()
	if delivered != held || st.Held != held || st.Errors == 0 {
		t.Fatalf("after the stall: %d delivered, %d held, %d refused, want %d, %d and some", delivered, st.Held, st.Errors, held, held)
	}
	rto := s.layers[0].Stats().RTO
	caughtUp := s.now
	var resumed time.Time // the first message over the network after the read
	before := delivered
	s.run(time.Minute, func() bool {
		for len(queue) > 0 {
			m := queue[0]
			queue = queue[1:]
			s.layers[1].consumedT(s.now, len(m))
		}
		if resumed.IsZero() && delivered > before && s.now.After(caughtUp) {
			resumed = s.now
		}
		before = delivered
		return delivered == messages
	})
	took := s.now.Sub(caughtUp)
	t.Logf("sender RTO %v at the end of the stall; delivery resumed %v after the read, the rest took %v", rto, resumed.Sub(caughtUp), took)
	const rtt = 2 * delay
	if got, want := resumed.Sub(caughtUp), 3*rtt; got > want {
		t.Errorf("delivery resumed %v after the read, want within %v", got, want)
	}
	// The rest comes as fast as the sender's window, back at its floor
	// after the timeouts of the stall, grows: a fraction of its RTO.
	if want := 20 * rtt; took > want {
		t.Errorf("the rest took %v after the read, want within %v (the sender's RTO was %v)", took, want, rto)
	}
}
