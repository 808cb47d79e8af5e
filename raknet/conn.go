package raknet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/reliability"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// Reliability selects how a message is delivered. Game traffic uses
// ReliableOrdered, which Write uses.
type Reliability uint8

// The RakNet reliabilities. The WithAckReceipt variants travel as their
// plain counterparts.
const (
	Unreliable Reliability = iota
	UnreliableSequenced
	Reliable
	ReliableOrdered
	ReliableSequenced
	UnreliableWithAckReceipt
	ReliableWithAckReceipt
	ReliableOrderedWithAckReceipt
)

// String returns the RakNet name of r.
func (r Reliability) String() string { return wire.Reliability(r).String() }

// Connection defaults.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultPingInterval = 2500 * time.Millisecond
	DefaultCloseTimeout = 3 * time.Second
	// maxReadQueue bounds the packets and bytes received but not yet read.
	maxReadQueue      = 16384
	maxReadQueueBytes = 64 << 20
	// ipv4Overhead and ipv6Overhead are the IP + UDP header sizes the MTU
	// includes.
	ipv4Overhead = 28
	ipv6Overhead = 48
)

// Stats are a connection's counters and estimates.
type Stats struct {
	RTT, RTTVar       time.Duration // smoothed round-trip time and variance
	DatagramsSent     uint64
	DatagramsReceived uint64
	BytesSent         uint64 // UDP payload bytes
	BytesReceived     uint64
	MessagesSent      uint64
	MessagesReceived  uint64
	Resends           uint64  // frames sent again
	DatagramsLost     uint64  // datagrams NACKed or timed out
	Loss              float64 // DatagramsLost / DatagramsSent
	Window            int     // congestion window in bytes
	InFlight          int     // bytes in flight
	Buffered          int     // bytes written but not yet acknowledged
	Dropped           uint64  // malformed or refused datagrams
}

type connState uint8

const (
	stateHandshake connState = iota
	stateConnected
	stateClosing
	stateClosed
)

// connConfig is what a Conn takes from its Listener or Dialer.
type connConfig struct {
	timeout, pingInterval, closeTimeout time.Duration
	log                                 zerolog.Logger
}

// Conn is a RakNet connection. It implements net.Conn: Read and ReadPacket
// return one message each, Write sends one ReliableOrdered message on
// channel 0. All methods are safe for concurrent use.
//
// A Conn has no goroutine of its own: datagrams are handled by the socket
// reader that owns the socket, writes by the writer's goroutine, and timers
// (ACK flush, resend, pacing, keepalive, timeout) by one time.Timer armed
// for the earliest deadline.
type Conn struct {
	mu    sync.Mutex
	layer *reliability.Layer
	state connState
	cfg   connConfig

	pc    net.PacketConn
	udp   *net.UDPConn // pc as a UDPConn, for allocation-free writes
	addr  net.Addr     // the peer as the socket reports it
	wap   netip.AddrPort
	raddr netip.AddrPort // the peer, IPv4 unmapped
	local net.Addr
	mtu   int
	guid  int64 // the peer's GUID
	self  int64 // our GUID
	dial  bool

	readQ      [][]byte
	readBytes  int
	readNotify chan struct{}
	// writeNotify is signalled when acknowledged data frees send buffer.
	writeNotify chan struct{}
	closed      chan struct{}
	closeErr    error
	established chan struct{}
	estOnce     sync.Once

	readDeadline, writeDeadline atomic.Pointer[time.Time]

	timer    *time.Timer
	timerAt  time.Time
	created  time.Time
	lastRecv time.Time
	lastPing time.Time
	closeBy  time.Time
	latency  atomic.Int64
	dropped  uint64
	buf      []byte
	remove   bool
	errLog   int

	// onEstablished runs with c.mu held once the handshake completes (it
	// must not block); onClose runs without c.mu once the connection is
	// closed.
	onEstablished func(*Conn)
	onClose       func(*Conn)
	// reply2 is the OpenConnectionReply2 sent for this connection, resent
	// when a retried request arrives.
	reply2 []byte
}

func newConn(pc net.PacketConn, addr net.Addr, wap netip.AddrPort, mtu int, cfg connConfig, dial bool, now time.Time) *Conn {
	raddr := netip.AddrPortFrom(wap.Addr().Unmap(), wap.Port())
	overhead := ipv4Overhead
	if !raddr.Addr().Is4() {
		overhead = ipv6Overhead
	}
	c := &Conn{
		cfg:         cfg,
		pc:          pc,
		addr:        addr,
		wap:         wap,
		raddr:       raddr,
		local:       pc.LocalAddr(),
		mtu:         mtu,
		dial:        dial,
		readNotify:  make(chan struct{}, 1),
		writeNotify: make(chan struct{}, 1),
		closed:      make(chan struct{}),
		established: make(chan struct{}),
		created:     now,
		lastRecv:    now,
		lastPing:    now,
	}
	c.udp, _ = pc.(*net.UDPConn)
	c.layer = reliability.New(reliability.Config{
		MaxDatagram: mtu - overhead,
		Deliver:     c.deliver,
	}, now)
	c.timer = time.AfterFunc(time.Hour, c.onTimer)
	c.mu.Lock()
	c.arm(now)
	c.mu.Unlock()
	return c
}

// unlock releases c.mu and runs the close callback if the connection was
// closed while it was held.
func (c *Conn) unlock() {
	rm := c.remove
	c.remove = false
	c.mu.Unlock()
	if rm && c.onClose != nil {
		c.onClose(c)
	}
}

// write sends one datagram to the peer.
func (c *Conn) write(b []byte) {
	var err error
	if c.udp != nil {
		_, err = c.udp.WriteToUDPAddrPort(b, c.wap)
	} else {
		_, err = c.pc.WriteTo(b, c.addr)
	}
	if err != nil && c.errLog < 3 {
		c.errLog++
		c.cfg.log.Debug().Err(err).Msg("write datagram")
	}
}

// flush writes every datagram the layer allows now.
func (c *Conn) flush(now time.Time) {
	for {
		d := c.layer.AppendDatagram(c.buf[:0], now)
		if d == nil {
			return
		}
		c.buf = d
		c.write(d)
	}
}

// arm sets the timer to the earliest deadline. A timer that would fire
// later than needed is reset; one that fires early re-arms itself.
func (c *Conn) arm(now time.Time) {
	if c.state == stateClosed {
		return
	}
	next := c.layer.NextDeadline(now)
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	switch c.state {
	case stateHandshake:
		earliest(c.created.Add(c.cfg.timeout))
	case stateConnected:
		earliest(c.lastRecv.Add(c.cfg.timeout))
		earliest(c.lastPing.Add(c.cfg.pingInterval))
	case stateClosing:
		earliest(c.closeBy)
	}
	if !c.timerAt.IsZero() && !next.Before(c.timerAt) {
		return
	}
	c.timerAt = next
	c.timer.Reset(max(next.Sub(now), 0))
}

// onTimer runs when the earliest deadline may have passed.
func (c *Conn) onTimer() {
	c.mu.Lock()
	defer c.unlock()
	if c.state == stateClosed {
		return
	}
	now := time.Now()
	c.timerAt = time.Time{}
	switch c.state {
	case stateHandshake:
		if !now.Before(c.created.Add(c.cfg.timeout)) {
			c.finish(closedBy(ErrPeerTimeout))
			return
		}
	case stateConnected:
		if !now.Before(c.lastRecv.Add(c.cfg.timeout)) {
			c.finish(closedBy(ErrPeerTimeout))
			return
		}
		if !now.Before(c.lastPing.Add(c.cfg.pingInterval)) {
			c.sendPing(now)
		}
	case stateClosing:
		if !now.Before(c.closeBy) {
			c.finish(net.ErrClosed)
			return
		}
	}
	c.flush(now)
	c.arm(now)
}

// handle processes one datagram from the peer.
func (c *Conn) handle(b []byte, now time.Time) {
	c.mu.Lock()
	defer c.unlock()
	if c.state == stateClosed {
		return
	}
	c.lastRecv = now
	before := c.layer.Buffered()
	if err := c.layer.HandleDatagram(now, b); err != nil {
		c.dropped++
		if c.errLog < 3 {
			c.errLog++
			c.cfg.log.Debug().Err(err).Msg("drop datagram")
		}
	}
	if c.state == stateClosed {
		return
	}
	if c.layer.Buffered() < before {
		notify(c.writeNotify)
	}
	c.flush(now)
	if c.state == stateClosing && c.layer.Buffered() == 0 {
		c.finish(net.ErrClosed)
		return
	}
	c.arm(now)
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// deliver receives every message the layer delivers, in order, with c.mu
// held. Control messages are answered here; the rest is queued for Read.
func (c *Conn) deliver(msg []byte) {
	if c.state == stateClosed {
		return
	}
	now := c.lastRecv
	switch msg[0] {
	case wire.IDConnectedPing:
		var m wire.ConnectedPing
		if _, err := m.Decode(msg); err == nil {
			pong := wire.ConnectedPong{PingTime: m.Time, PongTime: c.timestamp(now)}
			c.sendControl(now, pong.Append(c.scratch()), wire.Unreliable)
		}
		return
	case wire.IDConnectedPong:
		var m wire.ConnectedPong
		if _, err := m.Decode(msg); err == nil {
			if rtt := c.timestamp(now) - m.PingTime; rtt >= 0 && rtt < int64(time.Minute/time.Millisecond) {
				c.latency.Store(int64(time.Duration(rtt) * time.Millisecond))
			}
		}
		return
	case wire.IDDetectLostConnections:
		c.sendPing(now)
		return
	case wire.IDDisconnectionNotification:
		c.layer.AckNow()
		c.flush(now)
		c.finish(closedBy(ErrPeerClosed))
		return
	case wire.IDConnectionRequest:
		if !c.dial {
			c.handleConnectionRequest(msg, now)
		}
		return
	case wire.IDConnectionRequestAccepted:
		if c.dial {
			c.handleConnectionAccepted(msg, now)
		}
		return
	case wire.IDNewIncomingConnection:
		if !c.dial && c.state == stateHandshake {
			var m wire.NewIncomingConnection
			if _, err := m.Decode(msg); err != nil {
				c.dropped++
				return
			}
			c.establish()
		}
		return
	}
	if c.state != stateConnected {
		c.dropped++
		return
	}
	if len(c.readQ) >= maxReadQueue || c.readBytes+len(msg) > maxReadQueueBytes {
		c.cfg.log.Debug().Msg("receive queue full: closing")
		c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.ReliableOrdered)
		c.flush(now)
		c.finish(closedBy(ErrQueueFull))
		return
	}
	c.readQ = append(c.readQ, append([]byte(nil), msg...))
	c.readBytes += len(msg)
	notify(c.readNotify)
}

// scratch returns a small buffer for encoding a control message; Send
// copies it.
func (c *Conn) scratch() []byte {
	var b [64]byte
	return b[:0]
}

func (c *Conn) sendControl(now time.Time, b []byte, r wire.Reliability) {
	if _, err := c.layer.Send(now, b, r, 0); err != nil {
		c.cfg.log.Debug().Err(err).Msg("queue control message")
	}
}

// timestamp returns now as RakNet's millisecond clock for this connection.
func (c *Conn) timestamp(now time.Time) int64 { return now.Sub(c.created).Milliseconds() }

func (c *Conn) sendPing(now time.Time) {
	c.lastPing = now
	ping := wire.ConnectedPing{Time: c.timestamp(now)}
	c.sendControl(now, ping.Append(c.scratch()), wire.Unreliable)
}

// handleConnectionRequest answers 0x09 with 0x10 (again for a retry).
func (c *Conn) handleConnectionRequest(msg []byte, now time.Time) {
	var m wire.ConnectionRequest
	if _, err := m.Decode(msg); err != nil {
		c.dropped++
		return
	}
	c.guid = m.ClientGUID
	acc := wire.ConnectionRequestAccepted{ClientAddr: c.raddr, RequestTime: m.Time, AcceptTime: c.timestamp(now)}
	acc.SystemAddrs.N = wire.MaxSystemAddresses
	var b [320]byte
	c.sendControl(now, acc.Append(b[:0]), wire.ReliableOrdered)
}

// handleConnectionAccepted completes a dialed handshake.
func (c *Conn) handleConnectionAccepted(msg []byte, now time.Time) {
	if c.state != stateHandshake {
		return
	}
	var m wire.ConnectionRequestAccepted
	if _, err := m.Decode(msg); err != nil {
		c.dropped++
		return
	}
	nic := wire.NewIncomingConnection{ServerAddr: c.raddr, PingTime: m.AcceptTime, PongTime: c.timestamp(now)}
	nic.SystemAddrs.N = wire.MaxSystemAddresses
	var b [640]byte
	c.sendControl(now, nic.Append(b[:0]), wire.ReliableOrdered)
	c.sendPing(now)
	c.establish()
}

// establish marks the handshake complete.
func (c *Conn) establish() {
	c.state = stateConnected
	c.estOnce.Do(func() { close(c.established) })
	if c.onEstablished != nil {
		c.onEstablished(c)
	}
}

// finish closes the connection at once with err as the reason reads see.
func (c *Conn) finish(err error) {
	if c.state == stateClosed {
		return
	}
	c.state = stateClosed
	c.closeErr = err
	c.timer.Stop()
	close(c.closed)
	c.remove = true
}

// Close closes the connection gracefully: it sends DisconnectionNotification
// after everything written so far, waits until the peer acknowledged it all
// (at most the close timeout), then releases the connection. Close is safe
// to call more than once and concurrently.
func (c *Conn) Close() error {
	c.mu.Lock()
	switch c.state {
	case stateClosed:
		c.unlock()
		return nil
	case stateHandshake:
		now := time.Now()
		c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.Unreliable)
		c.flush(now)
		c.finish(net.ErrClosed)
		c.unlock()
		return nil
	case stateConnected:
		now := time.Now()
		c.state = stateClosing
		c.closeBy = now.Add(c.cfg.closeTimeout)
		c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.ReliableOrdered)
		c.flush(now)
		c.arm(now)
	}
	c.unlock()
	<-c.closed
	return nil
}

// closeNow closes the connection without waiting, telling the peer once.
func (c *Conn) closeNow(err error) {
	c.mu.Lock()
	defer c.unlock()
	if c.state == stateClosed {
		return
	}
	if c.state != stateHandshake {
		now := time.Now()
		c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.Unreliable)
		c.layer.AckNow()
		c.flush(now)
	}
	c.finish(err)
}

// ReadPacket returns the next message from the peer. It blocks until one
// arrives, the read deadline passes or the connection closes.
func (c *Conn) ReadPacket() ([]byte, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if len(c.readQ) > 0 {
			p := c.readQ[0]
			c.readQ[0] = nil
			c.readQ = c.readQ[1:]
			if len(c.readQ) == 0 {
				c.readQ = c.readQ[:0:0]
			}
			c.readBytes -= len(p)
			c.mu.Unlock()
			return p, nil
		}
		if c.state == stateClosed || c.state == stateClosing {
			err := c.closeErr
			if err == nil {
				err = net.ErrClosed
			}
			c.mu.Unlock()
			return nil, c.opErr("read", err)
		}
		c.mu.Unlock()
		var timeout <-chan time.Time
		if dl := c.readDeadline.Load(); dl != nil && !dl.IsZero() {
			d := time.Until(*dl)
			if d <= 0 {
				return nil, c.opErr("read", os.ErrDeadlineExceeded)
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			timeout = timer.C
		}
		select {
		case <-c.readNotify:
		case <-c.closed:
		case <-timeout:
		}
	}
}

// Read reads one message into b. A message larger than b is an error
// (ErrBufferTooSmall) and is discarded.
func (c *Conn) Read(b []byte) (int, error) {
	p, err := c.ReadPacket()
	if err != nil {
		return 0, err
	}
	if len(p) > len(b) {
		return 0, c.opErr("read", ErrBufferTooSmall)
	}
	return copy(b, p), nil
}

// Write sends b as one ReliableOrdered message on channel 0.
func (c *Conn) Write(b []byte) (int, error) {
	return c.WriteWith(b, ReliableOrdered, 0)
}

// WriteWith sends b as one message with reliability r on ordering channel
// channel (0-31). When the send buffer is full it blocks until the peer
// acknowledges enough data, the write deadline passes or the connection
// closes: a writer that outruns the link is slowed, never buffered without
// bound.
func (c *Conn) WriteWith(b []byte, r Reliability, channel uint8) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
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
		_, err := c.layer.Send(now, b, wire.Reliability(r), channel)
		if err == nil {
			c.flush(now)
			c.arm(now)
			c.unlock()
			return len(b), nil
		}
		c.unlock()
		if !errors.Is(err, reliability.ErrSendBufferFull) {
			return 0, c.opErr("write", err)
		}
		var timeout <-chan time.Time
		if dl := c.writeDeadline.Load(); dl != nil && !dl.IsZero() {
			d := time.Until(*dl)
			if d <= 0 {
				return 0, c.opErr("write", os.ErrDeadlineExceeded)
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			timeout = timer.C
		}
		select {
		case <-c.writeNotify:
		case <-c.closed:
		case <-timeout:
		}
	}
}

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "raknet", Source: c.local, Addr: c.RemoteAddr(), Err: err}
}

// LocalAddr returns the local socket address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address (IPv4 peers as IPv4).
func (c *Conn) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(c.raddr) }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for ReadPacket and Read; the zero time
// means none.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(&t)
	notify(c.readNotify)
	return nil
}

// SetWriteDeadline sets the deadline for a Write blocked on a full send
// buffer; the zero time means none.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline.Store(&t)
	notify(c.writeNotify)
	return nil
}

// Latency returns the round-trip time measured by connected pings, or the
// reliability layer's smoothed RTT before the first pong.
func (c *Conn) Latency() time.Duration {
	if l := c.latency.Load(); l > 0 {
		return time.Duration(l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.layer.RTT()
}

// MTU returns the negotiated MTU, IP and UDP headers included.
func (c *Conn) MTU() int { return c.mtu }

// GUID returns the peer's RakNet GUID (its self-chosen id; not an identity).
func (c *Conn) GUID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.guid
}

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	s := c.layer.Stats()
	dropped := c.dropped
	c.mu.Unlock()
	st := Stats{
		RTT: s.SRTT, RTTVar: s.RTTVar,
		DatagramsSent: s.DatagramsSent, DatagramsReceived: s.DatagramsReceived,
		BytesSent: s.BytesSent, BytesReceived: s.BytesReceived,
		MessagesSent: s.MessagesSent, MessagesReceived: s.MessagesDelivered,
		Resends: s.FramesResent, DatagramsLost: s.DatagramsLost,
		Window: s.Window, InFlight: s.InFlight, Buffered: s.Buffered,
		Dropped: dropped + s.Errors,
	}
	if s.DatagramsSent > 0 {
		st.Loss = float64(s.DatagramsLost) / float64(s.DatagramsSent)
	}
	return st
}

// Done returns a channel closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }
