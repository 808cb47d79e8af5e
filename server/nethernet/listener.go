package nethernet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"
)

// Defaults for zero Config fields.
const (
	// DefaultMaxOfferSize caps an offer's body. A client's offer, every
	// host candidate included, is one or two KiB.
	DefaultMaxOfferSize = 16 << 10
	// DefaultMaxNegotiations caps the negotiations in progress: offers
	// being answered plus answered peers whose ICE, DTLS and SCTP have
	// not completed. Each answered one holds a pion ICE agent, DTLS and
	// SCTP state (about 100 KiB); one whose client has not proved its
	// address gives up its place to a new offer when the cap is reached.
	DefaultMaxNegotiations = 256
	// DefaultMaxAnswering caps the offers handed to go-nethernet at once;
	// more wait their turn (DefaultAnswerWait at most). go-nethernet
	// answers them one after the other, about a millisecond each.
	DefaultMaxAnswering = 16
	// DefaultNegotiationTimeout bounds a negotiation, from the offer to
	// the data channels open.
	DefaultNegotiationTimeout = 10 * time.Second
)

// Status is what GET /v1/join answers, as JSON: what BDS reports and the
// client shows before joining.
type Status struct {
	Name       string `json:"name"`
	Protocol   int    `json:"protocol"`
	Version    string `json:"version"`
	Level      string `json:"level"`
	Players    int    `json:"players"`
	MaxPlayers int    `json:"maxPlayers"`
	GameType   string `json:"gameType"`
}

// Config configures a Listener.
type Config struct {
	// Addr is the TCP address of the HTTP signalling endpoint, host:port.
	Addr string
	// ICEConn is the UDP socket ICE runs on, shared by every peer
	// connection: a Demux view of the RakNet socket, or a socket of its
	// own. Nil means a socket of its own on ICEAddr. The Listener closes
	// only a socket it opened.
	ICEConn net.PacketConn
	// ICEAddr is where the Listener opens its ICE socket when ICEConn is
	// nil; empty means Addr's host and port, over UDP.
	ICEAddr string
	// PublicAddress, when valid, is the address players reach the server
	// at (behind NAT, Docker or a tunnel): its IP is offered as an extra
	// candidate beside the host candidates. Its port must be the ICE
	// socket's: pion rewrites addresses, not ports.
	PublicAddress netip.AddrPort
	// TLSCert and TLSKey are PEM files; with both set, signalling is HTTPS
	// (clients try https first and then ask no trust question), otherwise
	// plain HTTP.
	TLSCert, TLSKey string
	// IdentityKey is the P-384 key that signs every answer (see
	// LoadIdentityKey). Nil means a key made for this Listener alone: the
	// trust prompt then comes back after every restart.
	IdentityKey *ecdsa.PrivateKey
	// AllowAnonymous accepts offers that carry no identity (custom and
	// offline clients; the game always sends one). Their sessions have
	// no proven key to bind the Login to.
	AllowAnonymous bool
	// Status returns the live status for GET /v1/join and LAN discovery.
	// Nil answers an empty object.
	Status func() Status
	// LANAddr, if set, is the UDP address NetherNet LAN discovery is
	// answered on (":7551" typically), where clients on the LAN also
	// signal joins from their list. A socket that cannot be opened is
	// logged and skipped.
	LANAddr string
	// NetworkID is the server's NetherNet network ID in LAN discovery:
	// the RakNet GUID, so a client lists one server, not two.
	NetworkID uint64
	// Log receives the Listener's lifecycle messages and periodic
	// summaries of refusals. Nil discards them.
	Log *zerolog.Logger

	// VerifyToken, when set, checks the token of an offer's identity (the
	// game's multiplayer token: issuer, audience, expiry, signature)
	// before any WebRTC state is made; an offer whose token fails is
	// refused with ErrorCodeIdentityVerificationFailed. Nil accepts any
	// token, whose key the session still binds the Login to.
	VerifyToken func(ctx context.Context, token string) error
	// TrustedProxy reports whether an address is a trusted proxy's: no
	// per-source limit applies to it. Nil trusts none.
	TrustedProxy func(netip.Addr) bool
	// ProxyProtocol takes a PROXY header (v1 or v2) at the start of a
	// trusted proxy's signalling connections: the client it names is
	// the one admission, limits and logs see. A header from anyone else
	// is never read.
	ProxyProtocol bool

	// MaxOfferSize caps an offer's body in bytes; 0 means
	// DefaultMaxOfferSize.
	MaxOfferSize int64
	// MaxNegotiations caps the negotiations in progress; 0 means
	// DefaultMaxNegotiations.
	MaxNegotiations int
	// MaxAnswering caps the offers being answered at once; 0 means
	// DefaultMaxAnswering.
	MaxAnswering int
	// OffersPerSource caps the offers per source (an IPv4 address, an
	// IPv6 /64) per second, and four times as many per prefix (an IPv4
	// /24, an IPv6 /48); 0 means DefaultOffersPerSource, negative no cap.
	OffersPerSource int
	// NegotiationsPerSource caps the negotiations in progress per source,
	// and four times as many per prefix; 0 means
	// DefaultNegotiationsPerSource, negative no cap.
	NegotiationsPerSource int
	// NegotiationTimeout bounds each negotiation; 0 means
	// DefaultNegotiationTimeout.
	NegotiationTimeout time.Duration
	// ProofWindow bounds the wait for an answered client's first ICE
	// check; 0 means DefaultProofWindow.
	ProofWindow time.Duration
	// AnswerWait bounds an admitted offer's wait for its turn to be
	// answered; 0 means DefaultAnswerWait.
	AnswerWait time.Duration
	// MaxSignalingConns caps the open signalling TCP connections; 0 means
	// DefaultMaxSignalingConns.
	MaxSignalingConns int
	// SignalingConnsPerSource caps one source's open signalling
	// connections; 0 means DefaultSignalingConnsPerSource, negative no
	// cap.
	SignalingConnsPerSource int

	// includeLoopback forces loopback candidates whatever the ICE socket
	// is bound to; tests use it with an ICE socket on 127.0.0.1, where it
	// is implied anyway.
	includeLoopback bool
}

// Stats are a Listener's counters.
type Stats struct {
	// Offers counts the offers received, over HTTP and the LAN; Answered
	// those answered.
	Offers, Answered uint64
	// Accepted counts the connections handed to Accept; Failed the
	// answered peers whose connection did not complete.
	Accepted, Failed uint64
	// Refused counts offers refused before any WebRTC state was made, by
	// reason: over the size cap, the global cap or answering queue full,
	// over their source's rate, over their source's negotiations,
	// malformed, and without a valid identity.
	TooLarge, Busy, RateLimited, SourceBusy, Malformed, Unauthenticated uint64
	// Proven counts answered clients that completed an ICE check;
	// Unproven the answered negotiations torn down because their client
	// did not in time (or gave up its place to a new offer).
	Proven, Unproven uint64
	// NotLAN counts LAN signals and requests dropped because they came
	// from outside loopback, private and link-local addresses.
	NotLAN uint64
	// ConnsRefused counts signalling connections closed at once (their
	// source over its cap, or the endpoint full of served requests);
	// ConnsEvicted the ones closed for a new one while still sending
	// their request.
	ConnsRefused, ConnsEvicted uint64
	// ProxyRefused counts trusted proxies' connections closed because
	// their PROXY header did not parse.
	ProxyRefused uint64
	// ICEQueueFull counts the STUN and DTLS datagrams a shared socket's
	// Demux dropped because ICE fell behind.
	ICEQueueFull uint64
	// Negotiating is the negotiations in progress now; Open the
	// connections accepted and not yet closed; SignalingConns the
	// signalling TCP connections open.
	Negotiating, Open, SignalingConns int
}

// counters are the Stats as kept.
type counters struct {
	offers, answered, accepted, failed               atomic.Uint64
	tooLarge, busy, rateLimited, sourceBusy          atomic.Uint64
	malformed, unauthenticated, proven, unproven     atomic.Uint64
	notLAN, connsRefused, connsEvicted, proxyRefused atomic.Uint64
	inFlight, halfOpen, open                         atomic.Int64
}

// Listener serves NetherNet: HTTP signalling on TCP and the peer
// connections over ICE on one UDP socket. Create one with Config.Listen.
type Listener struct {
	conf Config
	log  zerolog.Logger

	tcp  net.Listener
	http *http.Server
	nn   *gonn.Listener
	lan  *lanSignaling  // nil without LAN discovery
	nnl  *gonn.Listener // the listener of LAN joins
	mux  *ice.UDPMuxDefault

	incoming chan *gonn.Conn
	// origins holds the ticket of each connection being started or
	// waiting for Accept, by *gonn.Conn: where its client was seen.
	origins sync.Map
	own     net.PacketConn // the ICE socket, if the Listener opened it
	ice     net.Addr
	tls     bool

	adm   *admission
	guard *connGuard
	https *httpSignaling
	stats counters
	rlog  lineLimiter // refusals logged at info

	cancel    context.CancelFunc // ends the HTTP signalling's context
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Listen opens the signalling endpoint and the ICE socket and starts
// answering offers.
func (c Config) Listen() (*Listener, error) {
	if c.Addr == "" {
		return nil, errors.New("nethernet: no address")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("nethernet: a TLS certificate needs its key, and a key its certificate")
	}
	c.MaxOfferSize = cmpOr(c.MaxOfferSize, DefaultMaxOfferSize)
	c.MaxNegotiations = cmpOr(c.MaxNegotiations, DefaultMaxNegotiations)
	c.MaxAnswering = cmpOr(c.MaxAnswering, DefaultMaxAnswering)
	c.OffersPerSource = cmpOr(c.OffersPerSource, DefaultOffersPerSource)
	c.NegotiationsPerSource = cmpOr(c.NegotiationsPerSource, DefaultNegotiationsPerSource)
	c.NegotiationTimeout = cmpOr(c.NegotiationTimeout, DefaultNegotiationTimeout)
	c.ProofWindow = cmpOr(c.ProofWindow, DefaultProofWindow)
	c.AnswerWait = cmpOr(c.AnswerWait, DefaultAnswerWait)
	c.MaxSignalingConns = cmpOr(c.MaxSignalingConns, DefaultMaxSignalingConns)
	c.SignalingConnsPerSource = cmpOr(c.SignalingConnsPerSource, DefaultSignalingConnsPerSource)
	l := &Listener{conf: c, closed: make(chan struct{}), incoming: make(chan *gonn.Conn)}
	if c.Log != nil {
		l.log = c.Log.With().Str("src", "nethernet").Logger()
	} else {
		l.log = zerolog.Nop()
	}
	l.adm = newAdmission(admitConfig{
		max:           c.MaxNegotiations,
		answering:     c.MaxAnswering,
		perSource:     c.NegotiationsPerSource,
		ratePerSource: c.OffersPerSource,
		proofWindow:   c.ProofWindow,
		timeout:       c.NegotiationTimeout,
		answerWait:    c.AnswerWait,
		trusted:       c.TrustedProxy,
	}, &l.stats)
	l.guard = newConnGuard(c.MaxSignalingConns, c.SignalingConnsPerSource, c.TrustedProxy, c.ProxyProtocol, &l.stats)
	var tlsConf *tls.Config
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("nethernet: TLS: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	pc := c.ICEConn
	if pc == nil {
		addr := cmpOr(c.ICEAddr, c.Addr)
		var err error
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return nil, fmt.Errorf("nethernet: ICE socket: %w", err)
		}
		l.own = pc
	}
	l.ice = pc.LocalAddr()
	fail := func(err error) (*Listener, error) {
		l.closeAll()
		return nil, err
	}
	tcp, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fail(fmt.Errorf("nethernet: signalling: %w", err))
	}
	l.tcp = tcp
	api, mux, err := l.newAPI(&proofConn{PacketConn: pc, a: l.adm})
	if err != nil {
		return fail(fmt.Errorf("nethernet: %w", err))
	}
	l.mux = mux

	slogger := newSlog(l.log)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.https = newHTTPSignaling(l, ctx)
	key := c.IdentityKey
	if key == nil {
		if key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
			return fail(fmt.Errorf("nethernet: identity: %w", err))
		}
	}
	ids := &identityCache{key: key}
	lc := gonn.ListenConfig{
		Log:            slogger,
		API:            api,
		AllowAnonymous: c.AllowAnonymous,
		NegotiationContext: func(parent context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(parent, c.NegotiationTimeout)
		},
		ConnContext: func(parent context.Context, conn *gonn.Conn) (context.Context, context.CancelFunc) {
			var k connKey
			if a, ok := conn.RemoteAddr().(*gonn.Addr); ok {
				k = connKey{a.NetworkID, a.ConnectionID}
			}
			if t := l.adm.ticketOf(k); t != nil {
				// Where the client was seen, for Accept; kept while the
				// connection lives.
				l.origins.Store(conn, t)
				context.AfterFunc(conn.Context(), func() { l.origins.Delete(conn) })
			}
			return l.adm.connContext(parent, k)
		},
		IssueServerIdentity: ids.issue,
		// The HTTP model answers each offer once, with every candidate.
		DisableTrickleICE: true,
	}
	nn, err := lc.Listen(l.https)
	if err != nil {
		return fail(fmt.Errorf("nethernet: %w", err))
	}
	l.nn = nn
	l.wg.Go(func() { l.acceptFrom(nn) })
	if c.LANAddr != "" {
		l.listenLAN(lc)
	}

	var ln net.Listener = &guardListener{Listener: tcp, g: l.guard}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
		l.tls = true
	}
	l.http = &http.Server{
		Handler:           l.handler(),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       requestTimeout,
		WriteTimeout:      c.AnswerWait + c.NegotiationTimeout + 5*time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    8 << 10,
		ConnContext:       connContext,
		ErrorLog:          httpErrorLog(),
	}
	l.wg.Go(func() { _ = l.http.Serve(ln) })
	l.wg.Go(l.summarise)
	scheme := "http"
	if l.tls {
		scheme = "https"
	}
	l.log.Info().Str("signalling", scheme+"://"+tcp.Addr().String()).Str("ice", l.ice.String()).Msg("NetherNet listening")
	return l, nil
}

// newAPI returns the WebRTC API every peer connection is made with: ICE
// on pc alone, candidates on pc's address (loopback only when it is
// loopback), no mDNS.
func (l *Listener) newAPI(pc net.PacketConn) (*webrtc.API, *ice.UDPMuxDefault, error) {
	var se webrtc.SettingEngine
	local := netip.IPv4Unspecified()
	if ua, ok := pc.LocalAddr().(*net.UDPAddr); ok {
		if a, ok := netip.AddrFromSlice(ua.IP); ok {
			local = a.Unmap()
		}
	}
	// pion asks its UDPMux for the addresses to offer; it does not gather
	// on its own sockets.
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: pc, Logger: pionLogger{}.NewLogger("mux")})
	se.SetICEUDPMux(mux)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.LoggerFactory = pionLogger{}
	loopback := l.conf.includeLoopback || local.IsLoopback()
	se.SetIncludeLoopbackCandidate(loopback)
	se.SetIPFilter(func(ip net.IP) bool {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return false
		}
		a = a.Unmap()
		switch {
		case local.IsLoopback():
			return a.IsLoopback()
		case !local.IsUnspecified():
			return a == local
		}
		return true
	})
	if local.Is4() {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	} else if !local.IsUnspecified() {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP6})
	} else {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	}
	// A peer that goes silent is given up on after 10 s rather than 30.
	se.SetICETimeouts(4*time.Second, 10*time.Second, 2*time.Second)
	if pa := l.conf.PublicAddress; pa.IsValid() {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: []string{pa.Addr().Unmap().String()},
			// A host candidate on the ICE socket itself: as srflx, pion
			// would open a socket of its own per offer, on a port of
			// its choosing that no firewall opened.
			AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode:            webrtc.ICEAddressRewriteAppend,
		})
		if err != nil {
			_ = mux.Close()
			return nil, nil, fmt.Errorf("public address: %w", err)
		}
	}
	return webrtc.NewAPI(webrtc.WithSettingEngine(se)), mux, nil
}

// listenLAN opens LAN discovery and the listener of the joins signalled
// through it, which trickle their candidates. It logs and gives up if the
// socket cannot be opened.
func (l *Listener) listenLAN(lc gonn.ListenConfig) {
	lan, err := listenLAN(l, l.conf.LANAddr)
	if err != nil {
		l.log.Warn().Err(err).Str("addr", l.conf.LANAddr).
			Msg("NetherNet LAN discovery not opened; LAN clients will not list the server over NetherNet")
		return
	}
	lc.DisableTrickleICE = false
	nnl, err := lc.Listen(lan)
	if err != nil {
		_ = lan.Close()
		l.log.Warn().Err(err).Msg("NetherNet LAN listener not opened")
		return
	}
	l.lan, l.nnl = lan, nnl
	l.wg.Go(func() { l.acceptFrom(nnl) })
}

// acceptFrom passes the connections nn accepts to Accept, until nn or the
// Listener closes.
func (l *Listener) acceptFrom(nn *gonn.Listener) {
	for {
		c, err := nn.Accept()
		if err != nil {
			return
		}
		nc, ok := c.(*gonn.Conn)
		if !ok {
			_ = c.Close()
			continue
		}
		select {
		case l.incoming <- nc:
		case <-l.closed:
			_ = nc.Close()
			return
		}
	}
}

// Accept waits for and returns the next connection whose data channels
// are open. It returns an error wrapping net.ErrClosed once the Listener
// is closed.
func (l *Listener) Accept() (*Conn, error) {
	select {
	case <-l.closed:
		return nil, fmt.Errorf("nethernet: accept: %w", net.ErrClosed)
	case nc := <-l.incoming:
		l.stats.accepted.Add(1)
		l.stats.open.Add(1)
		var offer netip.Addr
		var check netip.AddrPort
		if t, ok := l.origins.LoadAndDelete(nc); ok {
			offer, check = l.adm.origin(t.(*ticket))
		}
		return newConn(nc, offer, check, func() { l.stats.open.Add(-1) }), nil
	}
}

// LANAddr returns the address LAN discovery is answered on, nil without
// it.
func (l *Listener) LANAddr() net.Addr {
	if l.lan == nil {
		return nil
	}
	return l.lan.Addr()
}

// Addr returns the signalling endpoint's TCP address.
func (l *Listener) Addr() net.Addr { return l.tcp.Addr() }

// ICEAddr returns the address of the UDP socket ICE runs on.
func (l *Listener) ICEAddr() net.Addr { return l.ice }

// TLS reports whether signalling is HTTPS.
func (l *Listener) TLS() bool { return l.tls }

// Stats returns the Listener's counters.
func (l *Listener) Stats() Stats {
	s := &l.stats
	st := Stats{
		Offers: s.offers.Load(), Answered: s.answered.Load(),
		Accepted: s.accepted.Load(), Failed: s.failed.Load(),
		TooLarge: s.tooLarge.Load(), Busy: s.busy.Load(),
		RateLimited: s.rateLimited.Load(), SourceBusy: s.sourceBusy.Load(),
		Malformed: s.malformed.Load(), Unauthenticated: s.unauthenticated.Load(),
		Proven: s.proven.Load(), Unproven: s.unproven.Load(), NotLAN: s.notLAN.Load(),
		ConnsRefused: s.connsRefused.Load(), ConnsEvicted: s.connsEvicted.Load(),
		ProxyRefused:   s.proxyRefused.Load(),
		Negotiating:    int(s.inFlight.Load()),
		Open:           int(s.open.Load()),
		SignalingConns: l.guard.openConns(),
	}
	if d, ok := l.conf.ICEConn.(*Demux); ok {
		st.ICEQueueFull = d.Dropped()
	}
	return st
}

// Close stops answering offers, ends the negotiations in progress and
// closes the sockets the Listener opened. Connections already accepted
// are their sessions'; they end when closed or when the ICE socket they
// run on is closed. Close waits for the Listener's goroutines and for the
// negotiations in progress to end, and is safe to call more than once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.closeAll()
		l.adm.close()
		l.wg.Wait()
		// go-nethernet ends an answered peer's start as soon as its
		// listener closes; wait for the last to notice.
		deadline := time.Now().Add(2 * time.Second)
		for l.stats.halfOpen.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		l.log.Info().Msg("NetherNet closed")
	})
	return nil
}

// closeAll closes whatever Listen opened.
func (l *Listener) closeAll() {
	if l.cancel != nil {
		l.cancel()
	}
	if l.http != nil {
		_ = l.http.Close()
	} else if l.tcp != nil {
		_ = l.tcp.Close()
	}
	if l.nn != nil {
		_ = l.nn.Close()
	}
	if l.nnl != nil {
		_ = l.nnl.Close()
	}
	if l.lan != nil {
		_ = l.lan.Close()
	}
	if l.mux != nil {
		_ = l.mux.Close()
	}
	if l.own != nil {
		_ = l.own.Close()
	}
}

// cmpOr returns v, or def if v is zero.
func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
