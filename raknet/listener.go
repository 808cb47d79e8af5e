package raknet

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
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
	// socketBuffer is the kernel buffer size requested for sockets.
	socketBuffer = 4 << 20
	// maxDatagramSize is the read buffer: the largest UDP payload.
	maxDatagramSize = 65535
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
	// MaxConnections caps connections, handshakes included; beyond it
	// clients get NoFreeIncomingConnections. 0 means no cap.
	MaxConnections int
	// ProtocolVersions are the RakNet protocol versions accepted; others
	// get IncompatibleProtocolVersion naming the first. Nil means
	// DefaultProtocolVersions.
	ProtocolVersions []byte
	// Timeout is how long a silent peer (or an unfinished handshake) lives;
	// 0 means DefaultTimeout.
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
}

// Listener accepts RakNet connections on one UDP socket and answers
// unconnected pings. It implements net.Listener. Its methods are safe for
// concurrent use.
type Listener struct {
	cfg       ListenConfig
	pc        net.PacketConn
	udp       *net.UDPConn
	log       zerolog.Logger
	id        int64
	maxMTU    int
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
	// recent holds, until when, the peers that closed their connection:
	// their data datagrams are still acknowledged (see lingerTime).
	recent map[netip.AddrPort]time.Time
	// recentOrder holds recent's entries in the order they were added,
	// which is also the order they expire in, so expiry never scans.
	recentOrder []recentEntry

	pings, handshakes, accepted, refused, dropped atomic.Uint64

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
		pc:      pc,
		log:     zerolog.Nop(),
		id:      lc.GUID,
		maxMTU:  DefaultMaxMTU,
		accept:  make(chan *Conn, queue),
		done:    make(chan struct{}),
		conns:   make(map[netip.AddrPort]*Conn),
		recent:  make(map[netip.AddrPort]time.Time),
		out:     make([]byte, 0, 1500),
		started: time.Now(),
	}
	if lc.Log != nil {
		l.log = lc.Log.With().Str("src", "raknet").Str("laddr", pc.LocalAddr().String()).Logger()
	}
	if lc.MaxMTU != 0 {
		l.maxMTU = min(max(lc.MaxMTU, MinMTU), MaxMTU)
	}
	if len(l.cfg.ProtocolVersions) == 0 {
		l.cfg.ProtocolVersions = DefaultProtocolVersions
	}
	l.cfg.ProtocolVersions = slices.Clone(l.cfg.ProtocolVersions)
	if l.id == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		l.id = int64(binary.BigEndian.Uint64(b[:]) >> 1)
	}
	l.udp = tuneSocket(pc)
	l.connCfg = newConnConfig(lc.Timeout, lc.PingInterval, lc.CloseTimeout, l.log, lc.limits)
	l.connCfg.dropped = &l.dropped
	empty := []byte{}
	l.pong.Store(&empty)
	l.wg.Add(1)
	go l.readLoop()
	l.log.Info().Msg("listening")
	return l, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
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
func (l *Listener) ID() int64 { return l.id }

// Addr returns the listener's local address.
func (l *Listener) Addr() net.Addr { return l.pc.LocalAddr() }

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.RLock()
	n := len(l.conns)
	l.mu.RUnlock()
	return ListenerStats{
		Pings: l.pings.Load(), Handshakes: l.handshakes.Load(), Accepted: l.accepted.Load(),
		Refused: l.refused.Load(), Dropped: l.dropped.Load(), Connections: n,
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
		_ = l.pc.Close()
		l.wg.Wait()
		l.log.Info().Dur("uptime", time.Since(l.started)).Msg("listener closed")
	})
	return nil
}

// readLoop is the socket's only reader.
func (l *Listener) readLoop() {
	defer l.wg.Done()
	buf := make([]byte, maxDatagramSize)
	for {
		n, ap, addr, err := l.read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-l.done:
				return
			default:
			}
			// Transient errors (ICMP unreachable reported on read) are
			// ignored; back off a little if they repeat.
			time.Sleep(time.Millisecond)
			continue
		}
		if n == 0 {
			continue
		}
		l.handle(buf[:n], ap, addr)
	}
}

// read reads one datagram; addr is nil for *net.UDPConn sockets.
func (l *Listener) read(buf []byte) (int, netip.AddrPort, net.Addr, error) {
	if l.udp != nil {
		n, ap, err := l.udp.ReadFromUDPAddrPort(buf)
		return n, ap, nil, err
	}
	n, addr, err := l.pc.ReadFrom(buf)
	if err != nil {
		return 0, netip.AddrPort{}, nil, err
	}
	return n, addrPortOf(addr), addr, nil
}

// addrPortOf converts a socket address to a netip.AddrPort.
func addrPortOf(addr net.Addr) netip.AddrPort {
	if ua, ok := addr.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(addr.String())
	return ap
}

// key is how connections are looked up: IPv4-mapped addresses unmapped.
func key(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func (l *Listener) handle(b []byte, ap netip.AddrPort, addr net.Addr) {
	k := key(ap)
	if b[0]&wire.FlagValid != 0 {
		l.mu.RLock()
		c := l.conns[k]
		var until time.Time
		recent := false
		if c == nil {
			until, recent = l.recent[k]
		}
		l.mu.RUnlock()
		now := time.Now()
		if c != nil {
			c.handle(b, now)
			return
		}
		if recent && now.Before(until) {
			if ack := appendAckFor(l.out[:0], b); ack != nil {
				l.out = ack
				l.writeTo(ack, ap, addr)
			}
			return
		}
		l.dropped.Add(1)
		return
	}
	switch b[0] {
	case wire.IDUnconnectedPing, wire.IDUnconnectedPingOpenConnections:
		l.handlePing(b, ap, addr)
	case wire.IDOpenConnectionRequest1:
		l.handleRequest1(b, ap, addr)
	case wire.IDOpenConnectionRequest2:
		l.handleRequest2(b, ap, addr, k)
	default:
		l.dropped.Add(1)
	}
}

// writeTo sends an offline reply.
func (l *Listener) writeTo(b []byte, ap netip.AddrPort, addr net.Addr) {
	if l.udp != nil {
		_, _ = l.udp.WriteToUDPAddrPort(b, ap)
		return
	}
	_, _ = l.pc.WriteTo(b, addr)
}

func (l *Listener) full() bool {
	if l.cfg.MaxConnections <= 0 {
		return false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.conns) >= l.cfg.MaxConnections
}

func (l *Listener) handlePing(b []byte, ap netip.AddrPort, addr net.Addr) {
	var m wire.UnconnectedPing
	if _, err := m.Decode(b); err != nil {
		l.dropped.Add(1)
		return
	}
	if m.OpenConnections && l.full() {
		// 0x02 is answered only while a client could still connect.
		return
	}
	l.pings.Add(1)
	pong := wire.UnconnectedPong{Time: m.Time, ServerGUID: l.id, Data: *l.pong.Load()}
	l.out = pong.Append(l.out[:0])
	l.writeTo(l.out, ap, addr)
}

// overhead returns the IP + UDP header size for a peer.
func overhead(ap netip.AddrPort) int {
	if ap.Addr().Unmap().Is4() {
		return ipv4Overhead
	}
	return ipv6Overhead
}

func (l *Listener) clampMTU(mtu int) int { return min(max(mtu, MinMTU), l.maxMTU) }

func (l *Listener) handleRequest1(b []byte, ap netip.AddrPort, addr net.Addr) {
	var m wire.OpenConnectionRequest1
	if _, err := m.Decode(b); err != nil {
		l.dropped.Add(1)
		return
	}
	if !slices.Contains(l.cfg.ProtocolVersions, m.Protocol) {
		reply := wire.IncompatibleProtocolVersion{Protocol: l.cfg.ProtocolVersions[0], ServerGUID: l.id}
		l.out = reply.Append(l.out[:0])
		l.writeTo(l.out, ap, addr)
		return
	}
	reply := wire.OpenConnectionReply1{ServerGUID: l.id, MTU: uint16(l.clampMTU(m.Size + overhead(ap)))}
	l.out = reply.Append(l.out[:0])
	l.writeTo(l.out, ap, addr)
}

func (l *Listener) handleRequest2(b []byte, ap netip.AddrPort, addr net.Addr, k netip.AddrPort) {
	var m wire.OpenConnectionRequest2
	if _, err := m.Decode(b); err != nil {
		l.dropped.Add(1)
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	delete(l.recent, k)
	if old := l.conns[k]; old != nil {
		l.mu.Unlock()
		old.mu.Lock()
		same, reply := old.guid == m.ClientGUID && old.state != stateClosed, old.reply2
		old.mu.Unlock()
		if same {
			// A retried request: answer it the same way.
			l.writeTo(reply, ap, addr)
			return
		}
		// Another client process on the same address: the old one is
		// gone. It is not told, since whoever listens there now is the new
		// client.
		old.closeNow(closedBy(ErrPeerClosed), false)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		// A connection closed just now may not have removed itself yet.
		if l.conns[k] == old {
			delete(l.conns, k)
		}
	}
	if l.cfg.MaxConnections > 0 && len(l.conns) >= l.cfg.MaxConnections {
		l.mu.Unlock()
		l.refused.Add(1)
		reply := wire.Notice{ID: wire.IDNoFreeIncomingConnections, ServerGUID: l.id}
		l.out = reply.Append(l.out[:0])
		l.writeTo(l.out, ap, addr)
		return
	}
	mtu := l.clampMTU(int(m.MTU))
	now := time.Now()
	c := newConn(l.pc, addr, ap, mtu, l.connCfg, false, now)
	c.guid = m.ClientGUID
	c.onEstablished = l.established
	c.onClose = l.removeConn
	reply := wire.OpenConnectionReply2{ServerGUID: l.id, ClientAddr: k, MTU: uint16(mtu)}
	c.reply2 = reply.Append(nil)
	c.start(now)
	// The connection exists before the reply leaves, so the client's next
	// datagram always finds it.
	l.conns[k] = c
	l.mu.Unlock()
	l.handshakes.Add(1)
	l.writeTo(c.reply2, ap, addr)
}

// established queues a connection for Accept. It runs with c.mu held.
func (l *Listener) established(c *Conn) {
	select {
	case <-l.done:
		c.abort(net.ErrClosed, true)
		return
	default:
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

// maxRecent bounds Listener.recent.
const maxRecent = 4096

// recentEntry is an entry of Listener.recent, in recentOrder.
type recentEntry struct {
	addr  netip.AddrPort
	until time.Time
}

// forgetRecent removes the oldest entry of recentOrder, and its peer from
// recent unless it was added again since.
func (l *Listener) forgetRecent() {
	e := l.recentOrder[0]
	if until, ok := l.recent[e.addr]; ok && until.Equal(e.until) {
		delete(l.recent, e.addr)
	}
	l.recentOrder[0] = recentEntry{}
	l.recentOrder = l.recentOrder[1:]
	if len(l.recentOrder) == 0 {
		l.recentOrder = nil
	}
}

// removeConn forgets a closed connection. It runs after c.mu is released,
// by the goroutine that closed c.
func (l *Listener) removeConn(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[c.raddr] == c {
		delete(l.conns, c.raddr)
	}
	if !c.lingering || l.closed {
		return
	}
	now := time.Now()
	for len(l.recentOrder) > 0 && (!now.Before(l.recentOrder[0].until) || len(l.recent) >= maxRecent || len(l.recentOrder) >= 2*maxRecent) {
		// Expired, or the oldest makes room: the table is bounded.
		l.forgetRecent()
	}
	until := now.Add(lingerTime)
	l.recent[c.raddr] = until
	l.recentOrder = append(l.recentOrder, recentEntry{c.raddr, until})
}
