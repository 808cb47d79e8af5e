package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/raknet"
)

// pollEvery is how often eventually looks again.
const pollEvery = 5 * time.Millisecond

// eventually reports whether cond holds within timeout, looking again
// every pollEvery (poll.Until): for the state of a real server, process
// or socket that offers no event to wait on.
func eventually(timeout time.Duration, cond func() bool) bool {
	return poll.Until(timeout, pollEvery, cond)
}

// packetConn is what the tests need of a connection from either
// implementation: *raknet.Conn and *goraknet.Conn both satisfy it.
type packetConn interface {
	ReadPacket() ([]byte, error)
	Write(b []byte) (int, error)
	Close() error
}

// testPong is the pong data the listeners under test answer with.
var testPong = []byte("MCPE;Basalt integration;924;1.21.90;0;10;1;Basalt;Survival;1;19132;19133;")

// message returns message i of size bytes (at least 5): 0xfe, a 4-byte
// index, then a pattern derived from the index, so a message that arrives
// damaged, twice or out of order is recognised.
func message(i uint32, size int) []byte {
	b := make([]byte, max(size, 5))
	b[0] = 0xfe
	binary.BigEndian.PutUint32(b[1:], i)
	for j := 5; j < len(b); j++ {
		b[j] = byte(uint32(j)*31 + i*7)
	}
	return b
}

// checkMessage reports whether b is message want of size bytes.
func checkMessage(b []byte, want uint32, size int) error {
	if len(b) < 5 || b[0] != 0xfe {
		return fmt.Errorf("message %d: got %d bytes starting %x, want 0xfe and an index", want, len(b), b[:min(len(b), 5)])
	}
	if got := binary.BigEndian.Uint32(b[1:]); got != want {
		return fmt.Errorf("got message %d, want %d", got, want)
	}
	if len(b) != max(size, 5) {
		return fmt.Errorf("message %d: got %d bytes, want %d", want, len(b), max(size, 5))
	}
	for j := 5; j < len(b); j++ {
		if b[j] != byte(uint32(j)*31+want*7) {
			return fmt.Errorf("message %d: byte %d is %#x, want %#x", want, j, b[j], byte(uint32(j)*31+want*7))
		}
	}
	return nil
}

// transfer writes count messages with sizes size(i) from one connection to
// the other and checks that they arrive exactly once and in order, all
// within timeout. It returns how long it took.
func transfer(from, to packetConn, count int, size func(i int) int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		for i := range count {
			if _, err := from.Write(message(uint32(i), size(i))); err != nil {
				werr <- fmt.Errorf("write message %d: %w", i, err)
				return
			}
		}
		werr <- nil
	}()
	rerr := make(chan error, 1)
	go func() {
		for i := range count {
			b, err := to.ReadPacket()
			if err != nil {
				rerr <- fmt.Errorf("read message %d: %w", i, err)
				return
			}
			if err := checkMessage(b, uint32(i), size(i)); err != nil {
				rerr <- err
				return
			}
		}
		rerr <- nil
	}()
	var errs []error
	for done := 0; done < 2; done++ {
		select {
		case err := <-werr:
			errs = append(errs, err)
		case err := <-rerr:
			errs = append(errs, err)
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("transfer of %d messages: not done after %v", count, timeout)
		}
	}
	return time.Since(start), errors.Join(errs...)
}

// both runs f(a→b) and f(b→a) at once and joins their errors.
func both(f func(from, to packetConn) error, a, b packetConn) error {
	errc := make(chan error, 1)
	go func() { errc <- f(b, a) }()
	err := f(a, b)
	return errors.Join(err, <-errc)
}

// readErr waits up to timeout for c's next ReadPacket to fail and returns
// the error and how long that took; messages still queued are skipped.
func readErr(c packetConn, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := c.ReadPacket(); err != nil {
				errc <- err
				return
			}
		}
	}()
	select {
	case err := <-errc:
		return time.Since(start), err
	case <-time.After(timeout):
		return time.Since(start), nil
	}
}

// errNoMessage is what readWithin returns when nothing arrived in time.
var errNoMessage = errors.New("no message")

// readWithin returns c's next message, or errNoMessage if none arrives
// within timeout. go-raknet's Conn has no read deadline, so the read runs
// in a goroutine; one still blocked at the timeout ends when c closes and
// takes whatever message arrives first meanwhile.
func readWithin(c packetConn, timeout time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := c.ReadPacket()
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(timeout):
		return nil, errNoMessage
	}
}

// quietPeriod is how long a connection must stay silent after a transfer
// to show it delivered no message twice; it covers several of go-raknet's
// 100 ms ACK ticks and our resend timeouts.
const quietPeriod = 500 * time.Millisecond

// checkNoMore fails the test unless c, which transfer left having read
// every message, delivers nothing more within quietPeriod and is still
// open: a duplicate of the last message would show here, as would a
// connection the peer dropped.
func checkNoMore(t *testing.T, c packetConn) {
	t.Helper()
	b, err := readWithin(c, quietPeriod)
	switch {
	case err == nil:
		t.Errorf("after the last message: got % x, want nothing more", b[:min(len(b), 8)])
	case !errors.Is(err, errNoMessage):
		t.Errorf("after the last message: got %v, want the connection open", err)
	}
}

// listen starts a listener on addr that is closed when the test ends.
func listen(t *testing.T, lc raknet.ListenConfig, addr string) *raknet.Listener {
	t.Helper()
	l, err := lc.Listen(addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	l.PongData(testPong)
	return l
}

// acceptOne waits up to timeout for one connection.
func acceptOne(t *testing.T, l *raknet.Listener, timeout time.Duration) *raknet.Conn {
	t.Helper()
	type result struct {
		c   *raknet.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.AcceptConn()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("accept: %v", r.err)
		}
		t.Cleanup(func() { _ = r.c.Close() })
		return r.c
	case <-time.After(timeout):
		t.Fatalf("accept: no connection after %v", timeout)
		return nil
	}
}

// dial dials addr with d, bounded by timeout, and closes the connection
// when the test ends.
func dial(t *testing.T, d raknet.Dialer, addr string, timeout time.Duration) *raknet.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := d.DialContext(ctx, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// checkGoroutines fails the test if, once it ended and its cleanups ran,
// a goroutine of Basalt's, go-raknet's or gophertunnel's is left. Call it
// first, so its cleanup runs last.
func checkGoroutines(t *testing.T) {
	t.Helper()
	leaktest.Check(t, leaktest.Module, "github.com/sandertv/")
}
