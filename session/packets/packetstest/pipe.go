package packetstest

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// queue is one direction of a Pipe: batches in the order written. It never
// blocks a writer: a test transport that held writers up would test the
// transport, not the session.
type queue struct {
	mu     sync.Mutex
	items  [][]byte
	closed bool          // no more writes; readers drain what is left
	wake   chan struct{} // closed and replaced whenever items or closed change
}

func newQueue() *queue { return &queue{wake: make(chan struct{})} }

// push appends a copy of b, or reports false once the queue is closed.
func (q *queue) push(b []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, append([]byte(nil), b...))
	close(q.wake)
	q.wake = make(chan struct{})
	return true
}

// close lets readers take what is left, then io.EOF.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.wake)
	}
}

// pop returns the next batch, waiting until there is one, the queue is
// closed and drained (io.EOF), done is closed, or deadline fires.
func (q *queue) pop(done <-chan struct{}, deadline <-chan time.Time) ([]byte, error) {
	for {
		select {
		case <-done:
			return nil, net.ErrClosed
		default:
		}
		q.mu.Lock()
		if len(q.items) > 0 {
			b := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return b, nil
		}
		if q.closed {
			q.mu.Unlock()
			return nil, io.EOF
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-wake:
		case <-done:
			return nil, net.ErrClosed
		case <-deadline:
			return nil, os.ErrDeadlineExceeded
		}
	}
}

// End is one end of a Pipe: a message-preserving in-memory connection. Each
// Write is one batch, each ReadPacket or Read returns one. It satisfies
// session.Conn and net.Conn, and gophertunnel's packet.PacketReader, so a
// session can run over one end and gophertunnel's client over the other.
// Its methods are safe for concurrent use.
type End struct {
	in, out       *queue
	local, remote net.Addr

	closeOnce sync.Once
	closed    chan struct{}

	mu       sync.Mutex
	deadline time.Time // guarded by mu
}

// Pipe returns two connected Ends: what one writes the other reads. Closing
// an End lets the other read what was written, then io.EOF. The addresses
// are loopback ones, told apart by port.
func Pipe() (server, client *End) {
	a, b := newQueue(), newQueue()
	sa := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19132}
	ca := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	server = &End{in: a, out: b, local: sa, remote: ca, closed: make(chan struct{})}
	client = &End{in: b, out: a, local: ca, remote: sa, closed: make(chan struct{})}
	return server, client
}

// ReadPacket returns the next batch the other end wrote. It returns io.EOF
// once the other end has closed and every batch has been read,
// net.ErrClosed once this end is closed, and os.ErrDeadlineExceeded past
// the read deadline.
func (e *End) ReadPacket() ([]byte, error) {
	var deadline <-chan time.Time
	e.mu.Lock()
	d := e.deadline
	e.mu.Unlock()
	if !d.IsZero() {
		t := time.NewTimer(time.Until(d))
		defer t.Stop()
		deadline = t.C
	}
	return e.in.pop(e.closed, deadline)
}

// Read reads the next batch into b; a batch larger than b is an error.
func (e *End) Read(b []byte) (int, error) {
	p, err := e.ReadPacket()
	if err != nil {
		return 0, err
	}
	if len(p) > len(b) {
		return 0, errors.New("packetstest: read buffer too small for batch")
	}
	return copy(b, p), nil
}

// Write sends a copy of b as one batch. It never blocks, and returns
// net.ErrClosed once either end is closed.
func (e *End) Write(b []byte) (int, error) {
	select {
	case <-e.closed:
		return 0, net.ErrClosed
	default:
	}
	if !e.out.push(b) {
		return 0, net.ErrClosed
	}
	return len(b), nil
}

// Close closes this end: what it wrote stays readable by the other end,
// then io.EOF, and its own pending and later reads return net.ErrClosed.
// Calls after the first do nothing.
func (e *End) Close() error {
	e.closeOnce.Do(func() {
		close(e.closed)
		e.out.close()
		e.in.close()
	})
	return nil
}

// Closed returns a channel closed when Close is called.
func (e *End) Closed() <-chan struct{} { return e.closed }

// LocalAddr returns this end's address.
func (e *End) LocalAddr() net.Addr { return e.local }

// RemoteAddr returns the other end's address.
func (e *End) RemoteAddr() net.Addr { return e.remote }

// SetDeadline sets the read deadline; writes never wait.
func (e *End) SetDeadline(t time.Time) error { return e.SetReadDeadline(t) }

// SetReadDeadline makes reads fail with os.ErrDeadlineExceeded after t; the
// zero time clears it. It applies to reads that start after it.
func (e *End) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	e.deadline = t
	e.mu.Unlock()
	return nil
}

// SetWriteDeadline does nothing: writes never wait.
func (e *End) SetWriteDeadline(time.Time) error { return nil }
