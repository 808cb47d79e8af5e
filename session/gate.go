package session

import (
	"slices"
	"strings"
)

// PlayerPlaceholder is replaced by the player's display name in
// GateHandler's disconnect message.
const PlayerPlaceholder = "{player}"

// DefaultGateMessage is the disconnect message GateHandler shows unless
// configured otherwise. PlayerPlaceholder is replaced by the player's display
// name.
const DefaultGateMessage = "Hello " + PlayerPlaceholder + "! This Basalt server has no world yet."

// DefaultCompressionThreshold is the smallest batch GateHandler has both
// sides compress unless configured otherwise, in bytes.
const DefaultCompressionThreshold = 512

// GateHandler is the Handler a client meets by default: it negotiates network
// settings, reads who the player is from the Login packet and disconnects them
// with a message, before any encryption or world. A protocol it does not
// accept is refused with PlayStatus, as vanilla servers do. Its zero value
// accepts CurrentProtocol, compresses batches of 512 bytes or more and shows
// DefaultGateMessage. It holds no per-session state and is safe for
// concurrent use by many sessions.
type GateHandler struct {
	NopHandler

	// AcceptedProtocols lists the client protocols let through. Empty means
	// CurrentProtocol alone.
	AcceptedProtocols []int32
	// Message is the disconnect message; PlayerPlaceholder in it is
	// replaced by the display name. Empty means DefaultGateMessage.
	Message string
	// CompressionThreshold is announced in NetworkSettings: batches this
	// size or larger are compressed. Zero means DefaultCompressionThreshold.
	CompressionThreshold uint16
}

var _ Handler = GateHandler{}

// gatePacketHandler handles one packet type for GateHandler.
type gatePacketHandler func(g GateHandler, s *Session, payload []byte) error

// gatePacketHandlers maps packet ids to their handlers. A nil handler means
// the packet is deliberately ignored; packets missing from the map are
// ignored too, since a client may send more than the gate needs.
var gatePacketHandlers = map[uint32]gatePacketHandler{
	IDRequestNetworkSettings: handleRequestNetworkSettings,
	IDLogin:                  handleLogin,
	// Sent right after Login; the gate sends no chunks to cache.
	IDClientCacheStatus: nil,
	// The client reporting a packet of ours it could not read. Nothing the
	// gate sends after NetworkSettings is worth answering.
	IDPacketViolationWarning: nil,
}

// HandlePacket dispatches p to the packet's handler in gatePacketHandlers.
func (g GateHandler) HandlePacket(s *Session, p Packet) error {
	if h := gatePacketHandlers[p.ID]; h != nil {
		return h(g, s, p.Payload)
	}
	return nil
}

// accepts reports whether the client protocol is let through and, if not,
// the PlayStatus that refuses it: LoginFailed_ClientOld for a client older
// than the newest accepted protocol, LoginFailed_ServerOld for a newer one.
func (g GateHandler) accepts(protocol int32) (PlayStatus, bool) {
	accepted := g.AcceptedProtocols
	if len(accepted) == 0 {
		accepted = []int32{CurrentProtocol}
	}
	switch {
	case slices.Contains(accepted, protocol):
		return PlayStatusLoginSuccess, true
	case protocol < slices.Max(accepted):
		return PlayStatusLoginFailedClient, false
	default:
		return PlayStatusLoginFailedServer, false
	}
}

// threshold returns the compression threshold to announce.
func (g GateHandler) threshold() uint16 {
	if g.CompressionThreshold == 0 {
		return DefaultCompressionThreshold
	}
	return g.CompressionThreshold
}

// message returns the disconnect message for the player called name.
func (g GateHandler) message(name string) string {
	m := g.Message
	if m == "" {
		m = DefaultGateMessage
	}
	return strings.ReplaceAll(m, PlayerPlaceholder, name)
}
