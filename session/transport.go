package session

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
)

// notAuthenticatedMessage is the Disconnect message of a player whose Login
// is not bound to the key its transport proved.
const notAuthenticatedMessage = "Not authenticated."

// ErrNotAuthenticated is wrapped by the error Run returns when the Login's
// identity public key is not the key the transport proved the client holds
// (Transport.PublicKey): a replayed or forged Login.
var ErrNotAuthenticated = errors.New("not authenticated")

// Transport says what a Conn's transport does itself, so the session does
// not do it again. The zero value is RakNet's: batches start with 0xfe,
// Bedrock encryption runs when Config.Encryption asks for it, and nothing
// about the client is proven.
type Transport struct {
	// Name names the transport in logs and metrics, "raknet" or
	// "nethernet"; empty means "raknet".
	Name string
	// Framed reports that the transport delimits messages itself, so a
	// batch carries no 0xfe header either way (NetherNet, as gophertunnel's
	// BatchHeader() == nil says).
	Framed bool
	// Secure reports that the transport encrypts and authenticates what it
	// carries (DTLS), so the session runs no Bedrock encryption handshake
	// even with Config.Encryption (gophertunnel's DisableEncryption).
	Secure bool
	// PublicKey is the key the client proved, during the transport's own
	// handshake, that it holds; nil if it proved none. When set, the
	// Login's identity public key must be this key, or the player is
	// refused with DisconnectReasonNotAuthenticated: a Login captured from
	// one connection cannot be replayed over another, which Bedrock
	// encryption would otherwise have prevented.
	PublicKey *ecdsa.PublicKey
}

// TransportConn is a Conn that says what its transport does. A Conn
// without the method is taken for RakNet (the zero Transport).
type TransportConn interface {
	Conn
	Transport() Transport
}

// transportOf returns what conn's transport does.
func transportOf(conn Conn) Transport {
	var t Transport
	if tc, ok := conn.(TransportConn); ok {
		t = tc.Transport()
	}
	if t.Name == "" {
		t.Name = "raknet"
	}
	return t
}

// Transport returns what the session's transport does itself, with its
// name ("raknet" unless the Conn says otherwise).
func (s *Session) Transport() Transport {
	return s.transport
}

// checkBinding refuses a Login whose identity public key (base64 PKIX, as
// the Login carries it) is not the key the transport proved. It passes
// when the transport proved no key.
func (s *Session) checkBinding(identityKey string) error {
	proven := s.transport.PublicKey
	if proven == nil {
		return nil
	}
	err := keyMatches(identityKey, proven)
	if err == nil {
		return nil
	}
	if e := s.Log().Debug(); e.Enabled() {
		e.Err(err).Str("transport", s.transport.Name).Msg("login not bound to the transport's key")
	}
	return fmt.Errorf("login: %w: %w: %w", ErrNotAuthenticated, err,
		&DisconnectError{Reason: DisconnectReasonNotAuthenticated, Message: notAuthenticatedMessage})
}

// keyMatches reports, as a nil error, that the base64 PKIX key b64 is the
// P-384 key want.
func keyMatches(b64 string, want *ecdsa.PublicKey) error {
	if b64 == "" {
		return errors.New("login carries no identity public key")
	}
	k, err := ParsePublicKey(b64)
	if err != nil {
		return err
	}
	if !k.Equal(want) {
		return errors.New("identity public key differs from the transport's")
	}
	return nil
}
