package server

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/monitor"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/df-mc/atomic"
	"github.com/rs/zerolog"
)

// Defaults New gives zero Config fields.
const (
	// DefaultShutdownMessage is what players see when the server shuts
	// down, unless configured.
	DefaultShutdownMessage = "Server closed."
	// DefaultShutdownTimeout bounds how long Close waits for the shutdown
	// message to be delivered. It is longer than raknet's close timeout
	// (3 s), so a client that acknowledges slowly still gets it.
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultAddressV4 and DefaultAddressV6 are the game addresses when
	// neither is configured: every address of each family, on the ports
	// LAN discovery pings go to.
	DefaultAddressV4, DefaultAddressV6 = "0.0.0.0:19132", "[::]:19133"
	// DefaultName and DefaultLevelName are the MOTD's two lines unless
	// configured.
	DefaultName, DefaultLevelName = "Basalt", "Bedrock level"
	// DefaultGameMode is the game mode the MOTD advertises unless
	// configured.
	DefaultGameMode = "Survival"
	// DefaultMaxPlayers is the player limit unless configured.
	DefaultMaxPlayers = 20
	// ServerFullMessage is the Disconnect message a client gets when it
	// logs in while MaxPlayers players are online.
	ServerFullMessage = "The server is full."
	// LANPortV4 and LANPortV6 are the ports Bedrock clients send LAN
	// discovery pings to: IPv4 broadcast to 19132, IPv6 to 19133.
	LANPortV4, LANPortV6 = 19132, 19133
	// lifecycleBurst and lifecycleEvery bound the info lines of players
	// joining, leaving and being refused: plenty for a busy server's
	// comings and goings, few enough that a flood of logins cannot fill
	// the log.
	lifecycleBurst = 30
	lifecycleEvery = 10 * time.Second
)

// Server is a Bedrock server: it owns the RakNet listeners (one per address
// family, plus LAN discovery listeners), a stable GUID, the live MOTD, the
// registry of sessions, the player limit and the shutdown. Create one with
// Config.New, start it with Listen or Run, and stop it with Close. Its
// methods are safe for concurrent use.
//
// A player is a session whose login the server admitted: a session takes a
// player slot when it has logged in (the session ran the pre-game protocol)
// while fewer than MaxPlayers are online, and frees it when it ends. A
// login beyond the limit is refused with a Disconnect
// (DisconnectReasonServerFull, ServerFullMessage) before NewHandler sees it.
// The MOTD's player count is the number of players, updated on every join
// and leave.
type Server struct {
	conf Config
	log  zerolog.Logger
	// handler makes each player's handler: Config.NewHandler, or the gate.
	handler func(*session.Session) (session.Handler, error)
	// key signs and derives every session's encryption handshake.
	key *ecdsa.PrivateKey
	// adv is what the server advertises in pongs.
	adv advert

	// sessCtx is the context sessions run under; cancelled last in Close,
	// after they were told the server is closing.
	sessCtx context.Context
	cancel  context.CancelFunc
	loops   sync.WaitGroup // accept loops
	running sync.WaitGroup // session goroutines

	mu        sync.Mutex
	listening bool
	closing   bool
	draining  atomic.Bool // Drain has begun; see health.go
	started   time.Time
	ls        listenerSet // every listener open
	sessions  map[*session.Session]*entry
	players   int

	stats     counters
	closeOnce sync.Once

	// lifecycle samples the info lines of players joining, leaving and
	// being refused, which anyone able to log in can trigger: bursts of
	// lifecycleBurst per lifecycleEvery, the rest dropped.
	lifecycle *zerolog.BurstSampler
	// refusals samples the "login refused" lines apart from lifecycle,
	// so that a flood of refused logins cannot crowd out the joins and
	// leaves, and counts the lines it drops.
	refusals *countingSampler
	metrics  *monitor.Server // guarded by mu; nil unless serving metrics

	// verifier checks Logins in online mode; nil in offline mode.
	verifier *auth.Verifier
	// access is the allowlist and ban list; accessDone stops their
	// file watcher.
	access     *access.Lists
	accessDone chan struct{}
}

// listenerSet is every listener a server has open: the game listeners of
// each family, the LAN discovery listeners and NetherNet's. Guarded by
// Server.mu.
type listenerSet struct {
	v4, v6 *raknet.Listener    // game listeners, nil when disabled
	lan    []*raknet.Listener  // LAN discovery listeners opened
	nn     *nethernet.Listener // nil unless serving NetherNet
	demux  *nethernet.Demux    // ICE's view of the game socket, if shared
}

// entry is what the registry keeps per session.
type entry struct {
	player bool // took a player slot; guarded by Server.mu
}

// New returns a Server configured by c, with every zero field given its
// default (see Config). It opens nothing: call Listen or Run.
func (c Config) New() *Server {
	if c.Log == nil {
		nop := zerolog.Nop()
		c.Log = &nop
	}
	if c.Network.AddressV4 == "" && c.Network.AddressV6 == "" {
		c.Network.AddressV4, c.Network.AddressV6 = DefaultAddressV4, DefaultAddressV6
	}
	c.Network.LANAddressV4 = cmp.Or(c.Network.LANAddressV4, net.JoinHostPort("0.0.0.0", strconv.Itoa(LANPortV4)))
	c.Network.LANAddressV6 = cmp.Or(c.Network.LANAddressV6, net.JoinHostPort("::", strconv.Itoa(LANPortV6)))
	c.Status.Name = cmp.Or(c.Status.Name, DefaultName)
	c.Status.LevelName = cmp.Or(c.Status.LevelName, DefaultLevelName)
	c.Status.Edition = cmp.Or(c.Status.Edition, motd.EditionBedrock)
	c.Status.GameMode = cmp.Or(c.Status.GameMode, DefaultGameMode)
	if c.Status.MaxPlayers <= 0 {
		c.Status.MaxPlayers = DefaultMaxPlayers
	}
	if len(c.AcceptedProtocols) == 0 {
		c.AcceptedProtocols = session.KnownProtocols()
	}
	// The MOTD advertises the newest protocol accepted, and its version.
	if c.Status.Protocol == 0 {
		c.Status.Protocol = slices.Max(c.AcceptedProtocols)
	}
	if v, ok := session.LookupProtocol(c.Status.Protocol); ok {
		c.Status.Version = cmp.Or(c.Status.Version, v.Name)
	}
	c.Status.Version = cmp.Or(c.Status.Version, session.CurrentVersion)
	c.Handler = cmp.Or(c.Handler, HandlerGate)
	if c.NewHandler == nil && c.Handler == HandlerLobby {
		c.NewHandler, c.Shutdown.OnClose, c.Shutdown.OnDrain = c.newLobby()
	}
	if c.Status.Interval <= 0 {
		c.Status.Interval = DefaultStatusInterval
	}
	c.Shutdown.Message = cmp.Or(c.Shutdown.Message, DefaultShutdownMessage)
	c.Shutdown.RestartMessage = cmp.Or(c.Shutdown.RestartMessage, DefaultRestartMessage)
	c.Shutdown.Grace = min(max(c.Shutdown.Grace, 0), MaxShutdownGrace)
	if c.Shutdown.Timeout <= 0 {
		c.Shutdown.Timeout = DefaultShutdownTimeout
	}
	if c.GUID == 0 {
		c.GUID = randomGUID()
	}
	if c.RakNet.MaxConnections <= 0 {
		c.RakNet.MaxConnections = c.Status.MaxPlayers + connectionSlack(c.Status.MaxPlayers)
	}
	srv := &Server{
		conf:       c,
		log:        c.Log.With().Str("src", "server").Logger(),
		handler:    c.NewHandler,
		key:        newServerKey(),
		sessions:   make(map[*session.Session]*entry),
		lifecycle:  &zerolog.BurstSampler{Burst: lifecycleBurst, Period: lifecycleEvery},
		refusals:   &countingSampler{BurstSampler: zerolog.BurstSampler{Burst: lifecycleBurst, Period: lifecycleEvery}},
		accessDone: make(chan struct{}),
		verifier:   newVerifier(c),
	}
	srv.adv.kick, srv.adv.done = make(chan struct{}, 1), make(chan struct{})
	srv.initAccess()
	srv.adv.maxPlayers.Store(int64(c.Status.MaxPlayers))
	if srv.handler == nil {
		srv.handler = session.Gate(c.DisconnectMessage)
	}
	srv.adv.base = motd.Status{
		Edition:         c.Status.Edition,
		ServerName:      c.Status.Name,
		Protocol:        int(c.Status.Protocol),
		Version:         c.Status.Version,
		MaxPlayers:      c.Status.MaxPlayers,
		ServerGUID:      uint64(c.GUID),
		LevelName:       c.Status.LevelName,
		GameMode:        c.Status.GameMode,
		GameModeNumeric: 1,
		Extra:           []string{"0"},
	}
	srv.adv.status.Store(srv.adv.base)
	srv.adv.self = srv.adv.base
	srv.sessCtx, srv.cancel = context.WithCancel(context.Background())
	return srv
}

// Listen opens the game listeners (AddressV4 and AddressV6, those set), and
// with LANDiscovery the LAN discovery listeners where the game ports differ
// from 19132/19133; starts answering pings with the MOTD; and starts
// accepting sessions. A LAN listener that cannot be opened (its port is
// taken, say by another server) is skipped with a warning; a game listener
// that cannot be opened is an error, and then nothing stays open. Listen
// after Close returns an error wrapping net.ErrClosed. Listen panics if
// called twice.
func (srv *Server) Listen() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.listening {
		panic("server: Listen called twice")
	}
	srv.listening = true
	if srv.closing {
		return fmt.Errorf("listen: %w", net.ErrClosed)
	}
	if _, err := srv.adv.base.Encode(); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := srv.loadAccess(); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := srv.listenMetrics(); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	c := srv.conf
	lc := listenConfig(c)
	// NetherNet's signalling takes the game port's number on TCP; when
	// the system picked the UDP port (port 0) and its TCP twin is taken,
	// the game listeners are opened again on another.
	for attempt := 0; ; attempt++ {
		for _, g := range []struct {
			addr, wildcard string
			l              **raknet.Listener
		}{{c.Network.AddressV4, "0.0.0.0", &srv.ls.v4}, {c.Network.AddressV6, "::", &srv.ls.v6}} {
			if g.addr == "" {
				continue
			}
			// An empty host means every address of this family only.
			addr := withHost(g.addr, g.wildcard)
			l, err := srv.withICE(srv.withQuery(lc, g.l == &srv.ls.v6), g.l == &srv.ls.v6).Listen(addr)
			if err != nil && srv.ls.v4 != nil && noIPv6(err) {
				// A host without IPv6 (some containers) still serves IPv4.
				srv.log.Warn().Err(err).Str("addr", addr).Msg("IPv6 is unavailable; serving IPv4 only")
				continue
			}
			if err != nil {
				for _, l := range srv.game() {
					_ = l.Close()
				}
				srv.ls.v4, srv.ls.v6 = nil, nil
				srv.metrics.Close()
				srv.metrics = nil
				key := "network.address_v4"
				if g.l == &srv.ls.v6 {
					key = "network.address_v6"
				}
				return c.locate(&listenError{key: key, addr: addr, err: err})
			}
			*g.l = l
		}
		if !c.NetherNet.Enabled {
			break
		}
		err := srv.listenNetherNet()
		if err == nil {
			break
		}
		for _, l := range srv.game() {
			_ = l.Close()
		}
		srv.ls.v4, srv.ls.v6 = nil, nil
		if errors.Is(err, errTwinTaken) && attempt < 8 {
			continue
		}
		srv.metrics.Close()
		srv.metrics = nil
		return fmt.Errorf("listen: %w", err)
	}
	if c.Network.LANDiscovery {
		srv.listenLAN(lc)
	}
	srv.started = time.Now()
	srv.updateStatusLocked()
	for _, l := range srv.listeners() {
		srv.loops.Add(1)
		go srv.accept(l)
	}
	if srv.ls.nn != nil {
		srv.loops.Add(1)
		go srv.acceptNetherNet(srv.ls.nn)
	}
	if c.Status.Provider != nil {
		srv.loops.Add(1)
		go srv.provideStatus(srv.adv.done)
	}
	srv.startAccess()
	e := srv.log.Info().Int64("guid", c.GUID).Int("max_players", c.Status.MaxPlayers)
	e.Strs("addrs", addrStrings(srv.game()))
	if srv.ls.nn != nil {
		e.Str("nethernet", srv.ls.nn.Addr().String())
	}
	if len(srv.ls.lan) > 0 {
		e.Strs("lan", addrStrings(srv.ls.lan))
	}
	e.Msg("listening")
	return nil
}

// listenConfig returns the configuration of every listener c asks for.
func listenConfig(c Config) raknet.ListenConfig {
	lc := raknet.ListenConfig{
		ListenPacket:        c.listenPacket,
		Log:                 c.Log,
		MaxMTU:              c.RakNet.MaxMTU,
		MaxConnections:      c.RakNet.MaxConnections,
		MaxConnectionsPerIP: c.RakNet.MaxConnectionsPerIP,
		MemoryBudget:        c.RakNet.MemoryBudget,
		Sockets:             c.RakNet.Sockets,
		// Sessions promote a connection once its player logged in.
		PreLoginShare:    true,
		ProtocolVersions: c.RakNet.ProtocolVersions,
		Timeout:          c.RakNet.Timeout,
		GUID:             c.GUID,
		CookieSecret:     c.Network.CookieSecret,
		ProxyProtocol:    c.Network.ProxyProtocol,
		TrustedProxies:   c.Network.TrustedProxies,
	}
	if c.noOfflineLimits {
		lc.OfflineRate, lc.OfflineBytes = -1, -1
	}
	return lc
}

// listenLAN opens a LAN discovery listener for each family whose game port
// is not the discovery port. It runs with srv.mu held.
func (srv *Server) listenLAN(lc raknet.ListenConfig) {
	for _, g := range []struct {
		game *raknet.Listener
		addr string
	}{{srv.ls.v4, srv.conf.Network.LANAddressV4}, {srv.ls.v6, srv.conf.Network.LANAddressV6}} {
		if g.game == nil || port(g.game.Addr()) == portOf(g.addr) {
			continue // no game listener, or it answers discovery itself
		}
		addr := g.addr
		l, err := lc.Listen(addr)
		if err != nil {
			srv.log.Warn().Err(err).Str("addr", addr).
				Msg("LAN discovery listener not opened; the server will not be listed on the LAN from this port")
			continue
		}
		srv.ls.lan = append(srv.ls.lan, l)
	}
}

// game returns the game listeners, IPv4 first.
func (srv *Server) game() []*raknet.Listener {
	var ls []*raknet.Listener
	for _, l := range []*raknet.Listener{srv.ls.v4, srv.ls.v6} {
		if l != nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// listeners returns every open listener, game listeners first.
func (srv *Server) listeners() []*raknet.Listener {
	return append(srv.game(), srv.ls.lan...)
}

// Run listens (unless Listen was called already), serves until ctx ends,
// then drains for Config.Shutdown.Grace (see Drain) and shuts down with
// Close, and returns nil. It returns the error of
// Listen if the server cannot start.
func (srv *Server) Run(ctx context.Context) error {
	srv.mu.Lock()
	listening := srv.listening
	srv.mu.Unlock()
	if !listening {
		if err := srv.Listen(); err != nil {
			return err
		}
	}
	<-ctx.Done()
	srv.Drain(context.Background(), srv.conf.Shutdown.Grace)
	return srv.Close()
}

// accept serves every connection l accepts, until l is closed.
func (srv *Server) accept(l *raknet.Listener) {
	defer srv.loops.Done()
	for {
		c, err := l.AcceptConn()
		if err != nil {
			return // AcceptConn fails only once the listener is closed
		}
		srv.serve(c)
	}
}

// newServerKey returns a new P-384 key for the encryption handshakes of one
// server.
func newServerKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("server: generate key: %v", err)) // crypto/rand does not fail
	}
	return k
}

// serve starts a session over c and registers it.
func (srv *Server) serve(c *raknet.Conn) {
	srv.serveConn(netConn{c})
}

// serveConn starts a session over c, of any transport, and registers it.
func (srv *Server) serveConn(c session.Conn) {
	s := session.New(c, session.Config{
		NewHandler:        tracker{srv: srv, newHandler: countErrors(srv.handler, &srv.stats.sessions.handlerErrors)}.NewHandler,
		AcceptedProtocols: srv.conf.AcceptedProtocols,
		Encryption:        !srv.conf.EncryptionDisabled,
		ServerKey:         srv.key,
		Log:               srv.conf.Log,
		LoginTimeout:      srv.conf.LoginTimeout,
		VerifyLogin:       srv.verifyLogin,
	})
	srv.mu.Lock()
	if srv.closing {
		srv.mu.Unlock()
		_ = c.Close()
		return
	}
	srv.sessions[s] = &entry{}
	srv.running.Add(1)
	srv.mu.Unlock()
	go srv.run(s)
}

// run runs s until it ends and then forgets it.
func (srv *Server) run(s *session.Session) {
	defer srv.running.Done()
	start := time.Now()
	log := s.Log()
	if e := log.Debug(); e.Enabled() {
		e.Msg("session opened")
	}
	err := srv.runSafely(s)
	_, loggedIn := s.Identity()
	srv.stats.count(err, loggedIn)
	srv.stats.sessions.count(err)
	if left, players := srv.remove(s); left {
		l := s.Log().Sample(srv.lifecycle) // with the player, now logged in
		e := l.Info().Stringer("duration", time.Since(start).Round(time.Millisecond)).Int("players", players)
		if err != nil {
			e.Str("reason", err.Error())
		}
		e.Msg("player left")
	}
	if e := log.Debug(); e.Enabled() {
		if id, ok := s.Identity(); ok {
			e.Str("player", id.DisplayName)
		}
		if n, ok := s.NetStats(); ok {
			logNetStats(e, n)
		}
		e.Err(err).Stringer("duration", time.Since(start).Round(time.Millisecond)).Msg("session closed")
	}
}

// runSafely runs s, turning a panic that escaped the session (handler
// panics are already recovered by session) into an error, so one broken
// session never takes the server down.
func (srv *Server) runSafely(s *session.Session) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("session panicked: %v", r)
			s.Log().Error().Err(err).Msg("session panicked")
			_ = s.Close()
		}
	}()
	return s.Run(srv.sessCtx)
}

// remove forgets s and frees its player slot, reporting whether it held
// one and how many players are left.
func (srv *Server) remove(s *session.Session) (player bool, players int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	e := srv.sessions[s]
	delete(srv.sessions, s)
	srv.stats.sessions.add(s.Stats())
	if e != nil && e.player {
		srv.players--
		srv.updateStatusLocked()
		return true, srv.players
	}
	return false, srv.players
}

// admit gives s a player slot if it has none and one is free, and reports
// whether s holds one.
func (srv *Server) admit(s *session.Session) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	e := srv.sessions[s]
	switch {
	case e == nil:
		return false // already removed: the session is ending
	case e.player:
		return true
	case srv.players >= srv.playerLimit():
		return false
	}
	e.player = true
	srv.players++
	srv.updateStatusLocked()
	return true
}

// updateStatusLocked recomputes the MOTD from the player count and the
// game ports and hands it to every listener. It runs with srv.mu held, so
// updates reach the listeners in order.
func (srv *Server) updateStatusLocked() {
	st := srv.adv.base
	st.Players = srv.players
	var p4, p6 uint16
	if srv.ls.v4 != nil {
		p4 = port(srv.ls.v4.Addr())
	}
	if srv.ls.v6 != nil {
		p6 = port(srv.ls.v6.Addr())
	}
	// Clients connect to the port of their family; with one family
	// disabled, both fields carry the other's port, as gophertunnel does.
	st.PortV4, st.PortV6 = cmp.Or(p4, p6), cmp.Or(p6, p4)
	// Behind a balancer or tunnel, the port players reach. Clients that
	// reconnect to the pong's port (gophertunnel, the game) take the
	// IPv4 field whatever their family.
	if pub := srv.conf.Network.PublicAddress; pub.IsValid() {
		st.PortV4 = pub.Port()
		if pub.Addr().Is6() {
			st.PortV6 = pub.Port()
		}
	}
	srv.publishLocked(st)
}

// Close shuts the server down: it stops accepting sessions, disconnects
// every session with ShutdownMessage (DisconnectReasonShutdown) and waits,
// at most ShutdownTimeout, for the clients to acknowledge it; then it
// closes what is left and the listeners and waits for every session
// goroutine to end. Close is safe to call more than once and concurrently;
// later calls return at once. It returns nil.
func (srv *Server) Close() error {
	srv.closeOnce.Do(srv.shutdown)
	return nil
}

func (srv *Server) shutdown() {
	srv.mu.Lock()
	srv.closing = true
	close(srv.adv.done)
	close(srv.accessDone)
	sessions := slices.Collect(maps.Keys(srv.sessions))
	listeners := srv.listeners()
	nn := srv.ls.nn
	started := srv.started
	srv.mu.Unlock()
	defer srv.cancel()
	defer srv.stopMetrics()
	defer srv.stopVerifier()
	if len(listeners) == 0 {
		return
	}
	if srv.conf.Shutdown.OnClose != nil {
		srv.conf.Shutdown.OnClose(srv.conf.Shutdown.Message)
	}
	srv.log.Info().Int("sessions", len(sessions)).Msg("shutting down")

	// DisconnectWith only asks a session to end; each session then
	// flushes and waits for its client to acknowledge on its own
	// goroutines, side by side, so a slow client does not delay the others.
	for _, s := range sessions {
		_ = s.DisconnectWith(session.DisconnectReasonShutdown, srv.conf.Shutdown.Message)
	}
	t := time.NewTimer(srv.conf.Shutdown.Timeout)
wait:
	for _, s := range sessions {
		select {
		case <-s.Done():
		case <-t.C:
			srv.log.Warn().Stringer("timeout", srv.conf.Shutdown.Timeout).
				Msg("clients did not acknowledge the shutdown in time; closing their connections")
			break wait
		}
	}
	t.Stop()

	// Closing a listener closes its connections at once, which ends every
	// session still running.
	srv.cancel()
	if nn != nil {
		_ = nn.Close()
	}
	for _, l := range listeners {
		_ = l.Close()
	}
	srv.loops.Wait()
	srv.running.Wait()
	srv.log.Info().Stringer("uptime", time.Since(started).Round(time.Millisecond)).Msg("server closed")
}

// Status returns the MOTD the server currently advertises. It is safe to
// call at any time and never blocks.
func (srv *Server) Status() motd.Status {
	return srv.adv.status.Load()
}

// PlayerCount returns the number of players online: sessions holding a
// player slot.
func (srv *Server) PlayerCount() int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.players
}

// Sessions returns the sessions running now, players or not, in no
// particular order.
func (srv *Server) Sessions() []*session.Session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return slices.Collect(maps.Keys(srv.sessions))
}

// GUID returns the server GUID sent in pongs and MOTD field 6.
func (srv *Server) GUID() int64 { return srv.conf.GUID }

// Addrs returns the addresses of the game listeners, IPv4 first; nil
// before Listen.
func (srv *Server) Addrs() []net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return addrs(srv.game())
}

// LANAddrs returns the addresses of the LAN discovery listeners Listen
// opened; nil if none.
func (srv *Server) LANAddrs() []net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return addrs(srv.ls.lan)
}

func addrs(ls []*raknet.Listener) []net.Addr {
	var out []net.Addr
	for _, l := range ls {
		out = append(out, l.Addr())
	}
	return out
}

func addrStrings(ls []*raknet.Listener) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Addr().String())
	}
	return out
}

// addrPort returns a as a netip.AddrPort, the zero value if it is not a
// UDP address.
func addrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// port returns a's port.
func port(a net.Addr) uint16 { return addrPort(a).Port() }

// noIPv6 reports whether a listen error says the host has no IPv6.
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// withHost returns addr with host filled in if it has none.
func withHost(addr, host string) string {
	h, p, err := net.SplitHostPort(addr)
	if err != nil || h != "" {
		return addr
	}
	return net.JoinHostPort(host, p)
}

// portOf returns the port of a "host:port" address, 0 if it has none.
func portOf(addr string) uint16 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(p, 10, 16)
	return uint16(n)
}
