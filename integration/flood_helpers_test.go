package integration

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/attack"
	"github.com/basaltmc/basalt/raknet"
	goraknet "github.com/sandertv/go-raknet"
)

// Flood test parameters shared by several tests.
const (
	// joinBound is how long an honest client may take to connect while a
	// flood runs before the test gives up on it. It is a generous bound
	// for correctness (a flood must not lock players out), not the target:
	// how fast players join under a flood (within a second at 20,000
	// forged datagrams/s) is a figure of scripts/flood (attacks ocr2 and
	// ocr2-raknet), measured without -race on a machine of its own.
	joinBound = 10 * time.Second
	// echoTimeout is how long one echo may take before it counts as lost:
	// generous too, for the same reason; the latencies are logged, and
	// scripts/flood (attack junk) reports them as figures.
	echoTimeout = 10 * time.Second
	// serverConnections is MaxConnections of a server for 20 players
	// (max_players plus 10%, at least 4 more).
	serverConnections = 24
	// closeTimeout is the listeners' CloseTimeout: attackers vanish
	// without acknowledging anything, and a test's cleanup should not wait
	// the default 3 s for each of them.
	closeTimeout = 100 * time.Millisecond
)

// addrPort returns a socket address as a netip.AddrPort.
func addrPort(a net.Addr) netip.AddrPort {
	ap := a.(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// echoListener starts a listener on 127.0.0.1 that echoes every message
// of every connection it accepts. Everything stops when the test ends. A
// zero CloseTimeout becomes closeTimeout.
func echoListener(t *testing.T, lc raknet.ListenConfig) (*raknet.Listener, netip.AddrPort) {
	t.Helper()
	if lc.CloseTimeout == 0 {
		lc.CloseTimeout = closeTimeout
	}
	l := listen(t, lc, "127.0.0.1:0")
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.AcceptConn()
			if err != nil {
				return
			}
			wg.Go(func() { attack.Echo(c) })
		}
	})
	// Registered after listen's Close, so it runs first: closing the
	// listener ends the accept loop and every echo loop.
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return l, addrPort(l.Addr())
}

// echoProbe is an attack.EchoProbe whose connection is closed, and whose
// reader is waited for, when the test ends.
type echoProbe struct{ *attack.EchoProbe }

func newEchoProbe(t *testing.T, c packetConn) echoProbe {
	t.Helper()
	p := attack.NewEchoProbe(c)
	t.Cleanup(func() { _ = c.Close(); <-p.Done() })
	return echoProbe{p}
}

// run sends n echoes, one every interval, each waited for up to
// echoTimeout, and stops early when stop is closed (nil: never).
func (p echoProbe) run(n int, interval time.Duration, stop <-chan struct{}) attack.EchoResult {
	return p.Run(n, interval, echoTimeout, stop)
}

// goDialTimed dials addr with go-raknet within timeout and reports how
// long it took.
func goDialTimed(addr netip.AddrPort, timeout time.Duration) (*goraknet.Conn, time.Duration, error) {
	start := time.Now()
	c, err := goraknet.Dialer{}.DialTimeout(addr.String(), timeout)
	return c, time.Since(start), err
}

// startFlood runs s on a goroutine; wait returns its report once it is
// over (it stops by itself), and stop ends it early.
func startFlood(t *testing.T, s attack.Spoofer) (wait func() *attack.Report, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *attack.Report, 1)
	go func() {
		r, err := s.Run(ctx)
		if err != nil {
			t.Errorf("flood: %v", err)
		}
		done <- r
	}()
	var once sync.Once
	var r *attack.Report
	wait = func() *attack.Report {
		once.Do(func() { r = <-done })
		return r
	}
	t.Cleanup(func() { cancel(); wait() })
	return wait, cancel
}

// heapInUse returns the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// dialClients dials n attack clients to server, from ClientAddr(first+i),
// parallel at a time, and abandons them when the test ends.
func dialClients(t *testing.T, server netip.AddrPort, n, first, parallel int) []*attack.Client {
	t.Helper()
	clients := make([]*attack.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			clients[i], errs[i] = attack.Dial(ctx, attack.ClientConfig{Local: netip.AddrPortFrom(attack.ClientAddr(first+i), 0), Server: server})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.Abandon()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d of %d: %v", i, n, err)
		}
	}
	return clients
}
