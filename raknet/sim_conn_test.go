package raknet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Whole connections over a simulated network, on synctest's virtual
// clock: timing is asserted exactly, and the tests use only the package's
// exported API.

// simServer is where every simulated listener listens.
var simServer = netip.MustParseAddrPort("127.0.0.1:19132")

// simLinger is waited at the end of every test before checking that no
// socket is left open: longer than a dialed connection whose peer closed
// first keeps its socket to acknowledge stale data.
const simLinger = 2 * time.Second

// simWatchdog is the virtual time after which a test is failed and its
// connections closed. Idle connections ping forever, so virtual time
// never stops for a test stuck in a read: without it, such a test would
// run until the real -timeout.
const simWatchdog = 2 * time.Minute

// simEnv is a listener on a simulated network and a dialer for it. Build
// it inside the synctest bubble of the test.
type simEnv struct {
	t *testing.T
	n *simnet.Network
	l *Listener
	d Dialer

	mu    sync.Mutex
	conns []*Conn // dialed through the env
}

// newSimEnv starts a listener with lc on a new network. The listener and
// every connection dialed through the env are closed when the test ends,
// and then no socket may be left open.
func newSimEnv(t *testing.T, cfg simnet.Config, lc ListenConfig, d Dialer) *simEnv {
	t.Helper()
	n := simnet.New(cfg)
	lc.ListenPacket = n.ListenPacket
	d.ListenPacket = n.ListenPacket
	// Registered first, so it runs after every other cleanup.
	t.Cleanup(func() {
		time.Sleep(simLinger)
		if open := n.Sockets(); len(open) > 0 {
			t.Errorf("got sockets %v open after everything was closed, want none", open)
		}
	})
	l, err := lc.Listen(simServer.String())
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	e := &simEnv{t: t, n: n, l: l, d: d}
	wd := time.AfterFunc(simWatchdog, func() {
		t.Errorf("still running after %v of virtual time: closing everything", simWatchdog)
		_ = l.Close()
		e.mu.Lock()
		conns := e.conns
		e.mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	t.Cleanup(func() { wd.Stop() })
	return e
}

// track has c closed by the watchdog.
func (e *simEnv) track(c *Conn) {
	e.mu.Lock()
	e.conns = append(e.conns, c)
	e.mu.Unlock()
}

// dialOne dials the listener once.
func (e *simEnv) dialOne() (*Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := e.d.DialContext(ctx, simServer.String())
	if err == nil {
		e.track(c)
		e.t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// dial connects a client and accepts its connection.
func (e *simEnv) dial() (client, server *Conn) {
	e.t.Helper()
	client, err := e.dialOne()
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	return client, e.accept()
}

// accept accepts a connection.
func (e *simEnv) accept() *Conn {
	e.t.Helper()
	c, err := e.l.AcceptConn()
	if err != nil {
		e.t.Fatalf("accept: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// sent returns how many datagrams the socket at ap has written.
func (e *simEnv) sent(ap netip.AddrPort) uint64 {
	e.t.Helper()
	s, ok := e.n.SocketStats(ap)
	if !ok {
		e.t.Fatalf("no socket at %v", ap)
	}
	return s.Sent
}

// simAddr returns a connection's local address.
func simAddr(c *Conn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// simAlive fails the test if c is closed.
func simAlive(t *testing.T, name string, c *Conn) {
	t.Helper()
	select {
	case <-c.Done():
		_, err := c.ReadPacket()
		t.Fatalf("%s closed (%v), want it open", name, err)
	default:
	}
}

// simCarries reports whether b is a data datagram with an unsplit frame
// whose message starts with id.
func simCarries(b []byte, id byte) bool {
	if len(b) == 0 || b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		return false
	}
	var h wire.DatagramHeader
	n, err := h.Decode(b)
	if err != nil {
		return false
	}
	for rest := b[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			return false
		}
		rest = rest[k:]
		if !f.Split && len(f.Payload) > 0 && f.Payload[0] == id {
			return true
		}
	}
	return false
}

// simID starts every test message, as 0xfe starts Bedrock's: the first
// byte of a message is its ID, and low ones are RakNet's own.
const simID = 0xfe

// simPattern fills test messages. Messages are copied from it rather
// than built byte by byte, which the race detector makes slow.
var simPattern = func() []byte {
	b := make([]byte, 1<<16+256)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}()

// simMessage returns message i of size bytes (5 to 65536): simID, its
// index, then bytes that depend on it.
func simMessage(i, size int) []byte {
	b := make([]byte, max(size, 5))
	b[0] = simID
	binary.BigEndian.PutUint32(b[1:], uint32(i))
	copy(b[5:], simPattern[i%256:])
	return b
}

// simRead is what a reader saw: the messages and the error that ended
// it, and when that came.
type simRead struct {
	msgs  [][]byte
	err   error
	errAt time.Time
}

// simReadAll reads c until an error in a goroutine.
func simReadAll(c *Conn) <-chan simRead {
	ch := make(chan simRead, 1)
	go func() {
		var r simRead
		for {
			p, err := c.ReadPacket()
			if err != nil {
				r.err, r.errAt = err, time.Now()
				ch <- r
				return
			}
			r.msgs = append(r.msgs, p)
		}
	}()
	return ch
}

// simCheckMessages checks that msgs are messages 0 to n-1, in order, of
// the sizes size(i).
func simCheckMessages(t *testing.T, msgs [][]byte, n int, size func(int) int) {
	t.Helper()
	if len(msgs) != n {
		t.Errorf("got %d messages, want %d", len(msgs), n)
	}
	for i, p := range msgs[:min(len(msgs), n)] {
		if want := simMessage(i, size(i)); !bytes.Equal(p, want) {
			got := -1
			if len(p) >= 5 {
				got = int(binary.BigEndian.Uint32(p[1:]))
			}
			t.Fatalf("message %d: got message %d of %d bytes, want %d of %d", i, got, len(p), i, len(want))
		}
	}
}

// simWithin reports whether got is want, or later by at most slack.
func simWithin(got, want, slack time.Duration) bool { return got >= want && got <= want+slack }

func TestSimKeepalive(t *testing.T) {
	const (
		timeout  = time.Second
		interval = 100 * time.Millisecond
		delay    = 10 * time.Millisecond
		window   = time.Second
	)
	synctest.Test(t, func(t *testing.T) {
		cfg := ListenConfig{Timeout: timeout, PingInterval: interval}
		e := newSimEnv(t, simnet.Config{Seed: 1}, cfg, Dialer{Timeout: timeout, PingInterval: interval})
		e.n.SetConditions(simnet.Conditions{Delay: delay})
		client, server := e.dial()
		cAddr := simAddr(client)
		// Ten timeouts idle. Each side must send something every
		// interval, or its peer would have nothing to reset its timeout
		// with; one ping exchange per interval costs each side two
		// datagrams (its ping or pong, and the ACK of the other's).
		for i := range 10 {
			c0, s0 := e.sent(cAddr), e.sent(simServer)
			time.Sleep(window)
			c, s := e.sent(cAddr)-c0, e.sent(simServer)-s0
			lo, hi := uint64(window/interval)-1, 2*uint64(window/interval)
			if c < lo || c > hi || s < lo || s > hi {
				t.Errorf("second %d: got %d datagrams from the client, %d from the server, want %d-%d each", i, c, s, lo, hi)
			}
		}
		simAlive(t, "client", client)
		simAlive(t, "server", server)
		for _, c := range []*Conn{client, server} {
			if got := c.Latency(); !simWithin(got, 2*delay, 5*time.Millisecond) {
				t.Errorf("got latency %v, want %v", got, 2*delay)
			}
		}
	})
}

func TestSimPeerTimeout(t *testing.T) {
	const (
		timeout  = time.Second
		interval = 100 * time.Millisecond
		delay    = 10 * time.Millisecond
	)
	for _, silent := range []string{"client", "server"} {
		t.Run(silent+" silent", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := ListenConfig{Timeout: timeout, PingInterval: interval}
				e := newSimEnv(t, simnet.Config{Seed: 1}, cfg, Dialer{Timeout: timeout, PingInterval: interval})
				client, server := e.dial()
				from, observer, other := simAddr(client), server, client
				if silent == "server" {
					from, observer, other = simServer, client, server
				}
				var mu sync.Mutex
				var drop bool
				var last time.Time
				e.n.SetConditions(simnet.Conditions{Delay: delay, Drop: func(f, _ netip.AddrPort, _ []byte) bool {
					if f != from {
						return false
					}
					mu.Lock()
					defer mu.Unlock()
					if !drop {
						last = time.Now()
					}
					return drop
				}})
				observed, silenced := simReadAll(observer), simReadAll(other)
				time.Sleep(3*timeout + 37*time.Millisecond)
				mu.Lock()
				drop = true
				lastSent := last
				mu.Unlock()

				r := <-observed
				want := lastSent.Add(delay + timeout)
				if !errors.Is(r.err, ErrPeerTimeout) || !errors.Is(r.err, net.ErrClosed) {
					t.Errorf("got %v, want ErrPeerTimeout and net.ErrClosed", r.err)
				}
				if got := r.errAt.Sub(want); got < 0 || got > 5*time.Millisecond {
					t.Errorf("timed out %v after the last datagram arrived, want %v", r.errAt.Sub(lastSent.Add(delay)), timeout)
				}
				t.Logf("timed out %v after the last datagram arrived", r.errAt.Sub(lastSent.Add(delay)))
				// The silenced side hears nothing once its peer gave up.
				if r := <-silenced; !errors.Is(r.err, ErrPeerTimeout) || r.errAt.After(want.Add(timeout+interval)) {
					t.Errorf("silenced side: got %v %v after its peer, want ErrPeerTimeout within %v", r.err, r.errAt.Sub(want), timeout+interval)
				}
			})
		})
	}
}

func TestSimReadDeadline(t *testing.T) {
	type step struct {
		at       time.Duration // when to set it
		deadline time.Duration // from the start; negative clears
	}
	tests := []struct {
		name  string
		steps []step
		want  time.Duration // when the read fails
	}{
		{"fixed", []step{{0, 50 * time.Millisecond}}, 50 * time.Millisecond},
		{"moved later", []step{{0, 50 * time.Millisecond}, {20 * time.Millisecond, 130 * time.Millisecond}}, 130 * time.Millisecond},
		{"moved earlier", []step{{0, 100 * time.Millisecond}, {20 * time.Millisecond, 30 * time.Millisecond}}, 30 * time.Millisecond},
		{"moved to the past", []step{{0, 100 * time.Millisecond}, {20 * time.Millisecond, time.Millisecond}}, 20 * time.Millisecond},
		{"cleared and set again", []step{{0, 50 * time.Millisecond}, {20 * time.Millisecond, -1}, {400 * time.Millisecond, 700 * time.Millisecond}}, 700 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
				e.n.SetConditions(simnet.Conditions{Delay: 10 * time.Millisecond})
				client, server := e.dial()
				t0 := time.Now()
				set := func(s step) {
					var dl time.Time
					if s.deadline >= 0 {
						dl = t0.Add(s.deadline)
					}
					if err := server.SetReadDeadline(dl); err != nil {
						t.Fatal(err)
					}
				}
				set(tc.steps[0])
				done := make(chan error)
				go func() {
					_, err := server.ReadPacket()
					done <- err
				}()
				for _, s := range tc.steps[1:] {
					time.Sleep(s.at - time.Since(t0))
					set(s)
				}
				err := <-done
				var ne net.Error
				if got := time.Since(t0); got != tc.want || !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
					t.Errorf("got %v after %v, want a timeout wrapping os.ErrDeadlineExceeded after %v", err, got, tc.want)
				}
				// The connection outlives a deadline.
				_ = server.SetReadDeadline(time.Time{})
				if _, err := client.Write([]byte("after")); err != nil {
					t.Fatal(err)
				}
				if p, err := server.ReadPacket(); err != nil || string(p) != "after" {
					t.Errorf("after the deadline: got %q, %v, want after", p, err)
				}
			})
		})
	}
}

func TestSimWriteDeadline(t *testing.T) {
	const size = 1 << 20
	tests := []struct {
		name  string
		first time.Duration // the deadline set before writing
		move  time.Duration // when blocked, moved to this; 0 leaves it
		want  time.Duration
	}{
		{"fixed", 200 * time.Millisecond, 0, 200 * time.Millisecond},
		{"moved later", 200 * time.Millisecond, 450 * time.Millisecond, 450 * time.Millisecond},
		{"moved earlier", 400 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := ListenConfig{Timeout: 5 * time.Second, CloseTimeout: 100 * time.Millisecond}
				e := newSimEnv(t, simnet.Config{Seed: 1}, cfg, Dialer{Timeout: 5 * time.Second, CloseTimeout: 100 * time.Millisecond})
				client, _ := e.dial()
				// The server never hears the client, so nothing the
				// client writes is acknowledged.
				e.n.SetLink(simAddr(client), simServer, simnet.Conditions{Loss: 1})
				t0 := time.Now()
				_ = client.SetWriteDeadline(t0.Add(tc.first))
				type result struct {
					written int
					err     error
				}
				done := make(chan result)
				go func() {
					for i := range 64 {
						if _, err := client.Write(simMessage(i, size)); err != nil {
							done <- result{i, err}
							return
						}
					}
					done <- result{64, nil}
				}()
				if tc.move != 0 {
					time.Sleep(tc.first / 2)
					_ = client.SetWriteDeadline(t0.Add(tc.move))
				}
				r := <-done
				if got := time.Since(t0); got != tc.want || !errors.Is(r.err, os.ErrDeadlineExceeded) {
					t.Errorf("got %v after %v, want os.ErrDeadlineExceeded after %v", r.err, got, tc.want)
				}
				// The writer was held back, not buffered without bound.
				if r.written == 0 || r.written == 64 {
					t.Errorf("got %d MiB written before blocking, want between 1 and 63", r.written)
				}
				if s := client.Stats(); s.Buffered > r.written*size {
					t.Errorf("got %d bytes buffered, want at most the %d written", s.Buffered, r.written*size)
				}
			})
		})
	}
}

func TestSimGracefulClose(t *testing.T) {
	const count = 200
	size := func(i int) int { return 5 + i*37%3000 } // some split
	for _, closer := range []string{"client", "server"} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed %d", closer, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := ListenConfig{CloseTimeout: 5 * time.Second}
					e := newSimEnv(t, simnet.Config{Seed: seed}, cfg, Dialer{CloseTimeout: 5 * time.Second})
					client, server := e.dial()
					e.n.SetConditions(simnet.Conditions{Delay: 10 * time.Millisecond, Loss: 0.1})
					w, r := client, server
					if closer == "server" {
						w, r = server, client
					}
					got := simReadAll(r)
					for i := range count {
						if _, err := w.Write(simMessage(i, size(i))); err != nil {
							t.Fatalf("write %d: %v", i, err)
						}
					}
					t0 := time.Now()
					if err := w.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
					// Within the close timeout: the peer acknowledged
					// everything, nothing was given up on.
					if d := time.Since(t0); d >= 5*time.Second {
						t.Errorf("close took %v, want less than the close timeout", d)
					}
					res := <-got
					simCheckMessages(t, res.msgs, count, size)
					if !errors.Is(res.err, ErrPeerClosed) || !errors.Is(res.err, net.ErrClosed) {
						t.Errorf("got %v, want ErrPeerClosed and net.ErrClosed", res.err)
					}
					if e.n.Stats().Lost == 0 {
						t.Error("got no datagram lost, want 10%")
					}
				})
			})
		}
	}
}

func TestSimCloseTimeout(t *testing.T) {
	const closeTimeout = 500 * time.Millisecond
	for _, unacked := range []int{0, 10} {
		t.Run(fmt.Sprintf("%d unacknowledged", unacked), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := ListenConfig{CloseTimeout: closeTimeout}
				e := newSimEnv(t, simnet.Config{Seed: 1}, cfg, Dialer{CloseTimeout: closeTimeout})
				e.n.SetConditions(simnet.Conditions{Delay: 10 * time.Millisecond})
				client, _ := e.dial()
				// The server vanishes.
				e.n.SetLink(simAddr(client), simServer, simnet.Conditions{Loss: 1})
				e.n.SetLink(simServer, simAddr(client), simnet.Conditions{Loss: 1})
				for i := range unacked {
					if _, err := client.Write(simMessage(i, 100)); err != nil {
						t.Fatal(err)
					}
				}
				t0 := time.Now()
				if err := client.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				if got := time.Since(t0); !simWithin(got, closeTimeout, time.Millisecond) {
					t.Errorf("close took %v, want %v", got, closeTimeout)
				}
				if _, err := client.ReadPacket(); !errors.Is(err, net.ErrClosed) {
					t.Errorf("read after close: got %v, want net.ErrClosed", err)
				}
			})
		})
	}
}

// TestSimCloseTimeoutTellsPeer closes a connection whose peer hears it
// but whose ACKs are all lost: when the close timeout gives up on them,
// the peer is told at once rather than left to time out.
func TestSimCloseTimeoutTellsPeer(t *testing.T) {
	const (
		closeTimeout = 500 * time.Millisecond
		delay        = 10 * time.Millisecond
	)
	tests := []struct {
		name  string
		count int
	}{
		{"nothing unacknowledged", 0},
		{"10 unacknowledged", 10},
		// More than the congestion window: most never left when the
		// close timeout gives up.
		{"1000 unacknowledged", 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := ListenConfig{CloseTimeout: closeTimeout}
				e := newSimEnv(t, simnet.Config{Seed: 1}, cfg, Dialer{CloseTimeout: closeTimeout})
				e.n.SetConditions(simnet.Conditions{Delay: delay})
				client, server := e.dial()
				e.n.SetLink(simServer, simAddr(client), simnet.Conditions{Loss: 1})
				got := simReadAll(server)
				for i := range tc.count {
					if _, err := client.Write(simMessage(i, 1000)); err != nil {
						t.Fatal(err)
					}
				}
				t0 := time.Now()
				if err := client.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				if got := time.Since(t0); got > closeTimeout+time.Millisecond {
					t.Errorf("close took %v, want at most %v", got, closeTimeout)
				}
				r := <-got
				// What arrived arrived in order; all of it if it fit.
				simCheckMessages(t, r.msgs, min(len(r.msgs), tc.count), func(int) int { return 1000 })
				if tc.count <= 10 && len(r.msgs) != tc.count {
					t.Errorf("got %d messages, want %d", len(r.msgs), tc.count)
				}
				if d := r.errAt.Sub(t0); !errors.Is(r.err, ErrPeerClosed) || d > closeTimeout+delay+time.Millisecond {
					t.Errorf("peer: got %v %v after Close, want ErrPeerClosed within %v", r.err, d, closeTimeout+delay)
				}
			})
		})
	}
}

// TestSimCloseAcknowledgedAtOnce measures Close from the moment the
// DisconnectionNotification leaves: the peer acknowledges it at once, so
// Close returns one round trip later.
func TestSimCloseAcknowledgedAtOnce(t *testing.T) {
	const (
		delay = 20 * time.Millisecond
		slack = 5 * time.Millisecond
	)
	for _, closer := range []string{"client", "server"} {
		t.Run(closer, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
				client, server := e.dial()
				c, peer := client, server
				if closer == "server" {
					c, peer = server, client
				}
				from := simAddr(c)
				var mu sync.Mutex
				var notified time.Time
				e.n.SetConditions(simnet.Conditions{Delay: delay, Drop: func(f, _ netip.AddrPort, b []byte) bool {
					if f == from && simCarries(b, wire.IDDisconnectionNotification) {
						mu.Lock()
						if notified.IsZero() {
							notified = time.Now()
						}
						mu.Unlock()
					}
					return false
				}})
				if _, err := c.Write([]byte("last")); err != nil {
					t.Fatal(err)
				}
				got := simReadAll(peer)
				if err := c.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				returned := time.Now()
				mu.Lock()
				sent := notified
				mu.Unlock()
				if sent.IsZero() {
					t.Fatal("no DisconnectionNotification left")
				}
				d := returned.Sub(sent)
				if d > 2*delay+slack {
					t.Errorf("close returned %v after DisconnectionNotification left, want at most %v", d, 2*delay+slack)
				}
				t.Logf("close returned %v after DisconnectionNotification left", d)
				if r := <-got; len(r.msgs) != 1 || !errors.Is(r.err, ErrPeerClosed) {
					t.Errorf("peer: got %d messages and %v, want 1 and ErrPeerClosed", len(r.msgs), r.err)
				}
			})
		})
	}
}

func TestSimBackpressure(t *testing.T) {
	// Small messages fill the reader's queue, which is bounded in
	// messages, with few bytes; large ones then fill the writer's send
	// buffer, which is bounded in bytes, with few writes.
	size := func(i int) int {
		if i < 20000 {
			return 16
		}
		return 16 << 10
	}
	const (
		more  = 100 // written once the reader resumes
		delay = 10 * time.Millisecond
		rtt   = 2 * delay
		// maxBuffered bounds what a blocked writer may leave buffered:
		// the send buffer is 16 MiB.
		maxBuffered = 32 << 20
	)
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: delay})
		client, server := e.dial()
		var mu sync.Mutex
		written, target := 0, math.MaxInt
		wrote := make(chan error, 1)
		go func() {
			for i := 0; ; i++ {
				mu.Lock()
				done := i >= target
				mu.Unlock()
				if done {
					wrote <- nil
					return
				}
				if _, err := client.Write(simMessage(i, size(i))); err != nil {
					wrote <- err
					return
				}
				mu.Lock()
				written++
				mu.Unlock()
			}
		}()
		progress := func() int {
			mu.Lock()
			defer mu.Unlock()
			return written
		}
		// Nobody reads: the writer must come to a stop.
		time.Sleep(3 * time.Second)
		stalled := progress()
		time.Sleep(time.Second)
		if got := progress(); got != stalled {
			t.Fatalf("got %d then %d messages written while nobody read, want the writer blocked", stalled, got)
		}
		if s := client.Stats(); s.Buffered > maxBuffered {
			t.Errorf("got %d bytes buffered by the blocked writer, want at most %d", s.Buffered, maxBuffered)
		}
		mu.Lock()
		target = written + more
		count := target
		mu.Unlock()
		t.Logf("writer blocked after %d messages; %d datagrams deferred by the reader", stalled, server.Stats().Deferred)

		resumed := time.Now()
		var recovered time.Duration
		for i := range count {
			p, err := server.ReadPacket()
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if recovered == 0 && time.Since(resumed) > 0 {
				// The first message that was not queued yet.
				recovered = time.Since(resumed)
				t.Logf("message %d, the first not queued, arrived %v after the reader resumed", i, recovered)
			}
			if want := simMessage(i, size(i)); !bytes.Equal(p, want) {
				t.Fatalf("message %d: got %d bytes starting %x, want message %d", i, len(p), p[:min(len(p), 5)], i)
			}
		}
		if err := <-wrote; err != nil {
			t.Fatalf("write: %v", err)
		}
		t.Logf("all %d messages read %v after the reader resumed", count, time.Since(resumed))
		// The sender hears of the room at once: a stall costs a few
		// round trips, not a retransmission timeout.
		if recovered > 4*rtt {
			t.Errorf("data flowed again %v after the reader resumed, want at most %v", recovered, 4*rtt)
		}
	})
}

func TestSimOrderedThroughLoss(t *testing.T) {
	const count = 1000
	size := func(i int) int { return 5 + i*53%2500 }
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newSimEnv(t, simnet.Config{Seed: seed}, ListenConfig{}, Dialer{})
				client, server := e.dial()
				e.n.SetConditions(simnet.Conditions{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05, Duplicate: 0.05})
				got := make(chan [][]byte, 1)
				go func() {
					var msgs [][]byte
					for range count {
						p, err := server.ReadPacket()
						if err != nil {
							break
						}
						msgs = append(msgs, p)
					}
					got <- msgs
				}()
				t0 := time.Now()
				for i := range count {
					if _, err := client.Write(simMessage(i, size(i))); err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
				}
				// Closed once everything was read: the transfer may take
				// longer than the close timeout.
				msgs := <-got
				took := time.Since(t0)
				simCheckMessages(t, msgs, count, size)
				if err := client.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
				// Exactly once: nothing follows but the close.
				if p, err := server.ReadPacket(); !errors.Is(err, ErrPeerClosed) {
					t.Errorf("after the last message: got %d bytes, %v, want ErrPeerClosed", len(p), err)
				}
				s := client.Stats()
				t.Logf("%d bytes in %v: %d datagrams sent, %.0f%% deemed lost, %d resends", s.BytesSent, took, s.DatagramsSent, 100*s.Loss, s.Resends)
				if s := e.n.Stats(); s.Lost == 0 || s.Duplicated == 0 {
					t.Errorf("got %d lost, %d duplicated, want some of each", s.Lost, s.Duplicated)
				}
			})
		})
	}
}

func TestSimLargeMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 4}, ListenConfig{}, Dialer{})
		client, server := e.dial()
		e.n.SetConditions(simnet.Conditions{Delay: 20 * time.Millisecond, Loss: 0.05})
		msg := make([]byte, 1<<20)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < len(msg); i += 8 {
			binary.LittleEndian.PutUint64(msg[i:], rng.Uint64())
		}
		msg[0] = simID
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		p, err := server.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != len(msg) || crc32.ChecksumIEEE(p) != crc32.ChecksumIEEE(msg) {
			t.Errorf("got %d bytes with CRC %08x, want %d with %08x", len(p), crc32.ChecksumIEEE(p), len(msg), crc32.ChecksumIEEE(msg))
		}
		t.Logf("1 MiB through 5%% loss in %v (%d datagrams lost)", time.Since(t0), e.n.Stats().Lost)
	})
}

func TestSimDialTimeout(t *testing.T) {
	tests := []struct {
		name    string
		ping    bool
		timeout time.Duration // 0: no deadline
		want    time.Duration
	}{
		{"dial 1.5s", false, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"dial 8s", false, 8 * time.Second, 8 * time.Second},
		{"dial default", false, 0, 10 * time.Second},
		{"ping 700ms", true, 700 * time.Millisecond, 700 * time.Millisecond},
		{"ping default", true, 0, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := simnet.New(simnet.Config{Seed: 1})
				n.SetConditions(simnet.Conditions{Delay: 10 * time.Millisecond})
				d := Dialer{ListenPacket: n.ListenPacket}
				ctx := context.Background()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				t0 := time.Now()
				var err error
				if tc.ping {
					_, err = d.PingContext(ctx, simServer.String())
				} else {
					var c *Conn
					c, err = d.DialContext(ctx, simServer.String())
					if c != nil {
						_ = c.Close()
					}
				}
				if got := time.Since(t0); got != tc.want || err == nil {
					t.Errorf("got %v after %v, want an error after %v", err, got, tc.want)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("got %v, want context.DeadlineExceeded", err)
				}
				if s := n.Stats(); s.Sent == 0 || s.Unreachable != s.Sent {
					t.Errorf("got %d sent, %d unreachable, want every datagram unanswered", s.Sent, s.Unreachable)
				}
				if open := n.Sockets(); len(open) != 0 {
					t.Errorf("got sockets %v open after the failure, want none", open)
				}
			})
		})
	}
}

func TestSimMaxConnections(t *testing.T) {
	const delay = 10 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{MaxConnections: 1}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: delay})
		client, server := e.dial()
		t0 := time.Now()
		_, err := e.dialOne()
		if !errors.Is(err, ErrConnectionRefused) {
			t.Errorf("got %v, want ErrConnectionRefused", err)
		}
		// Request1 and Request2 each take a round trip; the refusal
		// answers the second at once.
		if got := time.Since(t0); got > 2*2*delay {
			t.Errorf("refused after %v, want two round trips at most", got)
		}
		if s := e.l.Stats(); s.Refused != 1 || s.Connections != 1 {
			t.Errorf("got %d refused, %d connections, want 1, 1", s.Refused, s.Connections)
		}
		// The connection that got in is unaffected.
		if _, err := client.Write([]byte("ok")); err != nil {
			t.Fatal(err)
		}
		if p, err := server.ReadPacket(); err != nil || string(p) != "ok" {
			t.Errorf("got %q, %v, want ok", p, err)
		}
	})
}

func TestSimAcceptQueueFull(t *testing.T) {
	const delay = 10 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{AcceptQueue: 1}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: delay})
		first, err := e.dialOne()
		if err != nil {
			t.Fatalf("first dial: %v", err)
		}
		time.Sleep(2 * delay) // its NewIncomingConnection arrives: queued
		second, err := e.dialOne()
		t0 := time.Now()
		if err != nil {
			// Refused during the handshake.
			t.Logf("second dial refused: %v", err)
			if !errors.Is(err, ErrConnectionRefused) && !errors.Is(err, ErrPeerClosed) {
				t.Errorf("second dial: got %v, want ErrConnectionRefused or ErrPeerClosed", err)
			}
		} else {
			// Refused once the server saw it established: the server
			// says so at once.
			_, err := second.ReadPacket()
			t.Logf("second dial succeeded; then %v after %v", err, time.Since(t0))
			if !errors.Is(err, ErrPeerClosed) {
				t.Errorf("second connection: got %v, want ErrPeerClosed", err)
			}
			if got := time.Since(t0); got > 2*delay+5*time.Millisecond {
				t.Errorf("second connection closed %v after dial returned, want within a round trip", got)
			}
		}
		if s := e.l.Stats(); s.Refused != 1 || s.Accepted != 1 {
			t.Errorf("got %d refused, %d accepted, want 1, 1", s.Refused, s.Accepted)
		}
		server := e.accept()
		if _, err := first.Write([]byte("ok")); err != nil {
			t.Fatal(err)
		}
		if p, err := server.ReadPacket(); err != nil || string(p) != "ok" {
			t.Errorf("got %q, %v, want ok", p, err)
		}
	})
}

// TestSimCloseReleasesSocket checks that once every Close returned, no
// socket is left open, except that a dialed connection whose peer closed
// first keeps acknowledging the peer's stale data (its ACKs of the
// goodbye may all have been lost) for exactly lingerTime, as TCP's
// TIME_WAIT.
func TestSimCloseReleasesSocket(t *testing.T) {
	tests := []struct {
		name   string
		close  func(l *Listener, client, server *Conn)
		linger bool
	}{
		{"client first", func(l *Listener, client, server *Conn) {
			_ = client.Close()
			_ = server.Close()
			_ = l.Close()
		}, false},
		{"server first", func(l *Listener, client, server *Conn) {
			_ = server.Close()
			_ = client.Close()
			_ = l.Close()
		}, true},
		{"listener", func(l *Listener, client, server *Conn) {
			_ = l.Close()
			_ = client.Close()
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
				e.n.SetConditions(simnet.Conditions{Delay: 10 * time.Millisecond})
				client, server := e.dial()
				tc.close(e.l, client, server)
				synctest.Wait()
				open := e.n.Sockets()
				if !tc.linger {
					if len(open) > 0 {
						t.Errorf("got sockets %v open once every Close returned, want none", open)
					}
					return
				}
				if len(open) != 1 || open[0] != simAddr(client) {
					t.Fatalf("got sockets %v open once every Close returned, want the client's lingering", open)
				}
				// The linger started when the goodbye reached the client,
				// a one-way delay before the closes returned.
				time.Sleep(lingerTime / 2)
				if open := e.n.Sockets(); len(open) != 1 {
					t.Errorf("got sockets %v half a lingerTime later, want the client's", open)
				}
				time.Sleep(lingerTime / 2)
				synctest.Wait()
				if open := e.n.Sockets(); len(open) > 0 {
					t.Errorf("got sockets %v open after lingerTime, want none", open)
				}
			})
		})
	}
}
