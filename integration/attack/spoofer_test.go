package attack

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// reflector answers every datagram with reply bytes, again after delay
// if delay is not 0, and records the sources it saw.
type reflector struct {
	pc    *net.UDPConn
	reply int
	delay time.Duration
	mu    sync.Mutex
	seen  map[netip.Addr]int
	wg    sync.WaitGroup
}

func newReflector(t *testing.T, reply int, delay time.Duration) *reflector {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// Small datagrams take about a kilobyte each of the receive buffer
	// on loopback: the default buffer would drop part of a burst.
	_ = pc.SetReadBuffer(4 << 20)
	r := &reflector{pc: pc, reply: reply, delay: delay, seen: make(map[netip.Addr]int)}
	r.wg.Go(func() {
		buf := make([]byte, 65536)
		out := make([]byte, reply)
		for {
			_, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.seen[from.Addr()]++
			r.mu.Unlock()
			_, _ = pc.WriteToUDPAddrPort(out, from)
			if delay > 0 {
				time.AfterFunc(delay, func() { _, _ = pc.WriteToUDPAddrPort(out, from) })
			}
		}
	})
	t.Cleanup(func() { _ = pc.Close(); r.wg.Wait() })
	return r
}

func (r *reflector) addr() netip.AddrPort { return r.pc.LocalAddr().(*net.UDPAddr).AddrPort() }

func TestSpooferCountsEveryReply(t *testing.T) {
	tests := []struct {
		name      string
		sources   int
		prefixes  int
		count     int
		reply     int
		delay     time.Duration
		wantAfter int
	}{
		{"answered once", 300, 3, 600, 100, 0, 0},
		{"answered again after the flood", 50, 1, 50, 40, 600 * time.Millisecond, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := newReflector(t, tc.reply, tc.delay)
			s := Spoofer{
				Target: ref.addr(), Sources: Sources(tc.sources, tc.prefixes), Shape: Ping(),
				Rate: 5000, Count: tc.count, Duration: 5 * time.Second, Grace: 350 * time.Millisecond, Linger: time.Second,
			}
			r, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v", r)
			if got, want := r.Sent, (Counts{tc.count, tc.count * UnconnectedPingSize}); got != want {
				t.Errorf("sent: got %v, want %v", got, want)
			}
			replies := tc.count
			if tc.delay > 0 {
				replies *= 2
			}
			if got, want := r.Received, (Counts{replies, replies * tc.reply}); got != want {
				t.Errorf("received: got %v, want %v", got, want)
			}
			if got := r.After.Datagrams; got != tc.wantAfter {
				t.Errorf("after the flood: got %v, want %v", got, tc.wantAfter)
			}
			if got := r.Replied; got != tc.sources {
				t.Errorf("sources replied: got %v, want %v", got, tc.sources)
			}
			if got, want := r.Amplification(), float64(replies*tc.reply)/float64(tc.count*UnconnectedPingSize); got != want {
				t.Errorf("amplification: got %v, want %v", got, want)
			}
			if got := r.ByID[0].Datagrams; got != replies {
				t.Errorf("replies by ID 0: got %v, want %v", got, replies)
			}
			ref.mu.Lock()
			defer ref.mu.Unlock()
			if got := len(ref.seen); got != tc.sources {
				t.Errorf("distinct sources the target saw: got %v, want %v", got, tc.sources)
			}
			for a := range ref.seen {
				if !SpoofRange.Contains(a) {
					t.Errorf("target saw source %v outside %v", a, SpoofRange)
				}
			}
		})
	}
}

func TestSpooferRefusesNonLoopback(t *testing.T) {
	tests := []struct {
		name    string
		target  netip.AddrPort
		sources []netip.Addr
	}{
		{"target", netip.MustParseAddrPort("10.0.0.1:19132"), Sources(1, 1)},
		{"source", netip.MustParseAddrPort("127.0.0.1:19132"), []netip.Addr{netip.MustParseAddr("192.168.1.1")}},
		{"ipv6 target", netip.MustParseAddrPort("[::1]:19132"), Sources(1, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Spoofer{Target: tc.target, Sources: tc.sources, Shape: Ping(), Duration: time.Second}
			if _, err := s.Run(context.Background()); err == nil {
				t.Errorf("got nil error, want a refusal")
			}
		})
	}
}

func TestSpooferStopsAtDuration(t *testing.T) {
	ref := newReflector(t, 1, 0)
	s := Spoofer{Target: ref.addr(), Sources: Sources(10, 1), Shape: Ping(), Rate: 1000, Count: 1_000_000, Duration: 300 * time.Millisecond}
	start := time.Now()
	r, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The machine may be loaded: only the bounds are checked.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("run took %v, want about 300ms plus grace", d)
	}
	if got := r.Sent.Datagrams; got == 0 || got > 301 {
		t.Errorf("sent at 1000/s for 300ms: got %d datagrams, want 1 to 301", got)
	}
}

func TestSources(t *testing.T) {
	tests := []struct {
		n, prefixes, wantPrefixes int
	}{
		{10, 1, 1},
		{10, 5, 5},
		{1000, 1, 4},
		{10000, 40, 40},
	}
	for _, tc := range tests {
		got := Sources(tc.n, tc.prefixes)
		seen := make(map[netip.Addr]bool)
		prefixes := make(map[netip.Prefix]bool)
		for _, a := range got {
			if seen[a] {
				t.Errorf("Sources(%d, %d): %v twice", tc.n, tc.prefixes, a)
			}
			seen[a] = true
			prefixes[Prefix24(a)] = true
			if !SpoofRange.Contains(a) || a.As4()[3] == 0 || a.As4()[3] == 255 {
				t.Errorf("Sources(%d, %d): got %v, want a host address in %v", tc.n, tc.prefixes, a, SpoofRange)
			}
		}
		if len(got) != tc.n || len(prefixes) != tc.wantPrefixes {
			t.Errorf("Sources(%d, %d): got %d addresses in %d /24s, want %d in %d", tc.n, tc.prefixes, len(got), len(prefixes), tc.n, tc.wantPrefixes)
		}
	}
	if a := ClientAddr(0); SpoofRange.Contains(a) || a == netip.MustParseAddr("127.0.0.1") {
		t.Errorf("ClientAddr(0): got %v, want one outside %v and not 127.0.0.1", a, SpoofRange)
	}
}

func TestShapeSizes(t *testing.T) {
	src, target := netip.MustParseAddrPort("127.64.0.1:1000"), netip.MustParseAddrPort("127.0.0.1:19132")
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name     string
		shape    Shape
		min, max int
		first    byte
	}{
		{"ping", Ping(), UnconnectedPingSize, UnconnectedPingSize, IDUnconnectedPing},
		{"OCR1 18", OCR1(OCR1MinSize), 18, 18, IDOpenConnectionRequest1},
		{"OCR1 probe", OCR1(1464), 1464, 1464, IDOpenConnectionRequest1},
		{"OCR2", OCR2(NoCookie), 34, 34, IDOpenConnectionRequest2},
		{"OCR2 forged", OCR2(ForgedCookie), 39, 39, IDOpenConnectionRequest2},
		{"ConnectionRequest", ConnectionRequest(), 4 + 6 + 18, 4 + 6 + 18, dataFlags},
		{"big", Big(MaxUDPPayload), MaxUDPPayload, MaxUDPPayload, dataFlags},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for n := range 4 {
				b := tc.shape([]byte{0xaa}, src, target, n, rng)[1:]
				if len(b) < tc.min || len(b) > tc.max || b[0] != tc.first {
					t.Errorf("datagram %d: got %d bytes starting %#x, want %d to %d starting %#x", n, len(b), b[0], tc.min, tc.max, tc.first)
				}
			}
		})
	}
	for n := range 100 {
		if b := Junk(1400)(nil, src, target, n, rng); len(b) == 0 || len(b) > 1400 {
			t.Errorf("junk %d: got %d bytes, want 1 to 1400", n, len(b))
		}
	}
}
