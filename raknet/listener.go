package raknet

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// Listener defaults and bounds.
const (
	// DefaultMaxMTU is the MTU granted unless configured: vanilla BDS uses
	// 1400 and larger values break some devices and routers.
	DefaultMaxMTU = 1400
	// MinMTU is the smallest MTU granted.
	MinMTU = 576
	// MaxMTU is the largest MTU RakNet probes.
	MaxMTU = 1492
	// DefaultAcceptQueue is how many established connections may wait for
	// Accept.
	DefaultAcceptQueue = 256
	// DefaultHandshakeTimeout is how long a connection may take from
	// OpenConnectionRequest2 to NewIncomingConnection: one and a half round
	// trips, plus resends on a bad link. A forged or abandoned handshake
	// holds its place in the pool no longer than this.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultMaxHandshakes bounds the connections in their handshake. They
	// live in a pool of their own, apart from established connections, so
	// a flood of handshakes never takes a player's place.
	DefaultMaxHandshakes = 1024
)

// DefaultProtocolVersions are the RakNet protocol versions accepted unless
// configured: 11 (Bedrock since 1.19.30) and 10.
var DefaultProtocolVersions = []byte{11, 10}

// ListenConfig configures a Listener. The zero value is ready to use.
type ListenConfig struct {
	// Log receives lifecycle and per-connection debug lines; nil discards.
	Log *zerolog.Logger
	// ListenPacket opens the socket; nil means net.ListenPacket. Tests use
	// it to inject lossy, recording or simulated sockets.
	ListenPacket func(network, address string) (net.PacketConn, error)
	// MaxMTU caps the MTU granted, clamped to [MinMTU, MaxMTU]; 0 means
	// DefaultMaxMTU.
	MaxMTU int
	// MaxConnections caps established connections; beyond it clients get
	// NoFreeIncomingConnections. Connections in their handshake do not
	// count (see MaxHandshakes). 0 means no cap.
	MaxConnections int
	// MaxHandshakes caps connections in their handshake; 0 means
	// DefaultMaxHandshakes.
	MaxHandshakes int
	// HandshakeTimeout is how long a handshake may take; 0 means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// ProtocolVersions are the RakNet protocol versions accepted; others
	// get IncompatibleProtocolVersion naming the first. Nil means
	// DefaultProtocolVersions.
	ProtocolVersions []byte
	// Timeout is how long a silent peer lives; 0 means DefaultTimeout.
	Timeout time.Duration
	// PingInterval is how often connected pings are sent; 0 means
	// DefaultPingInterval.
	PingInterval time.Duration
	// CloseTimeout bounds how long Conn.Close waits for the peer to
	// acknowledge queued data; 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// AcceptQueue is how many established connections may wait for Accept;
	// when full, new ones are refused. 0 means DefaultAcceptQueue.
	AcceptQueue int
	// GUID is the server GUID sent in pongs and replies; 0 picks a random
	// one.
	GUID int64

	// limits overrides connection limits in tests.
	limits limits
}

// limits are internal bounds tests shrink; zero values mean the defaults.
type limits struct {
	readQueue, readQueueBytes, sendBuffer int
	dialRetry                             time.Duration
}

// ListenerStats are a Listener's counters.
type ListenerStats struct {
	Pings      uint64 // unconnected pings answered
	Handshakes uint64 // OpenConnectionRequest2 that created a connection
	Accepted   uint64 // connections queued for Accept
	Refused    uint64 // connections refused: server full or accept queue full
	// Dropped counts malformed or unexpected datagrams, those of every
	// connection included. Dropping never blocks the sender's address.
	Dropped     uint64
	Connections int // open now, handshakes included
	Handshaking int // in their handshake now
}

// Listener accepts RakNet connections on one UDP socket and answers
// unconnected pings. It implements net.Listener. Its methods are safe for
// concurrent use.
type Listener struct {
	cfg       ListenConfig
	ep        *endpoint
	log       zerolog.Logger
	resp      responder
	connCfg   connConfig
	started   time.Time
	pong      atomic.Pointer[[]byte]
	accept    chan *Conn
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu     sync.RWMutex
	conns  map[netip.AddrPort]*Conn
	closed bool // set by Close under mu: no new connections

	pings, handshakes, accepted, refused, dropped atomic.Uint64
	// pending and established count the connections in and past their
	// handshake; each changes under mu or, for a connection that
	// completes its handshake, atomically with its move.
	pending, nEstablished atomic.Int64

	// Used only by the read goroutine.
	out []byte
}

var _ net.Listener = (*Listener)(nil)

// Listen listens on address ("host:port") with the default configuration.
func Listen(address string) (*Listener, error) {
	var lc ListenConfig
	return lc.Listen(address)
}

// Listen opens a UDP socket on address and starts answering pings and
// handshakes. An IPv4 literal host (0.0.0.0 included) binds udp4, so
// replies to IPv4 peers are never IPv4-mapped; an IPv6 literal binds
// udp6; anything else (an empty host, a name) binds udp.
func (lc ListenConfig) Listen(address string) (*Listener, error) {
	network := "udp"
	if ap, err := netip.ParseAddrPort(address); err == nil {
		if ap.Addr().Is4() {
			network = "udp4"
		} else {
			network = "udp6"
		}
	}
	listen := lc.ListenPacket
	if listen == nil {
		listen = net.ListenPacket
	}
	pc, err := listen(network, address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "raknet", Err: err}
	}
	queue := lc.AcceptQueue
	if queue <= 0 {
		queue = DefaultAcceptQueue
	}
	l := &Listener{
		cfg:     lc,
		ep:      newEndpoint(pc),
		log:     zerolog.Nop(),
		accept:  make(chan *Conn, queue),
		done:    make(chan struct{}),
		conns:   make(map[netip.AddrPort]*Conn),
		out:     make([]byte, 0, 1500),
		started: time.Now(),
	}
	if lc.Log != nil {
		l.log = lc.Log.With().Str("src", "raknet").Str("laddr", pc.LocalAddr().String()).Logger()
	}
	if len(l.cfg.ProtocolVersions) == 0 {
		l.cfg.ProtocolVersions = DefaultProtocolVersions
	}
	l.cfg.ProtocolVersions = slices.Clone(l.cfg.ProtocolVersions)
	if l.cfg.GUID == 0 {
		l.cfg.GUID = newGUID(false)
	}
	l.resp = responder{guid: l.cfg.GUID, protocols: l.cfg.ProtocolVersions, maxMTU: maxMTUOr(lc.MaxMTU, DefaultMaxMTU)}
	l.connCfg = newConnConfig(lc.Timeout, lc.PingInterval, lc.CloseTimeout, l.log, lc.limits)
	l.connCfg.handshakeTimeout = orDefault(lc.HandshakeTimeout, DefaultHandshakeTimeout)
	l.connCfg.dropped = &l.dropped
	if l.cfg.MaxHandshakes <= 0 {
		l.cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	empty := []byte{}
	l.pong.Store(&empty)
	l.wg.Go(func() { l.ep.readLoop(l.handle) })
	l.log.Info().Msg("listening")
	return l, nil
}

// PongData sets the data sent in unconnected pongs (for Bedrock, the MOTD).
// It may be called at any time; the swap is atomic. Data longer than a pong
// can carry is a programmer error and panics.
func (l *Listener) PongData(data []byte) {
	if len(data) > wire.MaxPongData {
		panic(fmt.Sprintf("raknet: pong data of %d bytes exceeds %d", len(data), wire.MaxPongData))
	}
	d := slices.Clone(data)
	l.pong.Store(&d)
}

// ID returns the server GUID sent in pongs.
func (l *Listener) ID() int64 { return l.cfg.GUID }

// Addr returns the listener's local address.
func (l *Listener) Addr() net.Addr { return l.ep.local }

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.RLock()
	n := len(l.conns)
	l.mu.RUnlock()
	return ListenerStats{
		Pings: l.pings.Load(), Handshakes: l.handshakes.Load(), Accepted: l.accepted.Load(),
		Refused: l.refused.Load(), Dropped: l.dropped.Load() + l.ep.oversize.Load(), Connections: n,
		Handshaking: int(l.pending.Load()),
	}
}

// Accept waits for the next established connection; it returns a *Conn.
func (l *Listener) Accept() (net.Conn, error) { return l.AcceptConn() }

// AcceptConn is Accept returning the concrete type.
func (l *Listener) AcceptConn() (*Conn, error) {
	select {
	case <-l.done:
	case c := <-l.accept:
		select {
		case <-l.done:
			// Close closes queued connections; hand out none of them.
		default:
			return c, nil
		}
	}
	return nil, &net.OpError{Op: "accept", Net: "raknet", Addr: l.Addr(), Err: ErrListenerClosed}
}

// Close stops the listener and closes every connection at once, telling
// each peer. Use Conn.Close first for a graceful goodbye. Close is safe to
// call more than once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		// Once closed is set under mu no connection is added, so the
		// snapshot below is complete.
		l.mu.Lock()
		l.closed = true
		conns := make([]*Conn, 0, len(l.conns))
		for _, c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		for _, c := range conns {
			c.closeNow(net.ErrClosed, true)
		}
		// Connections share the socket: close it only after they said
		// goodbye.
		l.ep.close()
		l.wg.Wait()
		l.log.Info().Dur("uptime", time.Since(l.started)).Msg("listener closed")
	})
	return nil
}

// handle takes one datagram from the socket's reader.
func (l *Listener) handle(b []byte, from netip.AddrPort, now time.Time) {
	k := key(from)
	if b[0]&wire.FlagValid != 0 {
		l.mu.RLock()
		c := l.conns[k]
		l.mu.RUnlock()
		if c != nil {
			c.handle(b, now)
			return
		}
		if !l.ep.ackStale(b, from, now) {
			l.dropped.Add(1)
		}
		return
	}
	var err error
	switch b[0] {
	case wire.IDUnconnectedPing, wire.IDUnconnectedPingOpenConnections:
		l.out, err = l.resp.pong(l.out[:0], b, *l.pong.Load(), !l.full())
		if err == nil && len(l.out) > 0 {
			l.pings.Add(1)
		}
	case wire.IDOpenConnectionRequest1:
		l.out, err = l.resp.reply1(l.out[:0], b, from)
	case wire.IDOpenConnectionRequest2:
		l.out = l.out[:0]
		err = l.handleRequest2(b, from, k, now)
	default:
		l.dropped.Add(1)
		return
	}
	if err != nil {
		l.dropped.Add(1)
		return
	}
	if len(l.out) > 0 {
		_ = l.ep.write(l.out, from)
	}
}

// full reports whether established connections are at MaxConnections.
func (l *Listener) full() bool {
	return l.cfg.MaxConnections > 0 && l.nEstablished.Load() >= int64(l.cfg.MaxConnections)
}

// handleRequest2 carries out the responder's decision on an
// OpenConnectionRequest2; the reply, if any, is left in l.out.
func (l *Listener) handleRequest2(b []byte, from, k netip.AddrPort, now time.Time) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	var st r2State
	old := l.conns[k]
	if old != nil {
		select {
		case <-old.closed:
		default:
			st.live = &peerView{guid: old.guid, reply2: old.reply2, established: old.isEstablished()}
		}
	}
	st.full = l.full()
	st.pendingFull = l.pending.Load() >= int64(l.cfg.MaxHandshakes)
	d, err := l.resp.request2(l.out[:0], b, from, st)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	switch d.action {
	case r2Resend:
		// A retried request: answer it the same way.
		l.mu.Unlock()
		l.out = append(l.out[:0], d.reply...)
		return nil
	case r2Full, r2AlreadyConnected:
		l.mu.Unlock()
		l.refused.Add(1)
		l.out = d.reply
		return nil
	case r2Drop:
		l.mu.Unlock()
		return nil
	case r2Replace:
		// Another client process on the same address: the old one is
		// gone. It is not told, since whoever listens there now is the new
		// client.
		l.mu.Unlock()
		old.closeNow(closedBy(ErrPeerClosed), false)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil
		}
		// A connection closed just now may not have removed itself yet.
		if l.conns[k] == old {
			delete(l.conns, k)
		}
	}
	l.ep.forget(k)
	c := newConn(l.ep, from, d.mtu, l.connCfg, false, now)
	c.guid = d.guid
	c.onEstablished = l.established
	c.onClose = l.removeConn
	c.reply2 = slices.Clone(d.reply)
	c.start(now)
	// The connection exists before the reply leaves, so the client's next
	// datagram always finds it.
	l.conns[k] = c
	l.pending.Add(1)
	l.mu.Unlock()
	l.handshakes.Add(1)
	l.out = d.reply
	return nil
}

// established moves a connection out of the handshake pool and queues it
// for Accept, or refuses it when established connections are at their
// cap or the accept queue is full. It runs with c.mu held.
func (l *Listener) established(c *Conn) {
	select {
	case <-l.done:
		c.abort(net.ErrClosed, true)
		return
	default:
	}
	l.pending.Add(-1)
	c.pool = poolEstablished
	if n := l.nEstablished.Add(1); l.cfg.MaxConnections > 0 && n > int64(l.cfg.MaxConnections) {
		// Handshakes that completed together overshot the cap.
		l.refused.Add(1)
		c.abort(net.ErrClosed, true)
		return
	}
	select {
	case l.accept <- c:
		l.accepted.Add(1)
		if e := l.log.Debug(); e.Enabled() {
			e.Str("raddr", c.raddr.String()).Int("mtu", c.mtu).Msg("connection established")
		}
	default:
		l.refused.Add(1)
		c.cfg.log.Debug().Str("raddr", c.raddr.String()).Msg("accept queue full: refusing connection")
		c.abort(net.ErrClosed, true)
	}
}

// removeConn forgets a closed connection. It runs after c.mu is released,
// by the goroutine that closed c.
func (l *Listener) removeConn(c *Conn) {
	l.mu.Lock()
	if l.conns[c.raddr] == c {
		delete(l.conns, c.raddr)
	}
	if c.pool == poolEstablished {
		l.nEstablished.Add(-1)
	} else {
		l.pending.Add(-1)
	}
	closed := l.closed
	l.mu.Unlock()
	if c.lingering && !closed {
		l.ep.linger(c.raddr, time.Now())
	}
}
