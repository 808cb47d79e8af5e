package session

import (
	"errors"
	"fmt"
)

// handleLogin reads the player's identity from Login, records it on the
// session and disconnects the player with the gate's message. A login that
// cannot be read is refused with DisconnectReasonInvalidPlayer.
func handleLogin(g GateHandler, s *Session, payload []byte) error {
	if !s.CompressionEnabled() {
		return errors.New("login: before network settings")
	}
	id, err := ParseLogin(payload)
	if err != nil {
		_ = s.DisconnectWith(DisconnectReasonInvalidPlayer, "Invalid login.")
		return err
	}
	s.SetIdentity(id)
	s.Log().Info().Str("xuid", id.XUID).Int32("protocol", id.Protocol).Msg("player logged in; disconnecting")
	if err := s.Disconnect(g.message(id.DisplayName)); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	return nil
}
