package session

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// stuckConn is a fakeConn whose Write, once stuck is set, blocks until the
// conn is closed, as a transport does for a client that stopped reading.
type stuckConn struct {
	*fakeConn
	stuck  atomic.Bool
	writes atomic.Int32 // Writes that blocked
}

func (c *stuckConn) Write(b []byte) (int, error) {
	if !c.stuck.Load() {
		return c.fakeConn.Write(b)
	}
	c.writes.Add(1)
	<-c.closed
	return 0, net.ErrClosed
}

// startStuck runs a session over a stuckConn and logs Steve in; the conn
// is stuck from then on.
func startStuck(t *testing.T, cfg Config) (*Session, *stuckConn, <-chan error) {
	t.Helper()
	c := &stuckConn{fakeConn: newFakeConn()}
	s := New(c, cfg)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	c.login(t)
	c.stuck.Store(true)
	return s, c, done
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestCloseDoesNotBlock checks, in fake time, that Disconnect and Close
// return at once over a transport whose Write blocks, even with a batch to
// flush; the session ends WriteTimeout later, when the watchdog gives up on
// the write, and the conn is closed.
func TestCloseDoesNotBlock(t *testing.T) {
	for _, op := range []string{"Disconnect", "DisconnectWith", "Close"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const timeout = 2 * time.Second
				s, c, done := startStuck(t, Config{NewHandler: newHolder, WriteTimeout: timeout})
				if err := s.WritePacket(0x42, []byte("pending")); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				switch op {
				case "Disconnect":
					_ = s.Disconnect("bye")
				case "DisconnectWith":
					_ = s.DisconnectWith(DisconnectReasonShutdown, "bye")
				default:
					_ = s.Close()
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("%s took %v of fake time, want none", op, d)
				}
				if !isDone(s.Context().Done()) {
					t.Error("Context: not cancelled once the session was asked to end")
				}
				time.Sleep(timeout - time.Nanosecond)
				synctest.Wait()
				if isDone(s.Done()) || c.writes.Load() != 1 {
					t.Fatalf("before WriteTimeout: got done %v after %d blocked writes, want not done after 1", isDone(s.Done()), c.writes.Load())
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if !isDone(s.Done()) {
					t.Fatal("at WriteTimeout: session not done")
				}
				if err := <-done; err != nil {
					t.Errorf("Run: got %v, want nil (this side closed it)", err)
				}
				select {
				case <-c.closed:
				default:
					t.Error("conn not closed")
				}
			})
		})
	}
}

// TestWriteTimeout checks, in fake time, that a Flush stuck on the
// transport returns at WriteTimeout, as does a WritePacket waiting behind
// it (and the flush loop, whose timer fired meanwhile), and ends its
// session with ErrWriteTimeout, while another session goes on.
func TestWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recordingHandler{Handler: holder{}}
		s, _, done := startStuck(t, Config{NewHandler: handlerOf(h)})
		_, good, goodDone := start(t, context.Background(), Config{NewHandler: newHolder})
		good.login(t)

		flushed, written := make(chan error, 1), make(chan error, 1)
		start := time.Now()
		go func() {
			_ = s.WritePacket(0x42, []byte("stuck"))
			flushed <- s.Flush()
		}()
		synctest.Wait() // the Flush is blocked in Write, holding the lock
		go func() { written <- s.WritePacket(0x43, nil) }()
		if err := <-flushed; err == nil {
			t.Error("Flush: got nil, want an error")
		}
		if err := <-written; !errors.Is(err, net.ErrClosed) {
			t.Errorf("WritePacket behind it: got %v, want %v", err, net.ErrClosed)
		}
		if d := time.Since(start); d != DefaultWriteTimeout {
			t.Errorf("Flush returned after %v, want DefaultWriteTimeout (%v)", d, DefaultWriteTimeout)
		}
		err := <-done
		if !errors.Is(err, ErrWriteTimeout) {
			t.Errorf("Run: got %v, want %v", err, ErrWriteTimeout)
		}
		if e := h.closeErr.Load(); h.closes.Load() != 1 || e == nil || !errors.Is(*e, ErrWriteTimeout) {
			t.Errorf("HandleClose: got %d calls, want 1 with %v", h.closes.Load(), ErrWriteTimeout)
		}
		if cause := context.Cause(s.Context()); !errors.Is(cause, ErrWriteTimeout) {
			t.Errorf("Context cause: got %v, want %v", cause, ErrWriteTimeout)
		}

		good.sync(t) // the other session still answers
		good.Close()
		<-goodDone
	})
}

// TestWriteTimeoutIdle checks a session that writes nothing never times
// out, and that writes which complete stop the watchdog: an hour of fake
// time with a write every minute ends nothing.
func TestWriteTimeoutIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, c, done := start(t, context.Background(), Config{NewHandler: newHolder, WriteTimeout: time.Second})
		c.login(t)
		for range 60 {
			time.Sleep(time.Minute)
			c.sync(t)
		}
		if isDone(s.Context().Done()) {
			t.Fatal("session ended")
		}
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	})
}

// TestContextCancelledAtEnd checks Context is cancelled when the session
// ends, with Run's context's cause when that ended it.
func TestContextCancelledAtEnd(t *testing.T) {
	leaktest.Check(t)
	cause := errors.New("server stopping")
	ctx, cancel := context.WithCancelCause(context.Background())
	s, c, done := start(t, ctx, Config{NewHandler: newHolder})
	c.login(t)
	if isDone(s.Context().Done()) {
		t.Fatal("Context: cancelled while the session runs")
	}
	cancel(cause)
	if err := wait(t, done); !errors.Is(err, cause) {
		t.Errorf("Run: got %v, want %v", err, cause)
	}
	if !isDone(s.Context().Done()) || context.Cause(s.Context()) != cause {
		t.Errorf("Context: got cause %v, want %v", context.Cause(s.Context()), cause)
	}
}
