package reliability

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

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
	at  time.Time
	seq int
	to  int
	b   []byte
}

type wireHeap []inflight

func (h wireHeap) Len() int { return len(h) }
func (h wireHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h wireHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wireHeap) Push(x any)   { *h = append(*h, x.(inflight)) }
func (h *wireHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// simLink connects two Layers through a lossy, duplicating, reordering
// link driven by a fake clock.
type simLink struct {
	t      testing.TB
	rng    *rand.Rand
	p      linkParams
	now    time.Time
	layers [2]*Layer
	recv   [2][][]byte
	wire   wireHeap
	seq    int
	buf    []byte
	errs   int
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
		c.Deliver = func(msg []byte) { s.recv[i] = append(s.recv[i], append([]byte(nil), msg...)) }
		s.layers[i] = New(c, s.now)
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
				s.seq++
				heap.Push(&s.wire, inflight{at: s.now.Add(delay), seq: s.seq, to: 1 - i, b: append([]byte(nil), d...)})
			}
		}
	}
}

// step advances the clock to the next event and processes it.
func (s *simLink) step() bool {
	s.flush()
	next := time.Time{}
	if len(s.wire) > 0 {
		next = s.wire[0].at
	}
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
	for len(s.wire) > 0 && !s.wire[0].at.After(s.now) {
		d := heap.Pop(&s.wire).(inflight)
		if err := s.layers[d.to].HandleDatagram(s.now, d.b); err != nil {
			s.errs++
			s.t.Errorf("layer %d: %v", d.to, err)
		}
	}
	return true
}

// run steps until cond holds or the simulated deadline passes.
func (s *simLink) run(limit time.Duration, cond func() bool) {
	s.t.Helper()
	end := s.now.Add(limit)
	for !cond() {
		if !s.step() || s.now.After(end) {
			s.t.Fatalf("simulation stalled at %v (stats a=%+v b=%+v)", s.now, s.layers[0].Stats(), s.layers[1].Stats())
		}
	}
}

// send queues p on side dir, stepping the link while the send buffer is
// full (backpressure).
func (s *simLink) send(dir int, p []byte, r wire.Reliability, ch uint8) {
	s.t.Helper()
	for range 1_000_000 {
		_, err := s.layers[dir].Send(s.now, p, r, ch)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrSendBufferFull) {
			s.t.Fatalf("send: %v", err)
		}
		if !s.step() {
			s.t.Fatalf("send buffer full and nothing to do")
		}
	}
	s.t.Fatalf("send buffer stayed full")
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
