package raknet

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/reliability"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// Reliability selects how a message is delivered. Game traffic uses
// ReliableOrdered, which Write uses. It is the type the frame codec
// carries (as quic-go's StreamID is its protocol package's), so that the
// enum and its String are written once.
type Reliability = wire.Reliability

// The RakNet reliabilities. The WithAckReceipt variants travel as their
// plain counterparts; written with Conn.WriteReceipt, the connection's
// receipt function learns whether each arrived.
const (
	Unreliable                    = wire.Unreliable
	UnreliableSequenced           = wire.UnreliableSequenced
	Reliable                      = wire.Reliable
	ReliableOrdered               = wire.ReliableOrdered
	ReliableSequenced             = wire.ReliableSequenced
	UnreliableWithAckReceipt      = wire.UnreliableWithAckReceipt
	ReliableWithAckReceipt        = wire.ReliableWithAckReceipt
	ReliableOrderedWithAckReceipt = wire.ReliableOrderedWithAckReceipt
)

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
	// The messages received but not yet read are bounded by the
	// reliability layer's delivery budget (reliability.DefaultMaxHeldMessages
	// and DefaultMaxHeldBytes: 16384 messages, 64 MiB). At the bound it
	// refuses data unacknowledged and asks for it again once the reader
	// catches up, so the peer's sender waits instead of the queue growing.

	// smallReadQueue is the read queue capacity kept once it drains.
	smallReadQueue = 64
	// maxSpare is how many message buffers Read keeps for reuse.
	maxSpare = 4
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
	Deferred          uint64  // data datagrams refused while the read queue or the listener's memory budget was full (asked for again later)
	AcksSent          uint64  // ACK datagrams sent
	NacksSent         uint64  // NACK datagrams sent
	NacksReceived     uint64  // NACK datagrams received and acted on
	LossIn            float64 // share of the peer's data datagrams that did not arrive (or not yet)
}

// Receipt is the fate of a message written with Conn.WriteReceipt: Acked
// when the peer acknowledged all of it, false when an unreliable one was
// lost.
type Receipt struct {
	ID    uint32
	Acked bool
}

// account is a connection's share of its listener's memory budget, as
// the reliability layer charges it: refusals are counted for the listener.
type account struct {
	a       *guard.Account
	refused *atomic.Uint64
}

// Reserve charges n bytes, or counts a refusal.
func (a *account) Reserve(n int) bool {
	if a.a.Reserve(n) {
		return true
	}
	a.refused.Add(1)
	return false
}

// Release returns n bytes.
func (a *account) Release(n int) { a.a.Release(n) }

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
	// handshakeTimeout bounds the handshake; 0 means timeout.
	handshakeTimeout time.Duration
	log              zerolog.Logger
	// account is the connection's share of its listener's memory budget;
	// nil for dialed connections and listeners without one.
	account *account
	// readQueue, readQueueBytes and sendBuffer override the layer's
	// delivery budget and send buffer when positive (tests).
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
	wap   netip.AddrPort // where datagrams go: the peer, or the proxy it is behind, as the socket reports it
	raddr netip.AddrPort // the peer, IPv4 unmapped
	mtu   int
	guid  int64 // the peer's GUID; set before the Conn is shared
	// owner learns, once c.mu is released, that the connection completed
	// its handshake or closed: its listener's record of it, or its
	// dialer.
	owner owner

	readQ [][]byte // delivered messages; those from readHead on are unread
	// spare holds buffers of messages Read copied out, for deliver to
	// copy later messages into (at most maxSpare, each no larger than
	// the MTU).
	spare    [][]byte
	readHead int
	// readWait and writeWait are closed (and cleared) to wake every
	// blocked reader or writer; they exist only while someone waits.
	readWait, writeWait chan struct{}
	// readSig wakes one blocked reader without an allocation per wait:
	// the first reader to block waits on it (readSigTaken), any other on
	// readWait. Made on the first wait and kept.
	readSig      chan struct{}
	readSigTaken bool
	closed       chan struct{}
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

	// out holds the datagrams built under mu; unlock writes them.
	out *outbox
	// onReceipt learns the receipts the layer reported in a pass; unlock
	// calls it.
	onReceipt atomic.Pointer[func(Receipt)]
	// tell is what unlock tells the owner: what happened under mu.
	tell ownerEvents
	// amp, while set (a listener's connection in its handshake), bounds
	// what the connection sends by what it received. The listener's
	// record of the connection holds it; the connection drops it once
	// established.
	amp *ampBudget
}

// owner is who made a connection, and learns what becomes of it: a
// listener's record of the connection (peer), or a dialer's (dialOwner).
// Its methods run without the connection's lock, on the goroutine that
// made the change, once.
type owner interface {
	// established: the connection completed its handshake.
	established(c *Conn)
	// closed: the connection closed.
	closed(c *Conn)
}

// ownerEvents are what a pass over a connection tells its owner.
type ownerEvents uint8

const (
	tellEstablished ownerEvents = 1 << iota
	tellClosed
)

// ampBudget is QUIC's anti-amplification rule for a connection in its
// handshake: it sends at most ampFactor times the bytes it received.
type ampBudget struct {
	in, out int
}

// allow reports whether n more bytes may be sent, and counts them if so.
func (a *ampBudget) allow(n int) bool {
	if a.out+n > ampFactor*a.in {
		return false
	}
	a.out += n
	return true
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
		ctl:         newControl(dial, raddr, now),
		closed:      make(chan struct{}),
		released:    make(chan struct{}),
		established: make(chan struct{}),
		lastRecv:    now,
		lastSent:    now,
	}
	var budget reliability.Budget
	if cfg.account != nil {
		budget = cfg.account
	}
	c.layer = reliability.New(reliability.Config{
		Budget:          budget,
		MaxDatagram:     udpPayload(mtu, raddr),
		MaxSendBuffer:   cfg.sendBuffer,
		MaxHeldMessages: cfg.readQueue,
		MaxHeldBytes:    cfg.readQueueBytes,
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
// held, reports the receipts the layer learned in the pass and tells the
// owner if the connection completed its handshake or closed meanwhile,
// and releases a closed connection. No syscall and no callback runs under
// c.mu.
func (c *Conn) unlock() {
	out := c.out
	c.out = nil
	receipts := c.takeReceipts()
	tell := c.tell
	c.tell = 0
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
	if tell == 0 {
		return
	}
	if tell&tellEstablished != 0 {
		c.owner.established(c)
	}
	if tell&tellClosed == 0 {
		return
	}
	c.owner.closed(c)
	if !c.ctl.dial || lingering {
		// A dialed connection is otherwise released by its read loop,
		// which ends once its owner closed the socket. A lingering one
		// keeps reading for lingerTime but holds nothing of the caller's.
		c.release()
	}
}

// isEstablished reports whether the handshake completed; it takes no
// lock.
func (c *Conn) isEstablished() bool {
	select {
	case <-c.established:
		return true
	default:
		return false
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
	c.ep.n.dropped.Add(1)
}

// takeReceipts drains the receipts the layer learned in this pass (the
// ACKs and NACKs handled, the timeouts run by flush): a copy for
// onReceipt to learn once c.mu is released, or nil if there were none or
// no one listens. c.mu is held.
func (c *Conn) takeReceipts() []Receipt {
	r := c.layer.Receipts()
	if len(r) == 0 || c.onReceipt.Load() == nil {
		return nil
	}
	receipts := make([]Receipt, len(r))
	for i, x := range r {
		receipts[i] = Receipt(x)
	}
	return receipts
}
