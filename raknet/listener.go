package raknet

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// Listener defaults and bounds.
const (
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
	// DefaultMemoryBudget bounds the memory all peers of a listener
	// together can make it hold: messages in reassembly, in ordering
	// queues and waiting for Read. Each connection may always hold a fair
	// share, and far less before its peer logged in (see Conn.Promote).
	DefaultMemoryBudget = 128 << 20
	// preLoginShare is the memory a connection may hold before its peer
	// logged in: a Bedrock Login with a skin arrives compressed as a split
	// message of up to a few hundred KiB (real ones have been seen at
	// ~300 KB in over 200 parts).
	preLoginShare = 1 << 20
	// DefaultMaxConnectionsPerIP caps the established connections of one
	// IP address. Generous: a household or a LAN party behind one NAT
	// address shares it, but one address opening connections from many
	// ports cannot take every slot of a server.
	DefaultMaxConnectionsPerIP = 16
	// maxUnproven bounds the handshakes admitted without a cookie (see
	// minCookieProtocol), and unprovenTimeout is how long each may take.
	// Anyone can fill this pool with forged requests; it touches nothing
	// else, so a flood costs only the protocol-10 clients that need it.
	maxUnproven     = 16
	unprovenTimeout = 3 * time.Second
	// DefaultHandshakesPerIP limits the handshakes one proven IP address
	// starts per second, with bursts of five times as many: a client
	// needs one, a reconnecting one a few, a LAN party behind one address
	// a dozen at once.
	DefaultHandshakesPerIP = 10
	// DefaultOfflineRate is the offline requests answered per second for
	// one source prefix: a LAN scanner or an open server list pings once
	// a second or two, a joining client sends a handful of probes, and a
	// /24 may be a campus or a carrier's NAT pool.
	DefaultOfflineRate = guard.DefaultPrefixRate
	// DefaultOfflineBytes bounds the bytes of offline replies (pongs,
	// Reply1, Reply2, refusals) across all sources, so the listener cannot
	// be made to reflect more than this however many sources a flood
	// forges: 1 MiB/s is several thousand pongs a second.
	DefaultOfflineBytes = 1 << 20
	// refusalLogInterval is how often, at most, the listener logs a
	// summary of the traffic it refused: never a line per datagram or per
	// address, which a flood could use to fill the log.
	refusalLogInterval = 10 * time.Second
	// cookiePeriod is how often the cookie key rotates; a cookie is good
	// for one to two periods, time for a slow client's retried request.
	cookiePeriod = 10 * time.Second
	// ampFactor is the most a connection in its handshake may send for
	// each byte it sent (QUIC's anti-amplification rule), and
	// probeCredit the bytes a proven connection is credited for the
	// OpenConnectionRequest1 its cookie shows it sent: a Reply1 answers
	// only probes of at least MinMTU.
	ampFactor   = 3
	probeCredit = MinMTU - ipv6Overhead
)

// DefaultProtocolVersions returns the RakNet protocol versions accepted
// unless configured: 11 (Bedrock since 1.19.30) and 10. Each call returns
// a new slice, so that no caller can change what another gets.
func DefaultProtocolVersions() []byte { return []byte{11, 10} }

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
	// MaxConnectionsPerIP caps the established connections of one IP
	// address; 0 means DefaultMaxConnectionsPerIP, negative no cap.
	MaxConnectionsPerIP int
	// MemoryBudget bounds, in bytes, what all peers together can make the
	// listener hold; beyond it, data is refused unacknowledged (the peer
	// resends it later) rather than held or lost. 0 means
	// DefaultMemoryBudget; negative means no shared bound (each connection
	// keeps its own limits).
	MemoryBudget int
	// PreLoginShare keeps an established connection at a small share of
	// the memory budget (1 MiB) until the application calls Conn.Promote:
	// set it when the application authenticates its peers (a Bedrock
	// server, at Login), so peers that have not done so cannot hold more.
	// Without it a connection gets its fair share once established.
	PreLoginShare bool
	// HandshakesPerIP is how many handshakes one IP address that echoed
	// a valid cookie may start per second, with bursts of five times as
	// many; 0 means DefaultHandshakesPerIP, negative no limit.
	HandshakesPerIP int
	// OfflineRate is how many offline requests (pings, handshake
	// requests) one source prefix, an IPv4 /24 or IPv6 /64, gets answered
	// per second, with bursts of twice as many; beyond it they are
	// dropped unanswered. 0 means DefaultOfflineRate; negative means no
	// limit (a benchmark of pongs).
	OfflineRate int
	// OfflineBytes is how many bytes of offline replies all sources
	// together get per second; 0 means DefaultOfflineBytes, negative no
	// limit.
	OfflineBytes int
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
	// CookieSecret keys the handshake cookies (see MinCookieSecret); nil
	// means a random secret for this listener. Listeners behind one load
	// balancer that share a secret (and roughly the time) accept each
	// other's cookies, so a client whose Request2 reaches another instance
	// than its Request1 still connects. The key is derived from the
	// secret with a label of its own, so the same secret may key other
	// things.
	CookieSecret []byte
	// Query, if set, answers the datagrams that begin 0xFE 0xFD: the
	// GameSpy4 query protocol, which Minecraft servers answer on their
	// game port. Those bytes never begin a RakNet datagram (0xFE sets both
	// the ACK and the NACK flag), so no connection loses anything to it.
	// Each request first costs its source prefix a token of OfflineRate,
	// as a ping does. Query appends its reply to dst and returns it; an
	// empty reply sends nothing, and a reply is sent only within
	// OfflineBytes. An error means the request was refused, and is counted
	// in ListenerStats.Dropped. Query is called by the reader of the
	// socket the request arrived on: with more than one socket (Sockets)
	// it runs on several goroutines at once, so it must be safe for
	// concurrent use. It must not keep req or dst, and must not block.
	Query func(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error)
	// Foreign, if set, receives the datagrams of another protocol that
	// shares the socket: STUN and DTLS (see IsForeign), which no RakNet
	// peer sends a server. Listener.WriteForeign answers them. Foreign is
	// called by the socket's reader (with Sockets > 1, by several at
	// once), must not keep b and must not block.
	Foreign func(b []byte, from netip.AddrPort)
	// ProxyProtocol makes the listener take PROXY protocol headers, v2
	// (binary) or v1 (text, as nginx sends), which tunnels, balancers and
	// DDoS filters (playit.gg, frp, nginx, TCPShield-style) put in front of the datagrams they forward, from the sources in
	// TrustedProxies; Listen fails if it is set and TrustedProxies is
	// empty. The client a header names is the peer as everything else
	// sees it: connection keys, per-IP limits, cookies, logs,
	// Conn.RemoteAddr, Reply2's client address. Replies go to the proxy's
	// address and port, where the datagram came from. The rules:
	//   - A header from a source not in TrustedProxies is dropped unread
	//     (ListenerStats.ProxyUntrusted).
	//   - A datagram without a header from a source not in
	//     TrustedProxies is a client of its own, so LAN clients still
	//     connect directly.
	//   - A header from a trusted proxy names the client, and remembers
	//     it for the proxy's address and port: a flow. Some senders put a
	//     header on every datagram, others (frp) on a flow's first only;
	//     a datagram without a header from a trusted proxy belongs to the
	//     flow of its address and port, and without one it is dropped
	//     (ProxyNoFlow): a trusted proxy's own traffic is not served. A
	//     flow unused for Timeout is forgotten, and at most 8192 are
	//     kept, the least recently used making room.
	//   - A LOCAL (v2) or UNKNOWN (v1) header, the proxy's own traffic,
	//     is dropped (ProxyLocal); one
	//     that does not parse, names other than a UDP client, or carries
	//     nothing after it counts as Dropped.
	// A header's bytes come on top of the client's datagram: a trusted
	// proxy's datagrams may be up to 256 bytes over the 1492-byte limit
	// everyone else is held to, so a full-size MTU probe with its header
	// is read; what follows the header is held to 1492 bytes. Larger
	// datagrams count in Oversize. Without ProxyProtocol a header is no RakNet datagram and
	// is dropped, and the listener costs what it did before.
	ProxyProtocol bool
	// TrustedProxies are the networks whose datagrams may carry PROXY
	// headers when ProxyProtocol is set. With or without it, their own
	// addresses are never limited per IP (the per-IP connection cap, the
	// handshake and offline request rates): the players of a proxy that
	// sends no headers share its address. Anyone able to send from a
	// trusted address can claim any client address, so list only the
	// proxies' own addresses.
	TrustedProxies []netip.Prefix
	// Sockets is how many UDP sockets the listener opens on its address,
	// each with a reader of its own, so that receiving spreads over
	// cores; 0 or 1 means one, more than 64 means 64. Beyond one the
	// sockets share the address with SO_REUSEPORT and the kernel hands
	// each flow (peer address and port) to one of them; connections are
	// found whichever socket a datagram arrives on. Only Linux spreads
	// datagrams so: elsewhere the listener opens one socket. With
	// ListenPacket set, it is called once per socket.
	Sockets int

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
	Dropped uint64
	// Refusals by kind. None of them blocks an address or logs a line of
	// its own.
	CookieFailures   uint64 // OpenConnectionRequest2 with a cookie we did not issue
	RateLimited      uint64 // offline requests not answered for their source's rate or the global reply bytes
	PoolFull         uint64 // handshakes refused for a full pool (proven or unproven)
	AlreadyConnected uint64 // requests for the address of a live connection
	PerIPLimited     uint64 // handshakes refused for their IP's connections or rate
	Amplification    uint64 // datagrams a handshake was not allowed to send (3× rule)
	BudgetRefusals   uint64 // frames refused, or connections closed, for the shared memory budget
	Oversize         uint64 // datagrams over the largest MTU (1492 bytes; from a trusted PROXY source 1748, header included)
	QueryAnswered    uint64 // replies ListenConfig.Query sent
	Connections      int    // open now, handshakes included
	Handshaking      int    // in their handshake now
	Established      int    // past their handshake now
	// What the socket carried, offline traffic and every connection's
	// datagrams included; bytes are UDP payload bytes.
	DatagramsIn, DatagramsOut, BytesIn, BytesOut uint64

	// PROXY protocol refusals (see ListenConfig.ProxyProtocol); headers
	// that do not parse count as Dropped.
	ProxyUntrusted uint64 // PROXY headers from sources not in TrustedProxies
	ProxyNoFlow    uint64 // datagrams without a header from a trusted proxy with no flow
	ProxyLocal     uint64 // LOCAL headers (proxies' health checks)
}

// Listener accepts RakNet connections on one UDP address and answers
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

	mu sync.RWMutex
	// conns is the connection table: the listener's record of each
	// connection, by the peer's address.
	conns  map[netip.AddrPort]*peer
	closed bool // set by Close under mu: no new connections
	// retired sums the counters of connections removed from conns (see
	// ConnStats); guarded by mu.
	retired Stats

	// n holds the counters, the endpoint's and the PROXY gates' included.
	n *counters
	// prefixes and replyBytes limit offline replies per source prefix and
	// in total; ipRate limits the handshakes of each proven IP.
	prefixes   *guard.PrefixLimiter
	replyBytes *guard.ByteLimiter
	ipRate     *guard.PrefixLimiter
	// perIP counts established connections by IP address; guarded by
	// mu.
	perIP map[netip.Addr]int
	// unproven counts handshakes admitted without a cookie.
	unproven atomic.Int64
	// budget is shared by the connections' accounts; nil without one.
	budget *guard.Budget
	// When refusals were last summarised in the log (Unix nanoseconds),
	// and their total then.
	refusalLogAt   atomic.Int64
	refusalsLogged atomic.Uint64
	// pending and nEstablished count the connections in and past their
	// handshake, unproven those admitted without a cookie; they change
	// under mu, and are read without it.
	pending, nEstablished atomic.Int64

	// proxy holds ListenConfig.ProxyProtocol's trusted proxies, from
	// which each reader makes its gate; nil without it.
	proxy *proxyGate
	// trusted are the trusted proxies, never limited per IP themselves.
	trusted trustedProxies
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
	if lc.CookieSecret != nil && len(lc.CookieSecret) < MinCookieSecret {
		return nil, &net.OpError{Op: "listen", Net: "raknet", Err: errShortCookieSecret}
	}
	var gate *proxyGate
	if lc.ProxyProtocol {
		var err error
		if gate, err = newProxyGate(lc.TrustedProxies, orDefault(lc.Timeout, DefaultTimeout)); err != nil {
			return nil, &net.OpError{Op: "listen", Net: "raknet", Err: err}
		}
	}
	pcs, err := openSockets(lc.ListenPacket, network, address, lc.Sockets)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "raknet", Err: err}
	}
	queue := lc.AcceptQueue
	if queue <= 0 {
		queue = DefaultAcceptQueue
	}
	l := &Listener{
		cfg:     lc,
		ep:      newEndpointSize(batchSize, pcs...),
		log:     zerolog.Nop(),
		accept:  make(chan *Conn, queue),
		done:    make(chan struct{}),
		conns:   make(map[netip.AddrPort]*peer),
		started: time.Now(),
	}
	l.n = l.ep.n
	if lc.Log != nil {
		l.log = lc.Log.With().Str("src", "raknet").Str("laddr", l.ep.local.String()).Logger()
	}
	if lc.Sockets > len(pcs) {
		l.log.Warn().Int("sockets", lc.Sockets).Int("opened", len(pcs)).Msg("fewer sockets than configured: SO_REUSEPORT spreads datagrams only on Linux, over at most 64")
	}
	if len(l.cfg.ProtocolVersions) == 0 {
		l.cfg.ProtocolVersions = DefaultProtocolVersions()
	}
	l.cfg.ProtocolVersions = slices.Clone(l.cfg.ProtocolVersions)
	if l.cfg.GUID == 0 {
		l.cfg.GUID = newGUID(false)
	}
	var secret [16]byte
	if lc.CookieSecret == nil {
		_, _ = rand.Read(secret[:])
	} else {
		secret = cookieKey(lc.CookieSecret)
	}
	l.resp = responder{guid: l.cfg.GUID, protocols: l.cfg.ProtocolVersions, maxMTU: maxMTUOr(lc.MaxMTU, DefaultMaxMTU),
		cookies: guard.NewCookies(secret, cookiePeriod)}
	if rate := orDefaultInt(lc.OfflineRate, DefaultOfflineRate); rate > 0 {
		l.prefixes = guard.NewPrefixLimiter(guard.PrefixConfig{Rate: int64(rate), Burst: 2 * int64(rate)})
	}
	if n := orDefaultInt(lc.OfflineBytes, DefaultOfflineBytes); n > 0 {
		// A quarter second's worth at once, and at least one MTU.
		l.replyBytes = guard.NewByteLimiter(int64(n), max(int64(n)/4, MaxMTU))
	}
	if rate := orDefaultInt(lc.HandshakesPerIP, DefaultHandshakesPerIP); rate > 0 {
		l.ipRate = guard.NewPrefixLimiter(guard.PrefixConfig{Rate: int64(rate), Burst: 5 * int64(rate), IPv4Bits: 32, IPv6Bits: 64, Slots: 4096})
	}
	l.perIP = make(map[netip.Addr]int)
	if n := orDefaultInt(lc.MemoryBudget, DefaultMemoryBudget); n > 0 {
		// Before login a connection may hold 1 MiB: a Login with a skin
		// arrives as a split message of up to a few hundred KiB.
		l.budget = guard.NewBudget(guard.BudgetConfig{Total: int64(n), PreLoginCap: preLoginShare})
	}
	if l.cfg.MaxConnectionsPerIP == 0 {
		l.cfg.MaxConnectionsPerIP = DefaultMaxConnectionsPerIP
	}
	l.connCfg = newConnConfig(lc.Timeout, lc.PingInterval, lc.CloseTimeout, l.log, lc.limits)
	l.proxy = gate
	l.trusted = newTrustedProxies(lc.TrustedProxies)
	if gate != nil {
		l.ep.maxIn = maxReadIn // room for headers; see reader.unproxy
	}
	l.connCfg.handshakeTimeout = orDefault(lc.HandshakeTimeout, DefaultHandshakeTimeout)
	if l.cfg.MaxHandshakes <= 0 {
		l.cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	empty := []byte{}
	l.pong.Store(&empty)
	l.wg.Go(func() { l.ep.readEach(l.newReader) })
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
	st := l.n.snapshot()
	st.Connections = n
	st.Handshaking = int(l.pending.Load() + l.unproven.Load())
	st.Established = int(l.nEstablished.Load())
	return st
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
		for _, p := range l.conns {
			conns = append(conns, p.c)
		}
		l.mu.Unlock()
		// The goodbyes below leave at once, whatever the readers are
		// doing, before the socket closes.
		l.ep.stopBatching()
		for _, c := range conns {
			c.closeNow(net.ErrClosed, true)
		}
		// Connections share the socket: close it only after they said
		// goodbye.
		l.ep.close()
		l.wg.Wait()
		l.log.Info().Stringer("uptime", time.Since(l.started).Round(time.Millisecond)).Msg("listener closed")
	})
	return nil
}
