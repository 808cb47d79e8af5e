package packets

import (
	"github.com/basaltmc/basalt/session"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// TypedHandler is one session's handler of typed packets, decoded from the
// raw ones a session.Handler gets: Adapt turns it into a session.Handler.
// Its methods are called on the session's goroutine, one at a time; a
// TypedHandler that other goroutines reach (a broadcast, say) guards what
// they share. A handler that spawns players into a world implements
// join.Handler, a TypedHandler told of the spawn.
type TypedHandler interface {
	// HandlePacket is called for each packet the client sends, in order,
	// decoded. The packet is the handler's to keep.
	HandlePacket(s *session.Session, pk packet.Packet) error
	// HandleClose is called exactly once, when the session ends, with the
	// error that ended it or nil.
	HandleClose(s *session.Session, err error)
}

// RawHandler is a TypedHandler that sees each packet raw, before it is decoded.
// A handler implements it to skip decoding packets it has no use for (a
// client sends PlayerAuthInput every tick), to read a packet's sub-client
// ids, or to handle an id the packet library does not know.
type RawHandler interface {
	// HandleRawPacket is called with each packet before it is decoded.
	// It returns true if it has dealt with the packet, which is then not
	// decoded. p.Payload is valid only until it returns.
	HandleRawPacket(s *session.Session, p session.Packet) (handled bool, err error)
}

// DecodeErrorHandler is a TypedHandler that decides what a packet that does not
// decode does to the session. Without it such a packet is skipped
// (Session.Skip): counted, logged at debug level, and the session goes on.
type DecodeErrorHandler interface {
	// HandleDecodeError is called with a packet Codec.Decode refused and
	// its error (wrapping ErrUnknownPacket or ErrMalformed), raw:
	// p.Payload is valid only until it returns. Returning nil goes on
	// with the next packet; an error ends the session.
	HandleDecodeError(s *session.Session, p session.Packet, err error) error
}

// NopTypedHandler is a TypedHandler that does nothing. Embed it to
// implement only the methods needed. It is safe for concurrent use.
type NopTypedHandler struct{}

var _ TypedHandler = NopTypedHandler{}

// HandlePacket ignores the packet and returns nil.
func (NopTypedHandler) HandlePacket(*session.Session, packet.Packet) error { return nil }

// HandleClose does nothing.
func (NopTypedHandler) HandleClose(*session.Session, error) {}

// Adapter is a session.Handler that decodes each packet with Codec, laid out
// for the session's protocol, and hands it to Handler, a TypedHandler,
// letting it through raw first if Handler is a RawHandler. A packet that does not decode (an
// ID the packet library does not know, a payload that does not read) goes
// to Handler's HandleDecodeError if it is a DecodeErrorHandler, and is
// otherwise skipped with Session.Skip: one packet a handler cannot read
// does not end a player's session, as gophertunnel's packet.Unknown and
// dragonfly see to. An Adapter serves one session, as its Handler does.
type Adapter struct {
	// Handler receives the session's packets.
	Handler TypedHandler
	// Codec decodes them. Its ShieldID must be the one the server sent in
	// its ItemRegistry.
	Codec Codec
}

var _ session.Handler = (*Adapter)(nil)

// Adapt returns an Adapter that decodes packets with c for h.
func Adapt(h TypedHandler, c Codec) *Adapter {
	return &Adapter{Handler: h, Codec: c}
}

// HandlePacket lets p through raw, or decodes it and hands it on.
func (a *Adapter) HandlePacket(s *session.Session, p session.Packet) error {
	if raw, ok := a.Handler.(RawHandler); ok {
		if handled, err := raw.HandleRawPacket(s, p); handled || err != nil {
			return err
		}
	}
	pk, err := a.Codec.For(s).Decode(p)
	if err != nil {
		if h, ok := a.Handler.(DecodeErrorHandler); ok {
			return h.HandleDecodeError(s, p, err)
		}
		s.Skip(p, err)
		return nil
	}
	return a.Handler.HandlePacket(s, pk)
}

// HandleClose hands the end of the session on.
func (a *Adapter) HandleClose(s *session.Session, err error) {
	a.Handler.HandleClose(s, err)
}
