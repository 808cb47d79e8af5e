package reliability

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// linkParams describe the simulated network between two layers.
type linkParams struct {
	loss, dup   float64
	delay       time.Duration
	jitter      time.Duration
	maxDatagram int
}

// inflight is a datagram on the simulated wire.
type inflight struct {
	to int
	b  []byte
}

// simLink connects two Layers through a lossy, duplicating, reordering
// link driven by a fake clock.
type simLink struct {
	t      testing.TB
	rng    *rand.Rand
	p      linkParams
	now    time.Time
	layers [2]*sinkLayer
	recv   [2][][]byte
	wire   simnet.Queue[inflight]
	buf    []byte
	free   [][]byte // datagram buffers to reuse
	errs   int

	// onDeliver, if set, receives every delivered message instead of recv
	// (the slice is only valid during the call) and answers for Deliver.
	onDeliver func(side int, msg []byte) bool
	// refusals, if set, lets HandleDatagram refuse datagrams (a receive
	// limit tested on purpose); errs still counts them.
	refusals bool
	// receipts collects the receipts each side's layer reported.
	receipts [2][]Receipt
}

func seedFromEnv(t testing.TB) uint64 {
	if s := os.Getenv("BASALT_SIM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("BASALT_SIM_SEED: %v", err)
		}
		return v
	}
	return rand.Uint64()
}

func newSimLink(t testing.TB, seed uint64, p linkParams, cfg Config) *simLink {
	t.Logf("seed %d (replay with BASALT_SIM_SEED=%d)", seed, seed)
	s := &simLink{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), p: p, now: time.Unix(1_700_000_000, 0)}
	if p.maxDatagram == 0 {
		s.p.maxDatagram = 1400 - 28
	}
	for i := range 2 {
		c := cfg
		c.MaxDatagram = s.p.maxDatagram
		sink := func(msg []byte, _ bool) bool {
			if s.onDeliver != nil {
				return s.onDeliver(i, msg)
			}
			s.recv[i] = append(s.recv[i], append([]byte(nil), msg...))
			return false
		}
		s.layers[i] = withSink(New(c, s.now), sink)
	}
	return s
}

// flush drains both layers' outgoing datagrams onto the wire.
func (s *simLink) flush() {
	for i, l := range s.layers {
		for {
			d := l.AppendDatagram(s.buf[:0], s.now)
			if d == nil {
				break
			}
			s.buf = d
			if len(d) > s.p.maxDatagram {
				s.t.Fatalf("datagram of %d bytes exceeds %d", len(d), s.p.maxDatagram)
			}
			copies := 1
			if s.rng.Float64() < s.p.dup {
				copies = 2
			}
			for range copies {
				if s.rng.Float64() < s.p.loss {
					continue
				}
				delay := s.p.delay
				if s.p.jitter > 0 {
					delay += time.Duration(s.rng.Int64N(int64(s.p.jitter)))
				}
				var b []byte
				if n := len(s.free); n > 0 {
					b, s.free = s.free[n-1], s.free[:n-1]
				}
				s.wire.Push(s.now.Add(delay), inflight{to: 1 - i, b: append(b[:0], d...)})
			}
		}
		// A retransmission timeout reports an unreliable message lost.
		s.receipts[i] = append(s.receipts[i], l.Receipts()...)
	}
}

// step advances the clock to the next event and processes it.
func (s *simLink) step() bool {
	s.flush()
	next := s.wire.Next()
	for _, l := range s.layers {
		if d := l.NextDeadline(s.now); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	if next.IsZero() {
		return false
	}
	if next.After(s.now) {
		s.now = next
	}
	for d, ok := s.wire.PopDue(s.now); ok; d, ok = s.wire.PopDue(s.now) {
		if err := s.layers[d.to].handleT(s.now, d.b); err != nil {
			s.errs++
			if !s.refusals {
				s.t.Errorf("layer %d: %v", d.to, err)
			}
		}
		s.receipts[d.to] = append(s.receipts[d.to], s.layers[d.to].Receipts()...)
		// The layer keeps no reference to a handled datagram.
		s.free = append(s.free, d.b)
	}
	return true
}

// run steps until cond holds or the simulated deadline passes.
func (s *simLink) run(limit time.Duration, cond func() bool) {
	s.t.Helper()
	end := s.now.Add(limit)
	for !cond() {
		// A step that sends only what the link then loses can leave
		// nothing scheduled with cond now true.
		stepped := s.step()
		if !stepped && cond() {
			return
		}
		if !stepped || s.now.After(end) {
			s.t.Fatalf("simulation stalled at %v (stats a=%+v b=%+v)", s.now, s.layers[0].Stats(), s.layers[1].Stats())
		}
	}
}

// send queues p on side dir, stepping the link while the send buffer is
// full (backpressure). It returns the receipt id.
func (s *simLink) send(dir int, p []byte, r wire.Reliability, ch uint8) uint32 {
	s.t.Helper()
	for range 1_000_000 {
		id, err := s.layers[dir].Send(p, r, ch)
		if err == nil {
			return id
		}
		if !errors.Is(err, ErrSendBufferFull) {
			s.t.Fatalf("send: %v", err)
		}
		if !s.step() {
			s.t.Fatalf("send buffer full and nothing to do")
		}
	}
	s.t.Fatalf("send buffer stayed full")
	return 0
}

// msg builds message i of size n on the given stream: a header with the
// index, then filler, then a CRC of everything before it.
func msg(i, n int) []byte {
	b := make([]byte, max(n, 12))
	binary.BigEndian.PutUint32(b, uint32(i))
	binary.BigEndian.PutUint32(b[4:], uint32(n))
	for k := 8; k < len(b)-4; k++ {
		b[k] = byte(i + k)
	}
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
	return b
}

func checkMsg(t testing.TB, b []byte) int {
	t.Helper()
	if len(b) < 12 || crc32.ChecksumIEEE(b[:len(b)-4]) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		t.Fatalf("message of %d bytes fails its checksum", len(b))
	}
	return int(binary.BigEndian.Uint32(b))
}

func TestSimulatedLinkReliableOrdered(t *testing.T) {
	cases := []struct {
		name string
		n    int
		p    linkParams
	}{
		{"clean", 3000, linkParams{delay: 10 * time.Millisecond}},
		{"1%", 3000, linkParams{loss: 0.01, dup: 0.01, delay: 10 * time.Millisecond, jitter: 5 * time.Millisecond}},
		{"10%", 2000, linkParams{loss: 0.10, dup: 0.05, delay: 20 * time.Millisecond, jitter: 15 * time.Millisecond}},
		{"30%", 1000, linkParams{loss: 0.30, dup: 0.10, delay: 20 * time.Millisecond, jitter: 20 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimLink(t, seedFromEnv(t), tc.p, Config{InitialSend: uint32(wire.MaxUint24) - 100, InitialRecv: uint32(wire.MaxUint24) - 100})
			n := tc.n
			sizes := []int{20, 100, 1000, 5000, 40000}
			for i := range n {
				for dir := range 2 {
					s.send(dir, msg(i, sizes[i%len(sizes)]), wire.ReliableOrdered, uint8(i%3))
				}
				if i%50 == 0 {
					s.step()
				}
			}
			s.run(time.Hour, func() bool { return len(s.recv[0]) >= n && len(s.recv[1]) >= n })
			for dir := range 2 {
				if len(s.recv[dir]) != n {
					t.Fatalf("side %d got %d messages, want %d", dir, len(s.recv[dir]), n)
				}
				last := [3]int{-1, -1, -1}
				for _, b := range s.recv[dir] {
					i := checkMsg(t, b)
					if i <= last[i%3] {
						t.Fatalf("side %d channel %d: message %d after %d", dir, i%3, i, last[i%3])
					}
					last[i%3] = i
				}
			}
			t.Logf("a: %+v", s.layers[0].Stats())
		})
	}
}

// mixKind is one stream of TestSimulatedLinkMixed: a reliability on a
// channel with a cycle of message sizes.
type mixKind struct {
	r     wire.Reliability
	ch    uint8
	sizes []int
}

// mixKinds are the streams each side sends, round robin. Sizes above
// about 1360 bytes are split; an UnreliableSequenced message that is split
// travels as ReliableSequenced.
var mixKinds = []mixKind{
	{wire.ReliableOrdered, 0, []int{20, 100, 1000, 3000}},
	{wire.ReliableOrdered, 1, []int{200, 5000}},
	{wire.Reliable, 9, []int{30, 500, 2500}},
	{wire.ReliableSequenced, 0, []int{40, 800, 2000}},
	{wire.UnreliableSequenced, 4, []int{50, 600, 1300, 2000}},
	{wire.Unreliable, 0, []int{60, 1200}},
	{wire.ReliableWithAckReceipt, 0, []int{70, 3000}},
	{wire.ReliableOrderedWithAckReceipt, 5, []int{90, 1500}},
	{wire.UnreliableWithAckReceipt, 0, []int{80, 900}},
	{wire.ReliableOrdered, 2, []int{10}},
}

// bigKind carries the split messages of up to 4 MiB.
var bigKind = mixKind{wire.ReliableOrdered, 6, []int{1 << 20, 4 << 20}}

// mixSide is what one side sent and what the other side received of it.
type mixSide struct {
	kind      []mixKind // by message id
	delivered []int     // deliveries by message id
	lastOrd   [wire.NumOrderChannels]int
	lastSeq   [wire.NumOrderChannels]int
	receipt   map[uint32]mixKind // receipt id to the kind sent with it
	reliable  int                // messages that must be delivered
	got       int                // of those, delivered at least once
}

func TestSimulatedLinkMixed(t *testing.T) {
	cases := []struct {
		name string
		n    int
		p    linkParams
	}{
		{"0%", 1500, linkParams{dup: 0.02, delay: 10 * time.Millisecond, jitter: 8 * time.Millisecond}},
		{"1%", 1500, linkParams{loss: 0.01, dup: 0.02, delay: 10 * time.Millisecond, jitter: 8 * time.Millisecond}},
		{"10%", 1000, linkParams{loss: 0.10, dup: 0.05, delay: 20 * time.Millisecond, jitter: 15 * time.Millisecond}},
		{"30%", 600, linkParams{loss: 0.30, dup: 0.10, delay: 20 * time.Millisecond, jitter: 20 * time.Millisecond}},
	}
	const start = uint32(wire.MaxUint24) - 20
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimLink(t, seedFromEnv(t), tc.p, Config{InitialSend: start, InitialRecv: start})
			var sides [2]*mixSide
			for i := range sides {
				sides[i] = &mixSide{receipt: map[uint32]mixKind{}}
				for c := range sides[i].lastOrd {
					sides[i].lastOrd[c], sides[i].lastSeq[c] = -1, -1
				}
			}
			// Side i's deliveries were sent by side 1-i.
			s.onDeliver = func(side int, b []byte) bool {
				m := sides[1-side]
				id := checkMsg(t, b)
				if id >= len(m.kind) {
					t.Fatalf("side %d: delivered message %d was never sent", side, id)
				}
				k := m.kind[id]
				if m.delivered[id]++; m.delivered[id] > 1 {
					t.Fatalf("side %d: %v message %d delivered %d times", side, k.r, id, m.delivered[id])
				}
				if mustArrive(k.r) {
					m.got++
				}
				switch {
				case k.r.Sequenced():
					if id <= m.lastSeq[k.ch] {
						t.Fatalf("side %d: %v channel %d went back: message %d after %d", side, k.r, k.ch, id, m.lastSeq[k.ch])
					}
					m.lastSeq[k.ch] = id
				case k.r.Ordered():
					if id <= m.lastOrd[k.ch] {
						t.Fatalf("side %d: %v channel %d: message %d after %d", side, k.r, k.ch, id, m.lastOrd[k.ch])
					}
					m.lastOrd[k.ch] = id
				}
				return false
			}
			send := func(dir int, k mixKind, size int) {
				m := sides[dir]
				id := len(m.kind)
				m.kind = append(m.kind, k)
				m.delivered = append(m.delivered, 0)
				if mustArrive(k.r) {
					m.reliable++
				}
				rid := s.send(dir, msg(id, size), k.r, k.ch)
				if k.r.AckReceipt() {
					if rid == 0 || m.receipt[rid].r != 0 {
						t.Fatalf("side %d: receipt id %d is zero or reused", dir, rid)
					}
					m.receipt[rid] = k
				}
			}
			for i := range tc.n {
				k := mixKinds[i%len(mixKinds)]
				for dir := range 2 {
					send(dir, k, k.sizes[(i/len(mixKinds))%len(k.sizes)])
					if i == tc.n/4 || i == 3*tc.n/4 {
						send(dir, bigKind, bigKind.sizes[i*2/tc.n])
					}
				}
				if i%20 == 0 {
					s.step()
				}
			}
			done := func() bool {
				for dir, m := range sides {
					if m.got < m.reliable || len(s.receipts[dir]) < len(m.receipt) {
						return false
					}
				}
				return true
			}
			s.run(time.Hour, done)
			// Let late duplicates, ACKs and receipts settle.
			s.run(time.Hour, func() bool {
				return s.wire.Len() == 0 && idle(s.layers[0]) && idle(s.layers[1]) && s.layers[0].NextDeadline(s.now).IsZero() && s.layers[1].NextDeadline(s.now).IsZero()
			})
			for dir, m := range sides {
				checkMixSide(t, dir, m, s.receipts[dir], tc.p.loss == 0)
				checkWrapped(t, s.layers[dir], s.layers[1-dir])
				if st := s.layers[dir].Stats(); st.Errors != 0 {
					t.Errorf("side %d Stats.Errors: got %v, want 0", dir, st.Errors)
				}
			}
			t.Logf("a: %+v", s.layers[0].Stats())
		})
	}
}

// mustArrive reports whether every message of r must be delivered: the
// reliable kinds that do not skip stale messages.
func mustArrive(r wire.Reliability) bool { return r.Reliable() && !r.Sequenced() }

// checkMixSide checks what side dir sent: reliable messages delivered
// exactly once (the delivery callback already refused a second delivery),
// unreliable ones delivered when nothing was lost, one receipt per
// receipted message.
func checkMixSide(t *testing.T, dir int, m *mixSide, receipts []Receipt, lossless bool) {
	t.Helper()
	for id, k := range m.kind {
		switch {
		case mustArrive(k.r) && m.delivered[id] != 1:
			t.Errorf("side %d: %v message %d delivered: got %v times, want 1", dir, k.r, id, m.delivered[id])
		case lossless && (k.r == wire.Unreliable || k.r == wire.UnreliableWithAckReceipt) && m.delivered[id] != 1:
			t.Errorf("side %d: lossless %v message %d delivered: got %v times, want 1", dir, k.r, id, m.delivered[id])
		}
	}
	seen := map[uint32]int{}
	for _, r := range receipts {
		k, ok := m.receipt[r.ID]
		if !ok {
			t.Errorf("side %d: receipt for unknown id %d", dir, r.ID)
			continue
		}
		seen[r.ID]++
		if k.r.Reliable() && !r.Acked {
			t.Errorf("side %d: %v receipt %d: got acked=%v, want true", dir, k.r, r.ID, r.Acked)
		}
	}
	for id, k := range m.receipt {
		if seen[id] != 1 {
			t.Errorf("side %d: %v receipt %d: got %v calls, want 1", dir, k.r, id, seen[id])
		}
	}
}

// checkWrapped checks that every u24 counter the traffic from a to b used
// passed 2^24: datagram numbers, reliable indexes, order and sequence
// indexes, on the sending and the receiving side.
func checkWrapped(t *testing.T, a, b *sinkLayer) {
	t.Helper()
	wrapLimit := uint64(absBase) + 1<<24
	counters := []struct {
		name string
		v    uint64
	}{
		{"send datagram number", a.sent.hist.next},
		{"send reliable index", a.q.relNext},
		{"send order index ch0", a.q.indexes(0).order},
		{"send sequence index ch4", a.q.indexes(4).seq},
		{"recv datagram number", b.recv.high},
		{"recv reliable index", b.rcv.relWin.base},
		{"recv order index ch0", b.rcv.order.get(0).expected},
		{"recv order index ch1", b.rcv.order.get(1).expected},
	}
	for _, c := range counters {
		if c.v < wrapLimit {
			t.Errorf("%s did not wrap: got %v, want >= %v", c.name, c.v-absBase, wrapLimit-absBase)
		}
	}
}

// BenchmarkSimulatedLink measures messages per second of CPU time through
// the simulated link, one direction, with up to 256 KiB queued.
func BenchmarkSimulatedLink(b *testing.B) {
	for _, loss := range []float64{0, 0.05} {
		for _, size := range []int{100, 16 << 10} {
			b.Run(fmt.Sprintf("loss=%v/size=%d", loss, size), func(b *testing.B) {
				p := linkParams{loss: loss, delay: 10 * time.Millisecond, jitter: time.Millisecond}
				s := newSimLink(b, 1, p, Config{})
				delivered := 0
				s.onDeliver = func(side int, _ []byte) bool {
					if side == 1 {
						delivered++
					}
					return false
				}
				m := msg(0, size)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					s.send(0, m, wire.ReliableOrdered, 0)
					for s.layers[0].Buffered() > 256<<10 {
						s.step()
					}
				}
				b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "msgs/s")
				b.ReportMetric(float64(s.layers[0].Stats().FramesResent)/float64(b.N), "resends/msg")
				b.StopTimer()
				s.run(time.Hour, func() bool { return delivered == b.N })
			})
		}
	}
}
