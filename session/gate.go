package session

import "strings"

// PlayerPlaceholder is replaced by the player's display name in the message
// Gate shows.
const PlayerPlaceholder = "{player}"

// DefaultGateMessage is the disconnect message of the handler a session runs
// when Config.NewHandler is nil. PlayerPlaceholder is replaced by the
// player's display name.
const DefaultGateMessage = "Basalt is a skeleton server: you, " + PlayerPlaceholder +
	", have reached it, but there is no world here yet."

// Gate returns the NewHandler of the built-in gate, the handler a client
// meets by default: it disconnects every player as soon as it has logged
// in, with message (DisconnectReasonKicked), PlayerPlaceholder in it
// replaced by the display name. An empty message means DefaultGateMessage.
// The session has by then negotiated network settings, checked the
// protocol, read the Login and, with Config.Encryption, run the
// handshake, so the gate shows a working login path end to end. Run returns
// nil for a player the gate disconnected. The function is safe for
// concurrent use.
func Gate(message string) func(*Session) (Handler, error) {
	if message == "" {
		message = DefaultGateMessage
	}
	return func(s *Session) (Handler, error) {
		id, _ := s.Identity()
		if e := s.Log().Info(); e.Enabled() {
			e.Str("xuid", id.XUID).Int32("protocol", id.Protocol).Msg("player logged in; disconnecting")
		}
		if err := s.Disconnect(strings.ReplaceAll(message, PlayerPlaceholder, id.DisplayName)); err != nil {
			return nil, err
		}
		return NopHandler{}, nil
	}
}
