package raknet

import (
	"net"
	"net/netip"
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
// plain counterparts; written with Conn.WriteReceipt, the connection's
// receipt function learns whether each arrived.
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
	// finalCopies is how many times the last datagrams of a connection
	// are written: nothing resends them once it is gone, so the peer would
	// wait out its close timeout (for the ACK of its
	// DisconnectionNotification) or its peer timeout (for ours) if the
	// only copy were lost. The receiver drops the duplicates by datagram
	// number.
	finalCopies = 3
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

// Receipt is the fate of a message written with Conn.WriteReceipt: Acked
// when the peer acknowledged all of it, false when an unreliable one was
// lost.
type Receipt struct {
	ID    uint32
	Acked bool
}

type connState uint8

const (
	stateHandshake connState = iota
	stateConnected
	stateClosing
	stateClosed
)

func (s connState) String() string {
	switch s {
	case stateHandshake:
		return "handshake"
	case stateConnected:
		return "connected"
	case stateClosing:
		return "closing"
	default:
		return "closed"
	}
}

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

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
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
// Whoever drives it builds datagrams under its lock and writes them once
// the lock is released.
type Conn struct {
	mu    sync.Mutex
	layer *reliability.Layer
	ctl   control
	state connState
	cfg   connConfig

	ep    *endpoint
	wap   netip.AddrPort // the peer as the socket reports it
	raddr netip.AddrPort // the peer, IPv4 unmapped
	mtu   int
	guid  int64 // the peer's GUID; set before the Conn is shared
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
	lastRecv time.Time
	// lastSent is when a datagram last left. A connection pings only after
	// a ping interval with nothing sent: any datagram (a pong to the peer's
	// own ping, an ACK of its data) keeps the peer's timeout at bay, so a
	// busy or pinged connection sends no keepalive of its own.
	lastSent time.Time
	closeBy  time.Time
	latency  atomic.Int64
	wakeups  atomic.Uint64
	dropped  uint64
	deferred uint64
	errLog   int
	// notified is set once DisconnectionNotification was queued by Close.
	notified bool
	// Set while the layer delivers, acted on once it returns, so the
	// datagram that carried them is in the ACK set first.
	peerClosed, justEstablished bool

	// out holds the datagrams built under mu; unlock writes them.
	out *outbox
	// receipts holds receipts learned under mu; unlock reports them to
	// onReceipt.
	receipts  []Receipt
	onReceipt atomic.Pointer[func(Receipt)]
	// remove is set when the connection closed under mu: unlock runs
	// onClose.
	remove bool

	// onEstablished runs with c.mu held once the handshake completes (it
	// must not block); onClose runs without c.mu once the connection is
	// closed.
	onEstablished func(*Conn)
	onClose       func(*Conn)
	// reply2 is the OpenConnectionReply2 sent for this connection, sent
	// again as it is when a retried request arrives.
	reply2 []byte
}

var _ net.Conn = (*Conn)(nil)

// newConn returns a connection in the handshake state. Its timer is not
// armed until start, so the caller may finish setting it up.
func newConn(ep *endpoint, wap netip.AddrPort, mtu int, cfg connConfig, dial bool, now time.Time) *Conn {
	raddr := key(wap)
	c := &Conn{
		cfg:         cfg,
		ep:          ep,
		wap:         wap,
		raddr:       raddr,
		mtu:         mtu,
		dial:        dial,
		ctl:         newControl(dial, raddr, now),
		maxReadQ:    maxReadQueue,
		maxReadB:    maxReadQueueBytes,
		closed:      make(chan struct{}),
		released:    make(chan struct{}),
		established: make(chan struct{}),
		lastRecv:    now,
		lastSent:    now,
	}
	if cfg.readQueue > 0 {
		c.maxReadQ = cfg.readQueue
	}
	if cfg.readQueueBytes > 0 {
		c.maxReadB = cfg.readQueueBytes
	}
	c.layer = reliability.New(reliability.Config{
		MaxDatagram:   mtu - overhead(raddr),
		Deliver:       c.deliver,
		Receipt:       c.receipt,
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

// unlock releases c.mu, then writes the datagrams built while it was
// held, reports receipts and, if the connection was closed meanwhile, runs
// the close callback and releases the connection. No syscall and no
// callback runs under c.mu.
func (c *Conn) unlock() {
	out := c.out
	c.out = nil
	var receipts []Receipt
	if len(c.receipts) > 0 {
		receipts = c.receipts
		c.receipts = nil
	}
	rm := c.remove
	c.remove = false
	lingering := c.lingering
	c.mu.Unlock()
	if out != nil {
		c.send(out)
	}
	if receipts != nil {
		if f := c.onReceipt.Load(); f != nil {
			for _, r := range receipts {
				(*f)(r)
			}
		}
	}
	if !rm {
		return
	}
	if c.onClose != nil {
		c.onClose(c)
	}
	if !c.dial || lingering {
		// A dialed connection is otherwise released by its read loop,
		// which ends once onClose closed the socket. A lingering one
		// keeps reading for lingerTime but holds nothing of the caller's.
		c.release()
	}
}

// release closes c.released once.
func (c *Conn) release() { c.releaseOnce.Do(func() { close(c.released) }) }

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

// receipt records a receipt from the layer; unlock reports it.
func (c *Conn) receipt(id uint32, acked bool) {
	if c.onReceipt.Load() != nil {
		c.receipts = append(c.receipts, Receipt{ID: id, Acked: acked})
	}
}

// flush builds every datagram the layer allows now into c.out.
func (c *Conn) flush(now time.Time) { c.flushCopies(now, 1) }

// flushFinal builds every datagram the layer allows now, ACKs held back
// included, to be written finalCopies times.
func (c *Conn) flushFinal(now time.Time) {
	c.layer.AckNow()
	c.flushCopies(now, finalCopies)
}

// flushCopies builds every datagram the layer allows now into c.out, each
// to be written copies times.
func (c *Conn) flushCopies(now time.Time, copies int) {
	for {
		bp := datagramBuffers.Get().(*[]byte)
		d := c.layer.AppendDatagram((*bp)[:0], now)
		if d == nil {
			datagramBuffers.Put(bp)
			return
		}
		*bp = d
		if c.out == nil {
			c.out = outboxes.Get().(*outbox)
		}
		c.out.add(bp, copies)
		c.lastSent = now
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
		earliest(c.ctl.created.Add(c.cfg.timeout))
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
		if !now.Before(c.ctl.created.Add(c.cfg.timeout)) {
			c.finish(closedBy(ErrPeerTimeout))
			return
		}
	case stateConnected:
		if !now.Before(c.lastRecv.Add(c.cfg.timeout)) {
			c.finish(closedBy(ErrPeerTimeout))
			return
		}
		if !now.Before(c.lastSent.Add(c.cfg.pingInterval)) {
			c.lastSent = now
			c.sendControl(now, c.ctl.ping(now))
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
	if c.justEstablished {
		c.justEstablished = false
		c.establish()
	}
	if c.peerClosed {
		// The datagram that carried DisconnectionNotification is in the
		// ACK set by now: acknowledge it in this pass, so the peer's Close
		// returns without waiting for a resend.
		c.flushFinal(now)
		c.lingering = true
		c.finish(closedBy(ErrPeerClosed))
		return
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
	c.sendControl(now, disconnect(true))
}

// deliver receives every message the layer delivers, in order, with c.mu
// held. The control protocol answers its messages; the rest is queued for
// Read.
func (c *Conn) deliver(msg []byte) {
	if c.state == stateClosed || c.peerClosed {
		return
	}
	now := c.lastRecv
	ev, replies := c.ctl.handle(msg, now)
	for _, r := range replies {
		c.sendControl(now, r)
	}
	switch ev {
	case evMalformed:
		c.drop()
	case evEstablished:
		c.justEstablished = true
		if c.dial {
			c.lastSent = now
		}
	case evPeerClosed:
		c.peerClosed = true
	case evData:
		if c.state == stateClosing {
			return
		}
		// Messages that overtake NewIncomingConnection (a client that
		// sends it on another channel) wait in the queue for the
		// handshake.
		c.readQ = append(c.readQ, append([]byte(nil), msg...))
		c.readBytes += len(msg)
		wake(&c.readWait)
	}
	if c.ctl.latency > 0 {
		c.latency.Store(int64(c.ctl.latency))
	}
}

// sendControl queues a control message; Send copies it.
func (c *Conn) sendControl(now time.Time, r ctlReply) {
	if _, err := c.layer.Send(now, r.b, r.rel, 0); err != nil && c.errLog < 3 {
		// Only a full send buffer refuses one; the peer is not reading.
		c.errLog++
		c.cfg.log.Debug().Err(err).Msg("queue control message")
	}
}

// establish marks the handshake complete.
func (c *Conn) establish() {
	if c.state != stateHandshake {
		return
	}
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
		c.sendControl(now, disconnect(false))
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
