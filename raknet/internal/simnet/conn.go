package simnet

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Conn is a socket of a Network. It implements net.PacketConn with the
// semantics of a UDP socket: writes never block, a datagram larger than
// the read buffer is truncated, read deadlines fail with an error wrapping
// os.ErrDeadlineExceeded and Close wakes blocked readers with one wrapping
// net.ErrClosed. Its methods are safe for concurrent use.
type Conn struct {
	n       *Network
	network string
	local   netip.AddrPort
	laddr   *net.UDPAddr

	// Guarded by n.mu.
	stats   *Stats
	queue   []datagram // received, unread from head on
	head    int
	queued  int // bytes in queue from head on
	recvBuf int
	closed  bool
	// wait is closed (and cleared) to wake every blocked reader; it
	// exists only while someone waits.
	wait                        chan struct{}
	readDeadline, writeDeadline time.Time
}

var _ net.PacketConn = (*Conn)(nil)

// datagram is a received datagram.
type datagram struct {
	from netip.AddrPort
	b    []byte
}

// wake wakes every blocked reader. n.mu is held.
func (c *Conn) wake() {
	if c.wait != nil {
		close(c.wait)
		c.wait = nil
	}
}

func (c *Conn) opErr(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: c.network, Source: c.laddr, Addr: addr, Err: err}
}

// ReadFrom reads the next datagram into b, truncating it to len(b), and
// returns its sender as a *net.UDPAddr. It blocks until a datagram
// arrives, the read deadline passes or the socket is closed.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

// ReadFromUDPAddrPort is ReadFrom returning the sender as a
// netip.AddrPort, as *net.UDPConn's does.
func (c *Conn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	c.n.mu.Lock()
	for {
		if c.closed {
			c.n.mu.Unlock()
			return 0, netip.AddrPort{}, c.opErr("read", nil, net.ErrClosed)
		}
		// As net's poller does, a passed deadline fails the read even
		// with datagrams waiting.
		var left time.Duration
		if !c.readDeadline.IsZero() {
			if left = time.Until(c.readDeadline); left <= 0 {
				c.n.mu.Unlock()
				return 0, netip.AddrPort{}, c.opErr("read", nil, os.ErrDeadlineExceeded)
			}
		}
		if c.head < len(c.queue) {
			d := c.queue[c.head]
			c.queue[c.head] = datagram{}
			c.head++
			c.queued -= len(d.b)
			if c.head == len(c.queue) {
				c.queue, c.head = c.queue[:0], 0
			}
			c.n.mu.Unlock()
			return copy(b, d.b), d.from, nil
		}
		if c.wait == nil {
			c.wait = make(chan struct{})
		}
		wait := c.wait
		c.n.mu.Unlock()
		var expired <-chan time.Time
		if left > 0 {
			if timer == nil {
				timer = time.NewTimer(left)
			} else {
				timer.Reset(left)
			}
			expired = timer.C
		}
		select {
		case <-wait:
		case <-expired:
		}
		c.n.mu.Lock()
	}
}

// WriteTo sends b to addr, a *net.UDPAddr or any net.Addr whose String
// is an IP literal and port. It never blocks; a datagram to an address
// nobody listens on is lost silently, as an unconnected UDP socket's is.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if addr == nil {
		return 0, c.opErr("write", nil, errMissingAddress)
	}
	var to netip.AddrPort
	if ua, ok := addr.(*net.UDPAddr); ok {
		to = ua.AddrPort()
	} else {
		var err error
		if to, err = netip.ParseAddrPort(addr.String()); err != nil {
			return 0, c.opErr("write", addr, &net.AddrError{Err: "not an IP address and port", Addr: addr.String()})
		}
	}
	return c.WriteToUDPAddrPort(b, to)
}

// WriteToUDPAddrPort is WriteTo taking a netip.AddrPort, as
// *net.UDPConn's does.
func (c *Conn) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	to = norm(to)
	addr := func() net.Addr { return net.UDPAddrFromAddrPort(to) }
	if !to.IsValid() {
		return 0, c.opErr("write", nil, errMissingAddress)
	}
	if to.Addr().Is4() != c.local.Addr().Is4() {
		return 0, c.opErr("write", addr(), os.NewSyscallError("sendto", syscall.EAFNOSUPPORT))
	}
	limit := maxPayload4
	if !to.Addr().Is4() {
		limit = maxPayload6
	}
	if len(b) > limit {
		return 0, c.opErr("write", addr(), os.NewSyscallError("sendto", syscall.EMSGSIZE))
	}
	n := c.n
	n.mu.Lock()
	if c.closed {
		n.mu.Unlock()
		return 0, c.opErr("write", addr(), net.ErrClosed)
	}
	now := time.Now()
	if !c.writeDeadline.IsZero() && !now.Before(c.writeDeadline) {
		n.mu.Unlock()
		return 0, c.opErr("write", addr(), os.ErrDeadlineExceeded)
	}
	c.stats.Sent++
	c.stats.SentBytes += uint64(len(b))
	n.stats.Sent++
	n.stats.SentBytes += uint64(len(b))
	k := linkKey{c.local, to}
	cond := n.conditions(k)
	if cond.Drop != nil {
		n.mu.Unlock()
		drop := cond.Drop(c.local, to, b)
		n.mu.Lock()
		if drop {
			c.stats.Filtered++
			n.stats.Filtered++
			n.mu.Unlock()
			return len(b), nil
		}
		now = time.Now()
	}
	n.send(c, k, &cond, b, now)
	n.mu.Unlock()
	return len(b), nil
}

// Close closes the socket and frees its address. Blocked and later reads
// and writes fail with an error wrapping net.ErrClosed; datagrams already
// sent are still delivered, and those on their way to it are lost.
func (c *Conn) Close() error {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.closed {
		return c.opErr("close", nil, net.ErrClosed)
	}
	c.closed = true
	if n.sockets[c.local] == c {
		delete(n.sockets, c.local)
	}
	c.queue, c.head, c.queued = nil, 0, 0
	c.wake()
	return nil
}

// LocalAddr returns the socket's address as a *net.UDPAddr.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// AddrPort returns the socket's address.
func (c *Conn) AddrPort() netip.AddrPort { return c.local }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for reads, blocked ones included; the
// zero time means none.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if c.closed {
		return c.opErr("set", nil, net.ErrClosed)
	}
	c.readDeadline = t
	c.wake()
	return nil
}

// SetWriteDeadline sets the deadline for writes; as writes never block,
// only a deadline already passed matters: it fails them. The zero time
// means none.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if c.closed {
		return c.opErr("set", nil, net.ErrClosed)
	}
	c.writeDeadline = t
	return nil
}

// SetReadBuffer sets the receive buffer in bytes, as *net.UDPConn's does;
// datagrams already received are kept.
func (c *Conn) SetReadBuffer(bytes int) error {
	if bytes <= 0 {
		return c.opErr("set", nil, os.NewSyscallError("setsockopt", syscall.EINVAL))
	}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.recvBuf = bytes
	return nil
}

// Stats returns the socket's counters.
func (c *Conn) Stats() Stats {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return *c.stats
}
