package session

import "errors"

// handleClientToServerHandshake completes an encrypted login: the client
// could decrypt the session's batches and sent this one encrypted. Its
// payload is empty.
func handleClientToServerHandshake(s *Session, _ []byte) error {
	if s.phase != phaseHandshake {
		return errors.New("client to server handshake: unexpected")
	}
	if !s.batchEncrypted {
		// Sent with the Login, before the client could have derived the
		// key.
		return errors.New("client to server handshake: not encrypted")
	}
	return s.completeLogin()
}
