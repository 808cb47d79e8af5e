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
	"slices"
	"strconv"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

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

// newServerKey returns a new P-384 key for the encryption handshakes of one
// server.
func newServerKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("server: generate key: %v", err)) // crypto/rand does not fail
	}
	return k
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

// GUID returns the server GUID sent in pongs and MOTD field 6.
func (srv *Server) GUID() int64 { return srv.conf.GUID }
