package session

// Handler is one session's handler of game packets: Config.NewHandler makes
// one for each player once it has logged in, so per-player state belongs in
// its fields. Its methods are called from the goroutine running the
// session's Run, one at a time, never before NewHandler has returned it;
// state that other goroutines also reach must be guarded. Returning an
// error or panicking ends that session only; a *DisconnectError (see Kick)
// is shown to the client first.
type Handler interface {
	// HandlePacket is called for each game packet the client sends after
	// logging in, in order. p.Payload is valid only until HandlePacket
	// returns.
	HandlePacket(s *Session, p Packet) error
	// HandleClose is called exactly once when the session ends, after the
	// Conn has been closed, with the error Run returns: nil if this side
	// closed the session (Close, Disconnect).
	HandleClose(s *Session, err error)
}

// NopHandler is a Handler that does nothing. Embed it in a handler to
// implement only the methods it needs. It is safe for concurrent use.
type NopHandler struct{}

var _ Handler = NopHandler{}

// HandlePacket ignores the packet and returns nil.
func (NopHandler) HandlePacket(*Session, Packet) error { return nil }

// HandleClose does nothing.
func (NopHandler) HandleClose(*Session, error) {}
