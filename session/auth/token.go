package auth

import "context"

// VerifyToken checks a multiplayer token alone (issuer, audience, expiry,
// signature, and that it names a player and a P-384 key), as a Login's
// token is checked, and returns who it names. NetherNet uses it on an
// offer's identity, before any connection state is made for it. The
// error wraps ErrUnavailable while the keys are not there yet, and
// otherwise ErrNotSignedIn. It is safe for concurrent use.
func (v *Verifier) VerifyToken(ctx context.Context, raw string) (Result, error) {
	return v.verifyToken(ctx, raw)
}
