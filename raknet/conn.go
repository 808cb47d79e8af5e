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
	// DefaultTimeout is how long a silent peer lives.
	DefaultTimeout = 10 * time.Second
	// DefaultPingInterval is how often a connection sends a connected
	// ping.
	DefaultPingInterval = 2500 * time.Millisecond
	// DefaultCloseTimeout bounds how long Close waits for the peer to
	// acknowledge what was written.
	DefaultCloseTimeout = 3 * time.Second
	// maxReadQueue and maxReadQueueBytes bound the messages received but
	// not yet read. When either is reached, data datagrams are refused
	// unacknowledged until the reader catches up, so the peer's sender
	// backs off instead of the queue growing.
	maxReadQueue      = 16384
	maxReadQueueBytes = 64 << 20
	// smallReadQueue is the read queue capacity kept once it drains.
	smallReadQueue = 64
	// ipv4Overhead and ipv6Overhead are the IP + UDP header sizes the MTU
	// includes.
	ipv4Overhead = 28
	ipv6Overhead = 48
	// maxPingRTT bounds a plausible connected ping round trip.
	maxPingRTT = time.Minute
	// lingerTime is how long datagrams from a peer that closed the
	// connection are still acknowledged (without state), as TCP's
	// TIME_WAIT: a peer whose earlier ACKs were lost resends data we
	// already have, and would otherwise wait out its close timeout.
	lingerTime = time.Second
)

// Stats are a connection's counters and estimates.
type Stats struct {
	RTT, RTTVar       time.Duration // smoothed round-trip time and variance
	DatagramsSent     uint64        // every datagram, ACKs and NACKs included
	DatagramsReceived uint64
	BytesSent         uint64 // UDP payload bytes
	BytesReceived     uint64
	MessagesSent      uint64
	MessagesReceived  uint64
	Resends           uint64  // frames sent again
	DatagramsLost     uint64  // data datagrams NACKed or timed out
	Loss              float64 // DatagramsLost / data datagrams sent
	Window            int     // congestion window in bytes
	InFlight          int     // bytes in flight
	Buffered          int     // bytes written but not yet acknowledged
	Dropped           uint64  // malformed datagrams and control messages
	Deferred          uint64  // data datagrams refused while the read queue was full
}

type connState uint8

const (
	stateHandshake connState = iota
	stateConnected
	stateClosing
	stateClosed
)

// newConnConfig fills in the defaults for what a Listener or Dialer was
// configured with.
func newConnConfig(timeout, pingInterval, closeTimeout time.Duration, log zerolog.Logger, lim limits) connConfig {
	return connConfig{
		timeout:        orDefault(timeout, DefaultTimeout),
		pingInterval:   orDefault(pingInterval, DefaultPingInterval),
		closeTimeout:   orDefault(closeTimeout, DefaultCloseTimeout),
		log:            log,
		readQueue:      lim.readQueue,
		readQueueBytes: lim.readQueueBytes,
		sendBuffer:     lim.sendBuffer,
	}
}

// tuneSocket raises a UDP socket's kernel buffers, so bursts from many
// peers do not overflow them (failing to is harmless), and returns it as
// a *net.UDPConn, nil for other sockets.
func tuneSocket(pc net.PacketConn) *net.UDPConn {
	udp, ok := pc.(*net.UDPConn)
	if ok {
		_ = udp.SetReadBuffer(socketBuffer)
		_ = udp.SetWriteBuffer(socketBuffer)
	}
	return udp
}

// connConfig is what a Conn takes from its Listener or Dialer.
type connConfig struct {
	timeout, pingInterval, closeTimeout time.Duration
	log                                 zerolog.Logger
	// dropped, if set, also counts what the connection drops: the
	// listener's total.
	dropped *atomic.Uint64
	// readQueue, readQueueBytes and sendBuffer override maxReadQueue,
	// maxReadQueueBytes and the layer's send buffer when positive (tests).
	readQueue, readQueueBytes, sendBuffer int
}

// Conn is a RakNet connection. It implements net.Conn: Read and ReadPacket
// return one message each, Write sends one ReliableOrdered message on
// channel 0. All methods are safe for concurrent use.
//
// A Conn has no goroutine of its own: datagrams are handled by the socket
// reader that owns the socket, writes by the writer's goroutine, and timers
// (ACK flush, resend, pacing, keepalive, timeout) by one time.Timer armed
// for the earliest deadline, so an idle connection wakes only to ping.
type Conn struct {
	mu    sync.Mutex
	layer *reliability.Layer
	state connState
	cfg   connConfig

	pc    net.PacketConn
	udp   *net.UDPConn // pc as a UDPConn, for allocation-free writes
	addr  net.Addr     // the peer as the socket reports it; unused (may be nil) with udp
	wap   netip.AddrPort
	raddr netip.AddrPort // the peer, IPv4 unmapped
	local net.Addr
	mtu   int
	guid  int64 // the peer's GUID
	dial  bool

	readQ     [][]byte // delivered messages; those from readHead on are unread
	readHead  int
	readBytes int
	maxReadQ  int
	maxReadB  int
	// readWait and writeWait are closed (and cleared) to wake every
	// blocked reader or writer; they exist only while someone waits.
	readWait, writeWait chan struct{}
	closed              chan struct{}
	// released is closed once the connection is gone for good: removed
	// from its listener, or its socket closed and its read loop ended.
	released    chan struct{}
	releaseOnce sync.Once
	closeErr    error
	// lingering is set when the peer closed the connection: see
	// lingerTime.
	lingering   bool
	established chan struct{}

	readDeadline, writeDeadline atomic.Pointer[time.Time]

	timer    *time.Timer
	timerAt  time.Time
	created  time.Time
	lastRecv time.Time
	// lastSent is when a datagram last left. A connection pings only after
	// a ping interval with nothing sent: any datagram (a pong to the peer's
	// own ping, an ACK of its data) keeps the peer's timeout at bay, so a
	// busy or pinged connection sends no keepalive of its own.
	lastSent time.Time
	closeBy  time.Time
	// pingSent and pingStamp identify the latest connected ping, so its
	// pong gives an exact round trip.
	pingSent  time.Time
	pingStamp int64
	latency   atomic.Int64
	wakeups   atomic.Uint64
	dropped   uint64
	deferred  uint64
	remove    bool
	// notified is set once DisconnectionNotification was queued by Close.
	notified bool
	errLog   int

	// onEstablished runs with c.mu held once the handshake completes (it
	// must not block); onClose runs without c.mu once the connection is
	// closed.
	onEstablished func(*Conn)
	onClose       func(*Conn)
	// reply2 is the OpenConnectionReply2 sent for this connection and
	// accepted the ConnectionRequestAccepted message, both resent as they
	// are when a retried request arrives.
	reply2   []byte
	accepted []byte
}

var _ net.Conn = (*Conn)(nil)

// newConn returns a connection in the handshake state. Its timer is not
// armed until start, so the caller may finish setting it up.
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
		maxReadQ:    maxReadQueue,
		maxReadB:    maxReadQueueBytes,
		closed:      make(chan struct{}),
		released:    make(chan struct{}),
		established: make(chan struct{}),
		created:     now,
		lastRecv:    now,
		lastSent:    now,
	}
	if cfg.readQueue > 0 {
		c.maxReadQ = cfg.readQueue
	}
	if cfg.readQueueBytes > 0 {
		c.maxReadB = cfg.readQueueBytes
	}
	c.udp, _ = pc.(*net.UDPConn)
	c.layer = reliability.New(reliability.Config{
		MaxDatagram:   mtu - overhead,
		Deliver:       c.deliver,
		MaxSendBuffer: cfg.sendBuffer,
	}, now)
	return c
}

// start arms the connection's timer. Call it once, before the connection
// is visible to any other goroutine.
func (c *Conn) start(now time.Time) {
	c.mu.Lock()
	c.timer = time.AfterFunc(time.Hour, c.onTimer)
	c.arm(now)
	c.mu.Unlock()
}

// unlock releases c.mu and, if the connection was closed while it was
// held, runs the close callback and releases the connection.
func (c *Conn) unlock() {
	rm := c.remove
	c.remove = false
	c.mu.Unlock()
	if !rm {
		return
	}
	if c.onClose != nil {
		c.onClose(c)
	}
	if !c.dial || c.lingering {
		// A dialed connection is otherwise released by its read loop,
		// which ends once onClose closed the socket. A lingering one
		// keeps reading for lingerTime but holds nothing of the caller's.
		c.release()
	}
}

// release closes c.released once.
func (c *Conn) release() { c.releaseOnce.Do(func() { close(c.released) }) }

// appendAckFor appends an ACK of data datagram b to dst, or returns nil
// if b is not a data datagram.
func appendAckFor(dst, b []byte) []byte {
	var h wire.DatagramHeader
	if _, err := h.Decode(b); err != nil {
		return nil
	}
	a := wire.Ack{Ranges: []wire.AckRange{{Start: h.Number, End: h.Number}}}
	return a.Append(dst)
}

// wake closes *ch, waking everyone waiting on it.
func wake(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// waitOn returns the channel *ch, creating it if needed.
func waitOn(ch *chan struct{}) chan struct{} {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

// drop counts a malformed datagram or message.
func (c *Conn) drop() {
	c.dropped++
	if c.cfg.dropped != nil {
		c.cfg.dropped.Add(1)
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

// datagramBuffers holds the buffers datagrams are built in. Connections
// borrow one per flush instead of keeping their own, so an idle connection
// holds no MTU-sized buffer.
var datagramBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, MaxMTU)
	return &b
}}

// flush writes every datagram the layer allows now.
func (c *Conn) flush(now time.Time) {
	c.flushCopies(now, 1)
}

// flushCopies writes every datagram the layer allows now, each copies
// times.
func (c *Conn) flushCopies(now time.Time, copies int) {
	bp := datagramBuffers.Get().(*[]byte)
	defer datagramBuffers.Put(bp)
	for {
		d := c.layer.AppendDatagram((*bp)[:0], now)
		if d == nil {
			return
		}
		*bp = d
		for range copies {
			c.write(d)
		}
		c.lastSent = now
	}
}

// finalCopies is how many times the last datagrams of a connection are
// written: nothing resends them once it is gone, so the peer would wait
// out its close timeout (for the ACK of its DisconnectionNotification) or
// its peer timeout (for ours) if the only copy were lost. The receiver
// drops the duplicates by datagram number.
const finalCopies = 3

// flushFinal writes every datagram the layer allows now finalCopies times.
func (c *Conn) flushFinal(now time.Time) {
	c.flushCopies(now, finalCopies)
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
		earliest(c.lastSent.Add(c.cfg.pingInterval))
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
	c.wakeups.Add(1)
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
		if !now.Before(c.lastSent.Add(c.cfg.pingInterval)) {
			c.sendPing(now)
		}
	case stateClosing:
		if !now.Before(c.closeBy) {
			// The peer never acknowledged everything: unless it was told
			// already, tell it at once before going.
			c.abort(net.ErrClosed, !c.notified)
			return
		}
	}
	c.flush(now)
	c.arm(now)
}

// readFull reports whether the read queue is at its bound.
func (c *Conn) readFull() bool {
	return len(c.readQ)-c.readHead >= c.maxReadQ || c.readBytes >= c.maxReadB
}

// handle processes one datagram from the peer.
func (c *Conn) handle(b []byte, now time.Time) {
	c.mu.Lock()
	defer c.unlock()
	if c.state == stateClosed {
		if c.lingering {
			bp := datagramBuffers.Get().(*[]byte)
			if ack := appendAckFor((*bp)[:0], b); ack != nil {
				*bp = ack
				c.write(ack)
			}
			datagramBuffers.Put(bp)
		}
		return
	}
	c.lastRecv = now
	if b[0]&(wire.FlagACK|wire.FlagNACK) == 0 && c.readFull() {
		// Flow control: nobody reads, so refuse data without
		// acknowledging it. The peer resends it later, backing off.
		c.deferred++
		return
	}
	before := c.layer.Buffered()
	if err := c.layer.HandleDatagram(now, b); err != nil {
		c.drop()
		if c.errLog < 3 {
			c.errLog++
			c.cfg.log.Debug().Err(err).Msg("drop datagram")
		}
	}
	if c.state == stateClosed {
		return
	}
	if c.layer.Buffered() < before {
		wake(&c.writeWait)
	}
	if c.state == stateClosing && c.layer.Buffered() == 0 {
		if !c.notified {
			// Everything written before Close is acknowledged: only now
			// tell the peer, so it has delivered all of it first.
			c.notifyPeer(now)
		} else {
			// Nothing resends what leaves now: ACKs still held back go
			// with the final copies.
			c.layer.AckNow()
			c.flushFinal(now)
			c.finish(net.ErrClosed)
			return
		}
	}
	c.flush(now)
	c.arm(now)
}

// notifyPeer queues DisconnectionNotification, reliable and ordered behind
// everything written before it.
func (c *Conn) notifyPeer(now time.Time) {
	c.notified = true
	c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.ReliableOrdered)
}

// deliver receives every message the layer delivers, in order, with c.mu
// held. Control messages are answered here; the rest is queued for Read.
func (c *Conn) deliver(msg []byte) {
	if c.state == stateClosed || len(msg) == 0 {
		return
	}
	now := c.lastRecv
	switch msg[0] {
	case wire.IDConnectedPing:
		var m wire.ConnectedPing
		if _, err := m.Decode(msg); err != nil {
			c.drop()
			return
		}
		pong := wire.ConnectedPong{PingTime: m.Time, PongTime: c.timestamp(now)}
		var b [wire.ConnectedPongSize]byte
		c.sendControl(now, pong.Append(b[:0]), wire.Unreliable)
		return
	case wire.IDConnectedPong:
		var m wire.ConnectedPong
		if _, err := m.Decode(msg); err != nil {
			c.drop()
			return
		}
		c.onPong(m.PingTime, now)
		return
	case wire.IDDetectLostConnections:
		c.sendPing(now)
		return
	case wire.IDDisconnectionNotification:
		c.layer.AckNow()
		c.flushFinal(now)
		c.lingering = true
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
			// Its addresses are informational: a NIC that names another
			// address (NAT, port forwarding) or does not parse still
			// completes the handshake.
			c.establish()
		}
		return
	}
	if c.state == stateClosing {
		return
	}
	// Messages that overtake NewIncomingConnection (a client that sends
	// it on another channel) wait in the queue for the handshake.
	c.readQ = append(c.readQ, append([]byte(nil), msg...))
	c.readBytes += len(msg)
	wake(&c.readWait)
}

// onPong takes a round-trip sample from a connected pong.
func (c *Conn) onPong(stamp int64, now time.Time) {
	var rtt time.Duration
	if stamp == c.pingStamp && !c.pingSent.IsZero() {
		rtt = now.Sub(c.pingSent)
	} else {
		rtt = time.Duration(c.timestamp(now)-stamp) * time.Millisecond
	}
	if rtt < 0 || rtt > maxPingRTT {
		return
	}
	rtt = max(rtt, time.Microsecond)
	if prev := time.Duration(c.latency.Load()); prev > 0 {
		rtt = (7*prev + rtt) / 8
	}
	c.latency.Store(int64(rtt))
}

// sendControl queues a control message; Send copies b, so callers encode
// into buffers on their stack.
func (c *Conn) sendControl(now time.Time, b []byte, r wire.Reliability) {
	if _, err := c.layer.Send(now, b, r, 0); err != nil && c.errLog < 3 {
		// Only a full send buffer refuses one; the peer is not reading.
		c.errLog++
		c.cfg.log.Debug().Err(err).Msg("queue control message")
	}
}

// timestamp returns now as RakNet's millisecond clock for this connection.
func (c *Conn) timestamp(now time.Time) int64 { return now.Sub(c.created).Milliseconds() }

func (c *Conn) sendPing(now time.Time) {
	c.lastSent = now
	c.pingSent, c.pingStamp = now, c.timestamp(now)
	ping := wire.ConnectedPing{Time: c.pingStamp}
	var b [wire.ConnectedPingSize]byte
	c.sendControl(now, ping.Append(b[:0]), wire.Unreliable)
}

// handleConnectionRequest answers 0x09 with 0x10; a retried request gets
// the same reply.
func (c *Conn) handleConnectionRequest(msg []byte, now time.Time) {
	if c.accepted == nil {
		var m wire.ConnectionRequest
		if _, err := m.Decode(msg); err != nil {
			c.drop()
			return
		}
		c.guid = m.ClientGUID
		acc := wire.ConnectionRequestAccepted{ClientAddr: c.raddr, RequestTime: m.Time, AcceptTime: c.timestamp(now)}
		acc.SystemAddrs.N = wire.MaxSystemAddresses
		c.accepted = acc.Append(nil)
	}
	c.sendControl(now, c.accepted, wire.ReliableOrdered)
}

// handleConnectionAccepted completes a dialed handshake.
func (c *Conn) handleConnectionAccepted(msg []byte, now time.Time) {
	if c.state != stateHandshake {
		return
	}
	var m wire.ConnectionRequestAccepted
	if _, err := m.Decode(msg); err != nil {
		c.drop()
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
	close(c.established)
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
	if c.timer != nil {
		c.timer.Stop()
	}
	close(c.closed)
	wake(&c.readWait)
	wake(&c.writeWait)
	c.remove = true
}

// abort closes the connection at once, telling the peer with one
// unreliable DisconnectionNotification when tell is set. c.mu is held.
func (c *Conn) abort(err error, tell bool) {
	if c.state == stateClosed {
		return
	}
	if tell {
		now := time.Now()
		c.sendControl(now, []byte{wire.IDDisconnectionNotification}, wire.Unreliable)
		c.layer.AckNow()
		c.flushFinal(now)
	}
	c.finish(err)
}

// Close closes the connection gracefully: it sends DisconnectionNotification
// after everything written so far, waits until the peer acknowledged it all
// (at most the close timeout), then releases the connection. Blocked reads
// and writes return at once. Close is safe to call more than once and
// concurrently; every call returns once the connection is released.
func (c *Conn) Close() error {
	c.mu.Lock()
	switch c.state {
	case stateHandshake:
		c.abort(net.ErrClosed, true)
	case stateConnected:
		now := time.Now()
		c.state = stateClosing
		c.closeBy = now.Add(c.cfg.closeTimeout)
		// DisconnectionNotification goes out once the peer acknowledged
		// what was written: some peers (go-raknet, so gophertunnel) drop
		// packets they have not handed to their reader when it arrives.
		if c.layer.Buffered() == 0 {
			c.notifyPeer(now)
		}
		c.flush(now)
		c.arm(now)
		wake(&c.readWait)
		wake(&c.writeWait)
	}
	c.unlock()
	<-c.released
	return nil
}

// closeNow closes the connection without waiting, telling the peer once.
func (c *Conn) closeNow(err error, tell bool) {
	c.mu.Lock()
	c.abort(err, tell)
	c.unlock()
}

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

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// ReadPacket returns the next message from the peer. It blocks until one
// arrives, the read deadline passes or the connection closes. Messages
// that arrived before the peer closed are still returned.
func (c *Conn) ReadPacket() ([]byte, error) {
	var timer *time.Timer
	defer func() { stopTimer(timer) }()
	for {
		left, expired := deadline(&c.readDeadline)
		if expired {
			return nil, c.opErr("read", os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
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
		wait := waitOn(&c.readWait)
		c.mu.Unlock()
		select {
		case <-wait:
		case <-timerFor(left, &timer):
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
// channel (0-31). b is copied. When the send buffer is full it blocks until
// the peer acknowledges enough data, the write deadline passes or the
// connection closes: a writer that outruns the link is slowed, never
// buffered without bound.
func (c *Conn) WriteWith(b []byte, r Reliability, channel uint8) (int, error) {
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
		_, err := c.layer.Send(now, b, wire.Reliability(r), channel)
		if err == nil {
			c.flush(now)
			c.arm(now)
			c.unlock()
			return len(b), nil
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

// SetReadDeadline sets the deadline for ReadPacket and Read, including
// calls already blocked; the zero time means none.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Store(&t)
	c.mu.Lock()
	wake(&c.readWait)
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
	}
	if data := s.DatagramsSent - s.AcksSent - s.NacksSent; data > 0 {
		st.Loss = float64(s.DatagramsLost) / float64(data)
	}
	return st
}

// Done returns a channel closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }
