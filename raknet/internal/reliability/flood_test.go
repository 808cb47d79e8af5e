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

// floodSender models a sender without flow or congestion control, as
// go-raknet's is: it writes every fragment at once, one per datagram,
// resends what a NACK names at once, and otherwise resends everything
// unacknowledged, in random order, only once it is older than a slow
// timeout (go-raknet's is 1.5 times an average that a receiver's refusals
// inflate to seconds).
type floodSender struct {
	rng     *rand.Rand
	next    uint64 // next datagram number
	unacked map[uint64]floodFrame
	timeout time.Duration
}

type floodFrame struct {
	f    wire.Frame
	sent time.Time
}

// send numbers f and returns its datagram.
func (s *floodSender) send(f wire.Frame, now time.Time) []byte {
	n := s.next
	s.next++
	s.unacked[n] = floodFrame{f: f, sent: now}
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: u24(n)}
	return f.Append(h.Append(nil))
}

// ack handles an ACK or NACK and returns the datagrams it resends.
func (s *floodSender) ack(t *testing.T, b []byte, now time.Time) [][]byte {
	var a wire.Ack
	if _, err := a.Decode(b); err != nil {
		t.Fatalf("sender: decode ACK: %v", err)
	}
	var out [][]byte
	for _, r := range a.Ranges {
		for k := range r.Len() {
			n := unwrap(s.next, r.Start+wire.Uint24(k))
			ff, ok := s.unacked[n]
			if !ok {
				continue
			}
			delete(s.unacked, n)
			if a.NACK {
				out = append(out, s.send(ff.f, now))
			}
		}
	}
	return out
}

// tick resends, in random order, everything older than the timeout.
func (s *floodSender) tick(now time.Time) [][]byte {
	var old []uint64
	for n, ff := range s.unacked {
		if now.Sub(ff.sent) > s.timeout {
			old = append(old, n)
		}
	}
	slices.Sort(old)
	s.rng.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
	out := make([][]byte, 0, len(old))
	for _, n := range old {
		ff := s.unacked[n]
		delete(s.unacked, n)
		out = append(out, s.send(ff.f, now))
	}
	return out
}

// TestFloodSenderThroughSmallLimits has a sender without flow control
// write split messages at once into a receiver whose limits hold a small
// part of them, through a link that loses datagrams singly and in long
// runs (a full socket buffer). Every message must arrive, in order, well
// before the sender's slow timeout could have delivered them: refused
// datagrams are asked for again as room frees up, and lost NACKs are
// repeated.
func TestFloodSenderThroughSmallLimits(t *testing.T) {
	seed := seedFromEnv(t)
	t.Logf("seed %d (replay with BASALT_SIM_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const (
		messages = 120
		size     = 16 << 10
		chunk    = 1000
		limit    = 256 << 10 // 16 messages
		delay    = time.Millisecond
		timeout  = 5 * time.Second
	)
	now := time.Unix(1_700_000_000, 0)
	start := now
	var got [][]byte
	recv := withSink(New(Config{MaxDatagram: 1400 - 28, MaxOrderBytes: limit, MaxSplitBytes: limit}, now), func(m []byte, _ bool) bool {
		got = append(got, append([]byte(nil), m...))
		return false
	})
	snd := &floodSender{rng: rng, next: absBase, unacked: map[uint64]floodFrame{}, timeout: timeout}

	var link simnet.Queue[inflight]
	var burstUntil time.Time // toward the receiver, everything is lost until then
	put := func(b []byte, to int, at time.Time) {
		if to == 1 {
			if at.Before(burstUntil) {
				return
			}
			if rng.Float64() < 0.002 {
				burstUntil = at.Add(time.Duration(1+rng.IntN(10)) * time.Millisecond)
				return
			}
		}
		if rng.Float64() < 0.02 {
			return
		}
		link.Push(at.Add(delay), inflight{to: to, b: b})
	}
	want := make([][]byte, messages)
	frag := 0
	for i := range messages {
		msg := make([]byte, size)
		for j := range msg {
			msg[j] = byte(i*7 + j)
		}
		want[i] = msg
		count := (size + chunk - 1) / chunk
		for k := range count {
			p := msg[k*chunk : min(size, (k+1)*chunk)]
			f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(frag), OrderIndex: wire.Uint24(i),
				Split: true, SplitID: uint16(i), SplitCount: uint32(count), SplitIndex: uint32(k), Payload: p}
			frag++
			// Unpaced: everything leaves within the first few
			// milliseconds.
			put(snd.send(f, now), 1, now.Add(time.Duration(frag)*time.Microsecond))
		}
	}
	nextTick := now.Add(300 * time.Millisecond)
	for len(got) < messages {
		next := nextTick
		if at := link.Next(); !at.IsZero() && at.Before(next) {
			next = at
		}
		if d := recv.NextDeadline(now); !d.IsZero() && d.Before(next) {
			next = d
		}
		if next.After(now) {
			now = next
		}
		if now.Sub(start) > 4*timeout {
			t.Fatalf("after %v: %d of %d messages delivered, %d unacknowledged (stats %+v)", now.Sub(start), len(got), messages, len(snd.unacked), recv.Stats())
		}
		for d, ok := link.PopDue(now); ok; d, ok = link.PopDue(now) {
			if d.to == 1 {
				_ = recv.handleT(now, d.b) // refusals are expected
				continue
			}
			for _, b := range snd.ack(t, d.b, now) {
				put(b, 1, now)
			}
		}
		if !now.Before(nextTick) {
			for _, b := range snd.tick(now) {
				put(b, 1, now)
			}
			nextTick = now.Add(300 * time.Millisecond)
		}
		for {
			d := recv.AppendDatagram(nil, now)
			if d == nil {
				break
			}
			put(d, 0, now)
		}
	}
	took := now.Sub(start)
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d: got %d bytes, want message %d (%d bytes)", i, len(got[i]), i, len(want[i]))
		}
	}
	st := recv.Stats()
	t.Logf("%d messages of %d B in %v simulated; receiver refused %d datagrams, sent %d NACKs", messages, size, took, st.Errors, st.NacksSent)
	if st.Errors == 0 {
		t.Errorf("the receiver refused nothing: the limits were not exercised")
	}
	// The sender's timeout alone takes 5 s a round, and the limits hold
	// 16 of the 120 messages.
	if took > 2*timeout {
		t.Errorf("took %v, want under %v: refused and lost datagrams waited for the sender's timeout", took, 2*timeout)
	}
}
