package raknet

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/reliability"
)

// deadline returns how long is left until the deadline in p, 0 without
// one; expired reports a deadline already past.
func deadline(p *atomic.Pointer[time.Time]) (left time.Duration, expired bool) {
	dl := p.Load()
	if dl == nil || dl.IsZero() {
		return 0, false
	}
	left = time.Until(*dl)
	return left, left <= 0
}

// timerFor returns a channel that fires after left, reusing *t, or nil
// for no deadline (left 0). Callers take it only before they block, so
// an operation that need not wait starts no timer.
func timerFor(left time.Duration, t **time.Timer) <-chan time.Time {
	if left <= 0 {
		return nil
	}
	if *t == nil {
		*t = time.NewTimer(left)
	} else {
		(*t).Reset(left)
	}
	return (*t).C
}

// wakeReaders wakes every reader blocked in ReadPacket. c.mu is held.
func (c *Conn) wakeReaders() {
	if c.readSigTaken {
		select {
		case c.readSig <- struct{}{}:
		default:
		}
	}
	wake(&c.readWait)
}

// readWaiter returns the channel a reader about to block waits on, and
// whether it is readSig, which the reader gives back with
// c.readSigTaken = false once it woke. c.mu is held.
func (c *Conn) readWaiter() (<-chan struct{}, bool) {
	if c.readSigTaken {
		return waitOn(&c.readWait), false
	}
	if c.readSig == nil {
		c.readSig = make(chan struct{}, 1)
	}
	select {
	case <-c.readSig: // a stale wake-up from a reader that timed out
	default:
	}
	c.readSigTaken = true
	return c.readSig, true
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// ReadPacket returns the next message from the peer. It blocks until one
// arrives, the read deadline passes or the connection closes. Messages
// that arrived before the peer closed are still returned. The message is
// the caller's to keep.
func (c *Conn) ReadPacket() ([]byte, error) {
	p, _, err := c.read(nil)
	return p, err
}

// Read reads the next message into b and returns its length, as
// ReadPacket would return it; a message longer than b is consumed and
// ErrBufferTooSmall returned. Read allocates nothing in steady state:
// the buffer a message that fits in one datagram arrived in is reused
// for a later message.
func (c *Conn) Read(b []byte) (int, error) {
	if b == nil {
		b = []byte{}
	}
	_, n, err := c.read(b)
	return n, err
}

// read takes the next message, waiting for one as ReadPacket describes.
// With into nil it returns the message; otherwise it copies the message
// into into, returns its length and keeps the message's buffer for
// deliver to reuse.
func (c *Conn) read(into []byte) ([]byte, int, error) {
	var timer *time.Timer
	defer func() { stopTimer(timer) }()
	sig := false // this reader waited on readSig
	defer func() {
		if sig {
			c.mu.Lock()
			c.readSigTaken = false
			c.mu.Unlock()
		}
	}()
	for {
		left, expired := deadline(&c.readDeadline)
		if expired {
			return nil, 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
		if sig {
			c.readSigTaken, sig = false, false
		}
		if c.readHead < len(c.readQ) {
			p := c.readQ[c.readHead]
			c.readQ[c.readHead] = nil
			c.readHead++
			if c.readHead == len(c.readQ) {
				// Drained: reuse the queue, unless a burst grew it.
				c.readQ, c.readHead = c.readQ[:0], 0
				if cap(c.readQ) > smallReadQueue {
					c.readQ = nil
				}
			}
			now := time.Now()
			if c.state != stateClosed {
				// The room p took in the delivery budget is free again:
				// the layer may deliver what waited for it and asks for
				// what it refused.
				c.layer.Consumed(now, len(p))
				c.receive(now)
			}
			var n int
			var err error
			if into != nil {
				if len(p) > len(into) {
					err = c.opErr("read", ErrBufferTooSmall)
				} else {
					n = copy(into, p)
				}
				c.keepSpare(p)
				p = nil
			}
			c.end(now)
			return p, n, err
		}
		if c.state == stateClosed || c.state == stateClosing {
			err := c.closeErr
			if err == nil {
				err = net.ErrClosed
			}
			c.mu.Unlock()
			return nil, 0, c.opErr("read", err)
		}
		var wait <-chan struct{}
		wait, sig = c.readWaiter()
		c.mu.Unlock()
		select {
		case <-wait:
		case <-timerFor(left, &timer):
		}
	}
}

// keepSpare keeps p, a message Read copied out, for deliver to copy a
// later message into, if it is no larger than a datagram and fewer than
// maxSpare are kept. c.mu is held.
func (c *Conn) keepSpare(p []byte) {
	if cap(p) <= c.mtu && len(c.spare) < maxSpare {
		c.spare = append(c.spare, p[:0])
	}
}

// copyMessage returns a copy of msg, in a kept buffer if one is large
// enough. c.mu is held.
func (c *Conn) copyMessage(msg []byte) []byte {
	if n := len(c.spare); n > 0 && cap(c.spare[n-1]) >= len(msg) {
		b := append(c.spare[n-1], msg...)
		c.spare[n-1] = nil
		c.spare = c.spare[:n-1]
		return b
	}
	return append([]byte(nil), msg...)
}

// Write sends b as one ReliableOrdered message on channel 0.
func (c *Conn) Write(b []byte) (int, error) {
	return c.WriteWith(b, ReliableOrdered, 0)
}

// WriteWith sends b as one message with reliability r on ordering channel
// channel (0-31). b is copied. When the send buffer is full it blocks until
// the peer acknowledges enough data, the write deadline passes or the
// connection closes: a writer that outruns the link is slowed, never
// buffered without bound. An invalid channel or reliability, an empty
// message and one over the size limit are errors wrapping
// ErrInvalidChannel, ErrInvalidReliability, ErrEmptyMessage and
// ErrMessageTooLarge.
func (c *Conn) WriteWith(b []byte, r Reliability, channel uint8) (int, error) {
	if _, err := c.write(b, r, channel); err != nil {
		return 0, err
	}
	return len(b), nil
}

// WriteReceipt is WriteWith for the WithAckReceipt reliabilities: it
// returns the id the receipt function set with SetReceiptFunc later
// receives with the message's fate. With another reliability the id is 0.
func (c *Conn) WriteReceipt(b []byte, r Reliability, channel uint8) (uint32, error) {
	return c.write(b, r, channel)
}

// SetReceiptFunc sets the function that learns the fate of messages
// written with WriteReceipt; nil stops receipts. It runs on the goroutine
// that handled the peer's ACK, without any lock of the connection held,
// and must not block. Receipts of messages written before it is set may
// be lost.
func (c *Conn) SetReceiptFunc(f func(Receipt)) {
	if f == nil {
		c.onReceipt.Store(nil)
		return
	}
	c.onReceipt.Store(&f)
}

// write queues one message, blocking while the send buffer is full.
func (c *Conn) write(b []byte, r Reliability, channel uint8) (uint32, error) {
	var timer *time.Timer
	defer func() { stopTimer(timer) }()
	for {
		left, expired := deadline(&c.writeDeadline)
		if expired {
			return 0, c.opErr("write", os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
		if c.state != stateConnected {
			err := c.closeErr
			if err == nil || c.state == stateClosing {
				err = net.ErrClosed
			}
			c.unlock()
			return 0, c.opErr("write", err)
		}
		now := time.Now()
		id, err := c.layer.Send(b, r, channel)
		if err == nil {
			c.end(now)
			return id, nil
		}
		if !errors.Is(err, reliability.ErrSendBufferFull) {
			c.unlock()
			return 0, c.opErr("write", err)
		}
		wait := waitOn(&c.writeWait)
		c.unlock()
		select {
		case <-wait:
		case <-timerFor(left, &timer):
		}
	}
}

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "raknet", Source: c.ep.local, Addr: c.RemoteAddr(), Err: err}
}

// LocalAddr returns the local socket address.
func (c *Conn) LocalAddr() net.Addr { return c.ep.local }

// RemoteAddr returns the peer's address (IPv4 peers as IPv4).
func (c *Conn) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(c.raddr) }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for ReadPacket and Read, including
// calls already blocked; the zero time means none.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(&t)
	c.mu.Lock()
	c.wakeReaders()
	c.mu.Unlock()
	return nil
}

// SetWriteDeadline sets the deadline for a Write blocked on a full send
// buffer, including calls already blocked; the zero time means none.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(&t)
	c.mu.Lock()
	wake(&c.writeWait)
	c.mu.Unlock()
	return nil
}

// Latency returns the round-trip time measured by connected pings
// (smoothed), or the reliability layer's smoothed RTT before the first
// pong.
func (c *Conn) Latency() time.Duration {
	if l := c.latency.Load(); l > 0 {
		return time.Duration(l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.layer.RTT()
}

// Promote tells the connection that the application authenticated its
// peer (for Bedrock, the player logged in): on a listener with
// PreLoginShare, its share of the memory budget grows from the small cap
// of a peer not yet logged in to a fair share. It is a no-op otherwise,
// on dialed connections, and when the budget has no room for the larger
// share (the connection keeps its small one). Safe for concurrent use.
func (c *Conn) Promote() {
	if c.cfg.account != nil {
		c.cfg.account.a.SetClass(guard.ClassLoggedIn)
	}
}

// MTU returns the negotiated MTU, IP and UDP headers included.
func (c *Conn) MTU() int { return c.mtu }

// GUID returns the peer's RakNet GUID (its self-chosen id; not an identity).
func (c *Conn) GUID() int64 { return c.guid }

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	s := c.layer.Stats()
	dropped, deferred := c.dropped, c.deferred
	c.mu.Unlock()
	st := Stats{
		RTT: s.SRTT, RTTVar: s.RTTVar,
		DatagramsSent: s.DatagramsSent, DatagramsReceived: s.DatagramsReceived,
		BytesSent: s.BytesSent, BytesReceived: s.BytesReceived,
		MessagesSent: s.MessagesSent, MessagesReceived: s.MessagesDelivered,
		Resends: s.FramesResent, DatagramsLost: s.DatagramsLost,
		Window: s.Window, InFlight: s.InFlight, Buffered: s.Buffered,
		Dropped: dropped, Deferred: deferred,
		AcksSent: s.AcksSent, NacksSent: s.NacksSent, NacksReceived: s.NacksReceived,
	}
	if data := s.DatagramsSent - s.AcksSent - s.NacksSent; data > 0 {
		st.Loss = float64(s.DatagramsLost) / float64(data)
	}
	if s.DataSpan > s.DataReceived {
		st.LossIn = float64(s.DataSpan-s.DataReceived) / float64(s.DataSpan)
	}
	return st
}

// Done returns a channel closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }
