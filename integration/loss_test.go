package integration

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
	"github.com/basaltmc/basalt/raknet"
	goraknet "github.com/sandertv/go-raknet"
)

// The lossy link: 10% of datagrams dropped each way, 1% duplicated, and
// 2 ms ± 2 ms of delay, which reorders datagrams.
const (
	lossRate = 0.10
	dupRate  = 0.01
	delay    = 2 * time.Millisecond
	jitter   = 2 * time.Millisecond
)

// lossyProxy starts a proxy to addr with the lossy link. The seed is
// logged; BASALT_PROXY_SEED replays it.
func lossyProxy(t *testing.T, addr string) *proxy.Proxy {
	t.Helper()
	return lossyProxyWith(t, addr, lossyOpts{})
}

// lossyOpts narrows the lossy link.
type lossyOpts struct {
	// on, if not nil, holds the link clean until it is set: a test of what
	// a connection does under loss need not depend on a handshake through
	// it.
	on *atomic.Bool
	// incomingOnly drops and duplicates only datagrams towards the server,
	// so none of the server's ACKs are lost.
	incomingOnly bool
}

// lossyProxyWith is lossyProxy narrowed by o.
func lossyProxyWith(t *testing.T, addr string, o lossyOpts) *proxy.Proxy {
	t.Helper()
	seed, err := proxy.Seed()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, proxy.SeedEnv, seed)
	drop, dup, delayFn := proxy.RandomLoss(seed, lossRate, dupRate, delay, jitter)
	lossy := func(d proxy.Direction) bool {
		return (o.on == nil || o.on.Load()) && (!o.incomingOnly || d == proxy.Incoming)
	}
	p, err := proxy.New(proxy.Opts{
		RemoteAddr:      addr,
		DropPacket:      func(d proxy.Direction, b []byte) bool { return lossy(d) && drop(d, b) },
		DuplicatePacket: func(d proxy.Direction, b []byte) bool { return lossy(d) && dup(d, b) },
		DelayPacket: func(d proxy.Direction, b []byte) time.Duration {
			if o.on != nil && !o.on.Load() {
				return 0
			}
			return delayFn(d, b)
		},
	})
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func logProxy(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	for _, d := range []proxy.Direction{proxy.Incoming, proxy.Outgoing} {
		t.Logf("proxy %v: %+v", d, p.Stats(d))
	}
}

// lossySize mixes small messages with a few that are split.
func lossySize(i int) int {
	switch {
	case i%500 == 499:
		return 64 << 10
	case i%50 == 49:
		return 4 << 10
	default:
		return 5 + i%300
	}
}

const lossyCount = 2000

func TestLossyOurDialerOurListener(t *testing.T) {
	checkGoroutines(t)
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	p := lossyProxy(t, l.Addr().String())
	defer logProxy(t, p)
	client := dial(t, raknet.Dialer{}, p.LocalAddr().String(), 10*time.Second)
	server := acceptOne(t, l, 5*time.Second)

	for _, size := range []int{100 << 10, 1 << 20} {
		d, err := durationBoth(func(from, to packetConn) error {
			_, err := transfer(from, to, 1, func(int) int { return size }, 30*time.Second)
			return err
		}, client, server)
		if err != nil {
			t.Fatalf("%d bytes each way: %v", size, err)
		}
		t.Logf("%d bytes each way in %v", size, d)
	}
	d, err := durationBoth(func(from, to packetConn) error {
		_, err := transfer(from, to, lossyCount, lossySize, 60*time.Second)
		return err
	}, client, server)
	if err != nil {
		t.Fatalf("%d messages each way: %v", lossyCount, err)
	}
	t.Logf("%d messages each way in %v", lossyCount, d)
	cs, ss := client.Stats(), server.Stats()
	t.Logf("client: %+v", cs)
	t.Logf("server: %+v", ss)
	if cs.Resends == 0 || ss.Resends == 0 {
		t.Errorf("resends: client %d, server %d, want some at %v loss", cs.Resends, ss.Resends, lossRate)
	}

	// A graceful close gets through the loss: the server sees the peer's
	// close, not a timeout, and Close returns once the server acknowledged
	// everything, the DisconnectionNotification included. Its ACK goes out
	// in copies, so a Close that waits out its timeout because every copy
	// was lost is rare: of closeTries closes, at most one may, and none may
	// take longer.
	waited := 0
	for i := range closeTries {
		c, s := client, server
		if i > 0 {
			c = dial(t, raknet.Dialer{}, p.LocalAddr().String(), 10*time.Second)
			s = acceptOne(t, l, 5*time.Second)
			if _, err := transfer(c, s, 10, lossySize, 30*time.Second); err != nil {
				t.Fatalf("close %d: messages before it: %v", i, err)
			}
		}
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		took := time.Since(start)
		if _, err := readErr(s, 5*time.Second); !errors.Is(err, raknet.ErrPeerClosed) {
			t.Fatalf("close %d: server read after the client's close: got %v, want ErrPeerClosed", i, err)
		}
		t.Logf("close %d took %v", i, took)
		switch {
		case took > raknet.DefaultCloseTimeout+time.Second:
			t.Errorf("close %d took %v, want at most the close timeout, %v", i, took, raknet.DefaultCloseTimeout)
		case took >= raknet.DefaultCloseTimeout:
			waited++
		}
	}
	if waited > 1 {
		t.Errorf("%d of %d closes waited out their timeout, want at most 1", waited, closeTries)
	}
	if n := waitConnections(l, 0, time.Second); n != 0 {
		t.Errorf("listener connections: got %d, want 0", n)
	}
}

// closeTries is how many graceful closes TestLossyOurDialerOurListener
// makes through the lossy link.
const closeTries = 5

// durationBoth is both, timed.
func durationBoth(f func(from, to packetConn) error, a, b packetConn) (time.Duration, error) {
	start := time.Now()
	err := both(f, a, b)
	return time.Since(start), err
}

// goRakNetLossyDialAttempts bounds the dials TestLossyGoRakNetDialerOurListener
// makes through the lossy link. go-raknet's handshake gives up when one
// stage hears nothing back: it sends OpenConnectionRequest1 only twelve
// times, and resends ConnectionRequest only while the dial lasts. Each
// stage needs one reply through 10% loss each way, so a dial rarely fails,
// and a third failure in a row is a fault, not bad luck.
const goRakNetLossyDialAttempts = 3

// goRakNetLossyDialTimeout bounds each of those dials.
const goRakNetLossyDialTimeout = 10 * time.Second

// lossyGoRakNetDial dials our listener with go-raknet's dialer through the
// lossy link, up to goRakNetLossyDialAttempts times, and fails the test if
// none completes. Each attempt has its own listener and proxy, so a
// connection left half open by a failed one cannot be the one accepted.
func lossyGoRakNetDial(t *testing.T) (theirs *goraknet.Conn, ours *raknet.Conn, p *proxy.Proxy) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
		p := lossyProxy(t, l.Addr().String())
		start := time.Now()
		theirs, err := goraknet.Dialer{}.DialTimeout(p.LocalAddr().String(), goRakNetLossyDialTimeout)
		if err == nil {
			t.Logf("go-raknet dial through the lossy link took %v", time.Since(start))
			t.Cleanup(func() { _ = theirs.Close() })
			return theirs, acceptOne(t, l, 5*time.Second), p
		}
		logProxy(t, p)
		if attempt == goRakNetLossyDialAttempts {
			t.Fatalf("go-raknet dial through the lossy link: %d attempts failed, the last: %v", attempt, err)
		}
		t.Logf("go-raknet dial attempt %d through the lossy link: %v; trying again", attempt, err)
	}
}

// lossyGoRakNetCount is how many messages TestLossyGoRakNetDialerOurListener
// sends each way; every one must arrive.
const lossyGoRakNetCount = 1000

// TestLossyGoRakNetDialerOurListener runs go-raknet's dialer through the
// lossy link: lossyGoRakNetCount messages of lossySize each way, small
// ones and split ones, all delivered exactly once, intact and in order.
// go-raknet acknowledges only every 100 ms, which with the loss holds our
// congestion window down, so the direction towards it takes seconds.
func TestLossyGoRakNetDialerOurListener(t *testing.T) {
	theirs, ours, p := lossyGoRakNetDial(t)
	defer logProxy(t, p)

	const timeout = 45 * time.Second
	var toUs, toThem time.Duration
	errc := make(chan error, 1)
	go func() {
		d, err := transfer(theirs, ours, lossyGoRakNetCount, lossySize, timeout)
		toUs = d
		if err != nil {
			err = fmt.Errorf("go-raknet to our listener: %w", err)
		}
		errc <- err
	}()
	d, err := transfer(ours, theirs, lossyGoRakNetCount, lossySize, timeout)
	toThem = d
	if err != nil {
		err = fmt.Errorf("our listener to go-raknet: %w", err)
	}
	if err := errors.Join(err, <-errc); err != nil {
		t.Fatalf("%d messages each way: %v; our stats %+v", lossyGoRakNetCount, err, ours.Stats())
	}
	checkNoMore(t, ours)
	checkNoMore(t, theirs)
	t.Logf("%d messages each way: to us in %v, to go-raknet in %v", lossyGoRakNetCount, toUs, toThem)
	t.Logf("our stats: %+v", ours.Stats())
}
