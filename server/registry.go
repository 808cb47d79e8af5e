package server

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

// logNetStats adds a session's network figures to a log event.
func logNetStats(e *zerolog.Event, n session.NetStats) *zerolog.Event {
	return e.Stringer("rtt", n.RTT.Round(time.Microsecond)).Stringer("rtt_var", n.RTTVar.Round(time.Microsecond)).
		Float64("loss_in", n.PacketLossIn).Float64("loss_out", n.PacketLossOut).
		Uint64("resends", n.Resends).Int("window", n.Window).
		Uint64("bytes_in", n.BytesIn).Uint64("bytes_out", n.BytesOut).
		Uint64("datagrams_in", n.DatagramsIn).Uint64("datagrams_out", n.DatagramsOut)
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
