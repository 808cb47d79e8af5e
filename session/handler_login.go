package session

import (
	"crypto/rand"
	"errors"
	"fmt"
)

// handleLogin reads the player's identity from Login, checks its protocol
// again and, with Config.VerifyLogin, has it verified. Without encryption that completes the login; with it, the
// session sends ServerToClientHandshake and waits for the client's answer.
// A login that cannot be read, or whose key the handshake cannot use, is
// refused with DisconnectReasonInvalidPlayer.
func handleLogin(s *Session, payload []byte) error {
	switch s.phase {
	case phaseNetworkSettings:
		return errors.New("login: before network settings")
	case phaseHandshake:
		return errors.New("login: sent twice")
	}
	id, req, err := parseLogin(payload)
	if err != nil {
		return invalidLogin(err)
	}
	if err := s.checkProtocol(id.Protocol); err != nil {
		return err
	}
	if id.Protocol != s.Protocol() {
		return invalidLogin(fmt.Errorf("login: protocol %d, but network settings asked for %d", id.Protocol, s.Protocol()))
	}
	if s.verify != nil {
		if id, err = s.verifyLogin(id, req); err != nil {
			return err
		}
	}
	if err := s.checkBinding(id.IdentityPublicKey); err != nil {
		return err
	}
	s.setIdentity(id)
	if !s.encryption {
		return s.completeLogin()
	}
	return s.startEncryption(id.IdentityPublicKey)
}

// invalidLogin returns err as the end of a session whose login is refused:
// the client is told "Invalid login." with DisconnectReasonInvalidPlayer.
func invalidLogin(err error) error {
	return fmt.Errorf("%w: %w", err, &DisconnectError{Reason: DisconnectReasonInvalidPlayer, Message: invalidLoginMessage})
}

// startEncryption sends ServerToClientHandshake and switches both directions
// to encryption: outgoing batches once the handshake has left, incoming ones
// from the next batch read.
func (s *Session) startEncryption(clientKey string) error {
	pub, err := parseClientKey(clientKey)
	if err != nil {
		return invalidLogin(fmt.Errorf("login: %w", err))
	}
	key := s.serverKey
	if key == nil {
		key = processKey()
	}
	var salt [saltSize]byte
	_, _ = rand.Read(salt[:]) // crypto/rand.Read never fails; it crashes instead
	shared, err := sharedKey(key, pub, salt[:])
	if err != nil {
		return invalidLogin(fmt.Errorf("login: %w", err))
	}
	jwt, err := handshakeJWT(key, salt[:], rand.Reader)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	hs := serverToClientHandshake{JWT: []byte(jwt)}
	if err := s.WritePacket(IDServerToClientHandshake, hs.Append(nil)); err != nil {
		return fmt.Errorf("server to client handshake: %w", err)
	}
	if err := s.enableEncryption(shared); err != nil {
		return fmt.Errorf("server to client handshake: %w", err)
	}
	s.dec.crypt = newCrypt(shared)
	s.phase = phaseHandshake
	return nil
}
