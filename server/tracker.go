package server

import "github.com/basaltmc/basalt/session"

// tracker wraps the configured Handler for one server: it gives a session a
// player slot when its Login packet arrives, refusing it when the server is
// full, before the wrapped handler sees the packet. Every other event goes
// straight through. It is safe for concurrent use if h is.
type tracker struct {
	srv *Server
	h   session.Handler
}

var _ session.Handler = tracker{}

// HandleOpen calls the wrapped handler.
func (t tracker) HandleOpen(s *session.Session) error {
	return t.h.HandleOpen(s)
}

// HandlePacket admits a Login as a player, or refuses it with a ServerFull
// Disconnect when every slot is taken, and otherwise passes p on.
func (t tracker) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID == session.IDLogin && !t.srv.admit(s) {
		s.Log().Debug().Int("max_players", t.srv.playerLimit()).Msg("server full; refusing login")
		// Disconnect closes the session, so Run returns nil: a full
		// server is not the client's fault.
		_ = s.DisconnectWith(session.DisconnectReasonServerFull, ServerFullMessage)
		return nil
	}
	return t.h.HandlePacket(s, p)
}

// HandleClose calls the wrapped handler. The server frees the player slot
// once Run has returned.
func (t tracker) HandleClose(s *session.Session, err error) {
	t.h.HandleClose(s, err)
}
