package join

import (
	"errors"
	"sync/atomic"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// entityIDs is the last entity ID NewEntityID handed out.
var entityIDs atomic.Int64

// NewEntityID returns an entity ID that no other call in this process
// returned, never 0: the ID of a player's entity when its GameData names
// none. It is safe for concurrent use.
func NewEntityID() int64 { return entityIDs.Add(1) }

// Handler is the handler of a player joining a world through Adapt or a
// World: a packets.TypedHandler that is told when the player is in the
// world, and gets the player's packets from then on.
type Handler interface {
	packets.TypedHandler
	// HandleSpawn is called once, on the session's goroutine, when the
	// client has said it is in the world (SetLocalPlayerAsInitialised
	// with its entity ID): the time to greet the player and tell the
	// others. An error ends the session.
	HandleSpawn(s *session.Session) error
}

// World spawns each logged-in player into one world and then hands its
// packets to a Handler of its own. Its NewHandler is a
// session.Config.NewHandler. A World is safe for concurrent use once
// made; its fields must not change after.
type World struct {
	// GameData describes the world. Each player gets an entity ID of its
	// own (NewEntityID) unless GameData.EntityID is set, which is then
	// every player's.
	GameData GameData
	// Codec encodes what the join writes and decodes what the client
	// sends; its ShieldID must match GameData.Items.
	Codec packets.Codec
	// NewPlayer makes the handler of a logged-in player, once its join has
	// started: s.Identity() says who it is, j.EntityID() its entity, and
	// j.Write writes packets for its protocol. An error ends the session
	// (a *session.DisconnectError, Kick, is shown first). It is called on
	// the session's goroutine.
	NewPlayer func(s *session.Session, j *Join) (Handler, error)
}

// NewHandler starts the join of the logged-in player of s and returns the
// session's handler, as Adapt makes it from the Handler NewPlayer returns.
func (w *World) NewHandler(s *session.Session) (session.Handler, error) {
	if w.NewPlayer == nil {
		return nil, errors.New("join: World.NewPlayer is nil")
	}
	j, err := Start(s, w.Codec, w.GameData)
	if err != nil {
		return nil, err
	}
	h, err := w.NewPlayer(s, j)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("join: World.NewPlayer returned no handler and no error")
	}
	return Adapt(j, h), nil
}

// Adapt returns the session handler of a player whose join j is and whose
// handler h is: it decodes the packets the client sends for its protocol
// with j's Codec (packets.Adapt) and drives the join with them, calls
// h.HandleSpawn once the player is in the world, and hands h every packet
// from then on (RequestChunkRadius, which the join still answers,
// included). Packets the client sends before that, other than the join's,
// are dropped undecoded. If h is a packets.RawHandler it sees them raw
// first, once spawned; the join's are decoded whatever it says. A packet
// that does not decode goes to h if it is a packets.DecodeErrorHandler,
// and is otherwise skipped (session.Session.Skip).
func Adapt(j *Join, h Handler) session.Handler {
	return packets.Adapt(&player{j: j, h: h}, j.codec)
}

// player is the typed handler Adapt makes.
type player struct {
	j *Join
	h Handler
}

var (
	_ packets.TypedHandler       = (*player)(nil)
	_ packets.RawHandler         = (*player)(nil)
	_ packets.DecodeErrorHandler = (*player)(nil)
)

// HandleRawPacket lets the join's packets through to be decoded, drops the
// others until the player has spawned, and then asks h if it is a
// RawHandler.
func (p *player) HandleRawPacket(s *session.Session, pk session.Packet) (bool, error) {
	if Wants(pk.ID) {
		return false, nil
	}
	if !p.j.Spawned() {
		return true, nil
	}
	if raw, ok := p.h.(packets.RawHandler); ok {
		return raw.HandleRawPacket(s, pk)
	}
	return false, nil
}

// HandlePacket drives the join, and hands the packet to h once the player
// has spawned.
func (p *player) HandlePacket(s *session.Session, pk packet.Packet) error {
	spawned, err := p.j.HandlePacket(pk)
	switch {
	case err != nil:
		return err
	case spawned:
		return p.h.HandleSpawn(s)
	case !p.j.Spawned():
		return nil
	}
	return p.h.HandlePacket(s, pk)
}

// HandleDecodeError hands a packet that does not decode to h, or skips it.
func (p *player) HandleDecodeError(s *session.Session, pk session.Packet, err error) error {
	if d, ok := p.h.(packets.DecodeErrorHandler); ok {
		return d.HandleDecodeError(s, pk, err)
	}
	s.Skip(pk, err)
	return nil
}

// HandleClose hands the end of the session to h.
func (p *player) HandleClose(s *session.Session, err error) { p.h.HandleClose(s, err) }
