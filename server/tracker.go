package server

import (
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
			return nil, err
		}
	}
	log := s.Log().Sample(t.srv.lifecycle)
	if !t.srv.admit(s) {
		log.Info().Int("max_players", t.srv.playerLimit()).Msg("server full; login refused")
		return nil, &session.DisconnectError{Reason: session.DisconnectReasonServerFull, Message: ServerFullMessage}
	}
	if e := log.Info(); e.Enabled() {
		id, _ := s.Identity()
		e.Str("xuid", id.XUID).Int32("protocol", id.Protocol).Int("players", t.srv.PlayerCount()).Msg("player joined")
	}
	return t.newHandler(s)
}
