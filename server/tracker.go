package server

import (
	"errors"
	"time"

	"github.com/basaltmc/basalt/session"
)

// tracker wraps the configured NewHandler for one server: a player that
// has logged in takes a player slot before the wrapped NewHandler sees it,
// and is refused with a ServerFull Disconnect when every slot is taken. The
// slot is freed when the session ends. It is safe for concurrent use if
// newHandler is.
type tracker struct {
	srv        *Server
	newHandler func(*session.Session) (session.Handler, error)
}

// NewHandler admits s as a player, or refuses it when the server is full,
// and otherwise returns what the wrapped NewHandler does.
func (t tracker) NewHandler(s *session.Session) (session.Handler, error) {
	if err := t.srv.refuseDraining(s); err != nil {
		return nil, err
	}
	// The lists were checked at Login; a ban or allowlist change made
	// since then, before the session showed up as a player, is caught
	// here.
	if id, ok := s.Identity(); ok {
		if err := t.srv.access.Check(id, addrPort(s.RemoteAddr()).Addr(), time.Now()); err != nil {
			t.srv.stats.countRefusal(err)
			t.srv.logRefusal(s, id, true, accessReason(err), err)
			return nil, err
		}
	}
	log := s.Log().Sample(t.srv.lifecycle)
	if !t.srv.admit(s) {
		log.Info().Int("max_players", t.srv.playerLimit()).Msg("server full; login refused")
		return nil, &session.DisconnectError{Reason: session.DisconnectReasonServerFull, Message: ServerFullMessage}
	}
	h, err := t.newHandler(s)
	if err != nil {
		// Refused by the handler: not a player after all. The slot is
		// free at once, not when the session has said goodbye.
		players := t.srv.release(s)
		id, _ := s.Identity()
		if e := t.srv.refusalEvent(s); e != nil {
			if de, ok := errors.AsType[*session.DisconnectError](err); ok {
				e.Str("shown", de.Message)
			}
			e.Str("xuid", id.XUID).Str("reason", refusedHandler).Err(err).Int("players", players).Msg("login refused")
		}
		return nil, err
	}
	if e := log.Info(); e.Enabled() {
		id, _ := s.Identity()
		e.Str("xuid", id.XUID).Int32("protocol", id.Protocol).Int("players", t.srv.PlayerCount()).Msg("player joined")
	}
	return h, nil
}

// release takes back the player slot admit gave s, and returns how many
// players are left.
func (srv *Server) release(s *session.Session) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if e := srv.sessions[s]; e != nil && e.player {
		e.player = false
		srv.players--
		srv.updateStatusLocked()
	}
	return srv.players
}
