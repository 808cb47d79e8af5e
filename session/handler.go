package session

// Handler receives the events of one or more sessions. Its methods are called
// from the goroutine running the session's Run, one at a time for a given
// session; a Handler shared by several sessions must be safe for concurrent
// use across them. Returning an error or panicking ends that session only.
//
// A handler that accepts a player's Login calls Session.SetIdentity: until
// then the session keeps its pre-login limits and ends at
// Config.LoginTimeout. GateHandler does so before it disconnects the player.
type Handler interface {
	// HandleOpen is called once when Run starts, before any packet is read.
	HandleOpen(s *Session) error
	// HandlePacket is called for each packet the client sends, in order.
	// p.Payload is valid only until HandlePacket returns.
	HandlePacket(s *Session, p Packet) error
	// HandleClose is called exactly once when Run ends, with the error that
	// ended the session or nil if this side closed it (Close, Disconnect).
	HandleClose(s *Session, err error)
}

// NopHandler is a Handler that does nothing. Embed it in a handler to
// implement only the methods it needs. It is safe for concurrent use.
type NopHandler struct{}

var _ Handler = NopHandler{}

// HandleOpen does nothing and returns nil.
func (NopHandler) HandleOpen(*Session) error { return nil }

// HandlePacket ignores the packet and returns nil.
func (NopHandler) HandlePacket(*Session, Packet) error { return nil }

// HandleClose does nothing.
func (NopHandler) HandleClose(*Session, error) {}
