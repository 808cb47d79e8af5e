package proxy_test

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/integration/proxy"
)

// These tests do not call t.Parallel: TestCloseLeavesNoGoroutines counts
// goroutines process-wide.

// waitTimeout bounds every wait for traffic or counters to settle.
const waitTimeout = 5 * time.Second

// echoServer is a plain UDP echo server that records who sent what.
type echoServer struct {
	conn *net.UDPConn

	mu    sync.Mutex
	peers map[netip.AddrPort]int // datagrams received per source
}

// newEchoServer starts an echo server on addr ("127.0.0.1:0", "[::1]:0");
// the test's cleanup stops it.
func newEchoServer(t *testing.T, addr string) *echoServer {
	t.Helper()
	laddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{conn: conn, peers: make(map[netip.AddrPort]int)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.peers[from]++
			s.mu.Unlock()
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return s
}

// received returns how many datagrams the server has read in total.
func (s *echoServer) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.peers {
		n += c
	}
	return n
}

// peerList returns the distinct source addresses the server has seen.
func (s *echoServer) peerList() []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []netip.AddrPort
	for p := range s.peers {
		ps = append(ps, p)
	}
	return ps
}

// newProxy starts a proxy in front of s; the test's cleanup closes it.
func newProxy(t *testing.T, s *echoServer, opts proxy.Opts) *proxy.Proxy {
	t.Helper()
	opts.RemoteAddr = s.conn.LocalAddr().String()
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: got %v, want nil", err)
		}
	})
	return p
}

// dial returns a client socket connected to p.
func dial(t *testing.T, p *proxy.Proxy) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, p.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send writes each payload to c.
func send(t *testing.T, c *net.UDPConn, payloads ...[]byte) {
	t.Helper()
	for _, b := range payloads {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// recvN reads n datagrams from c, failing the test if they do not arrive
// within waitTimeout.
func recvN(t *testing.T, c *net.UDPConn, n int) [][]byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	defer c.SetReadDeadline(time.Time{})
	got := make([][]byte, 0, n)
	buf := make([]byte, 1<<16)
	for len(got) < n {
		m, err := c.Read(buf)
		if err != nil {
			t.Fatalf("read datagram %d of %d: %v", len(got)+1, n, err)
		}
		got = append(got, bytes.Clone(buf[:m]))
	}
	return got
}

// recvExtra drains c for a short while and returns whatever arrives; the
// caller expects nothing.
func recvExtra(c *net.UDPConn) [][]byte {
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	var got [][]byte
	buf := make([]byte, 1<<16)
	for {
		m, err := c.Read(buf)
		if err != nil {
			return got
		}
		got = append(got, bytes.Clone(buf[:m]))
	}
}

// eventually reports whether cond holds within waitTimeout, looking
// again every millisecond: the proxy's counters offer no event to wait on.
func eventually(cond func() bool) bool {
	return poll.Until(waitTimeout, time.Millisecond, cond)
}

// wantStats waits for p's counters in direction d to equal want. Counters
// are bumped after the write returns, so a reply can beat its count.
func wantStats(
	t *testing.T, p *proxy.Proxy, d proxy.Direction, want proxy.Stats,
) {
	t.Helper()
	eventually(func() bool { return p.Stats(d) == want })
	if got := p.Stats(d); got != want {
		t.Errorf("%v stats: got %+v, want %+v", d, got, want)
	}
}

// numbered returns n one-byte payloads 0, 1, …, n-1.
func numbered(n int) [][]byte {
	ps := make([][]byte, n)
	for i := range ps {
		ps[i] = []byte{byte(i)}
	}
	return ps
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		opts proxy.Opts
		want string
	}{
		{"no remote", proxy.Opts{}, "RemoteAddr"},
		{"bad remote", proxy.Opts{RemoteAddr: "127.0.0.1:99999"}, "remote"},
		{"bad listen", proxy.Opts{
			RemoteAddr: "127.0.0.1:1", Listen: "127.0.0.1:99999",
		}, "listen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := proxy.New(tc.opts)
			if err == nil {
				p.Close()
				t.Fatalf("got nil error, want one mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestDefaultListenAddr(t *testing.T) {
	p := newProxy(t, newEchoServer(t, "127.0.0.1:0"), proxy.Opts{})
	a := p.LocalAddr().(*net.UDPAddr)
	if !a.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("got %v, want 127.0.0.1", a.IP)
	}
	if a.Port == 0 || p.LocalPort() != a.Port {
		t.Errorf("LocalPort: got %d, LocalAddr port %d, want equal and non-zero",
			p.LocalPort(), a.Port)
	}
}

func TestForwardsUnchanged(t *testing.T) {
	s := newEchoServer(t, "127.0.0.1:0")
	p := newProxy(t, s, proxy.Opts{})
	c := dial(t, p)
	payloads := [][]byte{
		{},
		{0x00},
		[]byte("hello, basalt"),
		bytes.Repeat([]byte{0xfe, 0x01}, 700), // a Bedrock-sized datagram
		bytes.Repeat([]byte{0xab}, 60000),     // near the UDP limit
		{0x84, 0x00, 0x00, 0x00, 0x40, 0x00, 0x90}, // a RakNet-ish header
	}
	// One at a time, so a reply pairs with its request.
	for i, want := range payloads {
		send(t, c, want)
		got := recvN(t, c, 1)[0]
		if !bytes.Equal(got, want) {
			t.Errorf("payload %d: got %d bytes % x…, want %d bytes % x…",
				i, len(got), got[:min(len(got), 8)], len(want),
				want[:min(len(want), 8)])
		}
	}
	n := uint64(len(payloads))
	wantStats(t, p, proxy.Incoming, proxy.Stats{Received: n, Forwarded: n})
	wantStats(t, p, proxy.Outgoing, proxy.Stats{Received: n, Forwarded: n})
}

// odd reports whether a numbered payload has an odd number.
func odd(b []byte) bool { return b[0]%2 == 1 }

func TestDropPacket(t *testing.T) {
	const n = 20
	tests := []struct {
		dir          proxy.Direction
		wantIn       proxy.Stats
		wantOut      proxy.Stats
		wantAtServer int
	}{
		{
			dir:          proxy.Incoming,
			wantIn:       proxy.Stats{Received: n, Forwarded: n / 2, Dropped: n / 2},
			wantOut:      proxy.Stats{Received: n / 2, Forwarded: n / 2},
			wantAtServer: n / 2,
		},
		{
			dir:          proxy.Outgoing,
			wantIn:       proxy.Stats{Received: n, Forwarded: n},
			wantOut:      proxy.Stats{Received: n, Forwarded: n / 2, Dropped: n / 2},
			wantAtServer: n,
		},
	}
	for _, tc := range tests {
		t.Run(tc.dir.String(), func(t *testing.T) {
			s := newEchoServer(t, "127.0.0.1:0")
			p := newProxy(t, s, proxy.Opts{
				DropPacket: func(d proxy.Direction, b []byte) bool {
					return d == tc.dir && odd(b)
				},
			})
			c := dial(t, p)
			send(t, c, numbered(n)...)

			var got []int
			for _, b := range recvN(t, c, n/2) {
				got = append(got, int(b[0]))
			}
			slices.Sort(got)
			var want []int
			for i := 0; i < n; i += 2 {
				want = append(want, i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("echoes: got %v, want %v", got, want)
			}
			wantStats(t, p, proxy.Incoming, tc.wantIn)
			wantStats(t, p, proxy.Outgoing, tc.wantOut)
			if extra := recvExtra(c); len(extra) != 0 {
				t.Errorf("got %d datagrams that should have been dropped: %v",
					len(extra), extra)
			}
			if got := s.received(); got != tc.wantAtServer {
				t.Errorf("server received: got %d, want %d",
					got, tc.wantAtServer)
			}
		})
	}
}

func TestDuplicatePacket(t *testing.T) {
	const n = 10
	tests := []struct {
		dir          proxy.Direction
		wantIn       proxy.Stats
		wantOut      proxy.Stats
		wantAtServer int
	}{
		{
			dir:          proxy.Incoming,
			wantIn:       proxy.Stats{Received: n, Forwarded: 2 * n, Duplicated: n},
			wantOut:      proxy.Stats{Received: 2 * n, Forwarded: 2 * n},
			wantAtServer: 2 * n,
		},
		{
			dir:          proxy.Outgoing,
			wantIn:       proxy.Stats{Received: n, Forwarded: n},
			wantOut:      proxy.Stats{Received: n, Forwarded: 2 * n, Duplicated: n},
			wantAtServer: n,
		},
	}
	for _, tc := range tests {
		t.Run(tc.dir.String(), func(t *testing.T) {
			s := newEchoServer(t, "127.0.0.1:0")
			p := newProxy(t, s, proxy.Opts{
				DuplicatePacket: func(d proxy.Direction, _ []byte) bool {
					return d == tc.dir
				},
			})
			c := dial(t, p)
			send(t, c, numbered(n)...)

			count := make(map[byte]int)
			for _, b := range recvN(t, c, 2*n) {
				count[b[0]]++
			}
			for i := range byte(n) {
				if count[i] != 2 {
					t.Errorf("payload %d: got %d copies, want 2", i, count[i])
				}
			}
			wantStats(t, p, proxy.Incoming, tc.wantIn)
			wantStats(t, p, proxy.Outgoing, tc.wantOut)
			if extra := recvExtra(c); len(extra) != 0 {
				t.Errorf("got %d datagrams beyond two copies each: %v",
					len(extra), extra)
			}
			if got := s.received(); got != tc.wantAtServer {
				t.Errorf("server received: got %d, want %d",
					got, tc.wantAtServer)
			}
		})
	}
}

func TestDelayPacketReorders(t *testing.T) {
	const (
		n = 5
		// Every datagram must reach the proxy before base passes, even on
		// a loaded machine under -race; step separates release times.
		base = 150 * time.Millisecond
		step = 30 * time.Millisecond
	)
	for _, dir := range []proxy.Direction{proxy.Incoming, proxy.Outgoing} {
		t.Run(dir.String(), func(t *testing.T) {
			s := newEchoServer(t, "127.0.0.1:0")
			// Fixed before New so the proxy's goroutines see it.
			t0 := time.Now()
			p := newProxy(t, s, proxy.Opts{
				// Datagram i is released at t0+base+(n-1-i)*step: later
				// sends get earlier, fixed release times, so the order
				// reverses regardless of when each one arrives.
				DelayPacket: func(d proxy.Direction, b []byte) time.Duration {
					if d != dir {
						return 0
					}
					i := time.Duration(b[0])
					return time.Until(t0.Add(base + (n-1-i)*step))
				},
			})
			c := dial(t, p)
			send(t, c, numbered(n)...)

			var got []int
			for _, b := range recvN(t, c, n) {
				got = append(got, int(b[0]))
			}
			want := []int{4, 3, 2, 1, 0}
			if !slices.Equal(got, want) {
				t.Errorf("order: got %v, want %v", got, want)
			}
			last := base + (n-1)*step
			if el := time.Since(t0); el < last {
				t.Errorf("last echo after %v, want at least %v", el, last)
			}
			st := p.Stats(dir)
			if st.Delayed != n {
				t.Errorf("%v Delayed: got %d, want %d", dir, st.Delayed, n)
			}
		})
	}
}

func TestTwoClientsTwoUpstreams(t *testing.T) {
	s := newEchoServer(t, "127.0.0.1:0")
	p := newProxy(t, s, proxy.Opts{})
	a, b := dial(t, p), dial(t, p)
	for range 2 {
		send(t, a, []byte("from a"))
		send(t, b, []byte("from b"))
		if got := recvN(t, a, 1)[0]; string(got) != "from a" {
			t.Errorf("client a: got %q, want %q", got, "from a")
		}
		if got := recvN(t, b, 1)[0]; string(got) != "from b" {
			t.Errorf("client b: got %q, want %q", got, "from b")
		}
	}
	peers := s.peerList()
	if len(peers) != 2 {
		t.Fatalf("server peers: got %v, want 2 distinct", peers)
	}
	clients := []netip.AddrPort{
		a.LocalAddr().(*net.UDPAddr).AddrPort(),
		b.LocalAddr().(*net.UDPAddr).AddrPort(),
	}
	for _, peer := range peers {
		if slices.Contains(clients, peer) {
			t.Errorf("server saw client %v directly, want a proxy socket", peer)
		}
		s.mu.Lock()
		n := s.peers[peer]
		s.mu.Unlock()
		if n != 2 {
			t.Errorf("peer %v: got %d datagrams, want 2 (one socket per client)",
				peer, n)
		}
	}
}

func TestIPv6(t *testing.T) {
	probe, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("::1 unavailable: %v", err)
	}
	probe.Close()

	s := newEchoServer(t, "[::1]:0")
	p := newProxy(t, s, proxy.Opts{Listen: "[::1]:0"})
	if ip := p.LocalAddr().(*net.UDPAddr).IP; !ip.Equal(net.IPv6loopback) {
		t.Errorf("LocalAddr: got %v, want ::1", ip)
	}
	c := dial(t, p)
	send(t, c, []byte("over v6"))
	if got := recvN(t, c, 1)[0]; string(got) != "over v6" {
		t.Errorf("got %q, want %q", got, "over v6")
	}
	for _, peer := range s.peerList() {
		if !peer.Addr().Is6() || peer.Addr().Is4In6() {
			t.Errorf("server peer: got %v, want an IPv6 address", peer)
		}
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	leaktest.Check(t)
	s := newEchoServer(t, "127.0.0.1:0")

	opts := proxy.Opts{
		RemoteAddr: s.conn.LocalAddr().String(),
		// Outgoing replies wait an hour, so timers are armed at Close.
		DelayPacket: func(d proxy.Direction, _ []byte) time.Duration {
			if d == proxy.Outgoing {
				return time.Hour
			}
			return 0
		},
	}
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	const clients = 3
	for range clients {
		c := dial(t, p)
		send(t, c, []byte("ping"))
	}
	eventually(func() bool { return p.Stats(proxy.Outgoing).Delayed == clients })
	if got := p.Stats(proxy.Outgoing).Delayed; got != clients {
		t.Fatalf("Outgoing Delayed: got %d, want %d", got, clients)
	}
	if got := len(leaktest.Goroutines(proxyCode)); got == 0 {
		t.Error("goroutines of the proxy while running: got none, want some")
	}

	// Concurrent and repeated Close calls all return the same result.
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- p.Close() }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Close: got %v, want nil", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	if got := p.Stats(proxy.Outgoing).Forwarded; got != 0 {
		t.Errorf("Outgoing Forwarded after Close: got %d, want 0", got)
	}

	// Close waits for its goroutines to be done; one may still be
	// returning from its deferred Done when Close does, so its stack is
	// given a moment to unwind.
	var got []string
	eventually(func() bool { got = leaktest.Goroutines(proxyCode); return len(got) == 0 })
	if len(got) != 0 {
		t.Errorf("goroutines of the proxy after Close: got %d, want none:\n%s", len(got), strings.Join(got, "\n\n"))
	}
}

// proxyCode is the prefix of the proxy's functions (not its tests').
const proxyCode = leaktest.Module + "integration/proxy."
