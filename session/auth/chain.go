package auth

import (
	"crypto/ecdsa"
	"fmt"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

// chainIssuer is the issuer of the JWTs Mojang signs in a legacy chain.
const chainIssuer = "Mojang"

// chainClaims are the claims of a legacy chain JWT: the registered ones
// and the identity the session reads.
type chainClaims struct {
	jwt.Claims
	session.ChainClaims
}

// verifyChain checks a legacy certificate chain: exactly three ES384 JWTs,
// the first signed by the key its x5u header names and certifying (its
// identityPublicKey) one of roots; the second signed by that root,
// certifying the third's key; the third signed by it, holding extraData
// and the client's key. Every JWT must be in date; the second and third
// must be issued by "Mojang" and carry an expiry. A self-signed chain (one
// JWT) proves nothing.
func verifyChain(chain []string, roots []*ecdsa.PublicKey, now time.Time) (Result, error) {
	if len(chain) != 3 {
		return Result{}, fmt.Errorf("%w: a chain of %d JWTs and no token", ErrNotSignedIn, len(chain))
	}
	tok, err := jwt.ParseSigned(chain[0], []jose.SignatureAlgorithm{jose.ES384})
	if err != nil {
		return Result{}, fmt.Errorf("%w: chain[0]: %w", ErrNotSignedIn, err)
	}
	x5u, _ := tok.Headers[0].ExtraHeaders["x5u"].(string)
	key, err := ParsePublicKey(x5u)
	if err != nil {
		return Result{}, fmt.Errorf("%w: chain[0] x5u: %w", ErrNotSignedIn, err)
	}
	var claims [3]chainClaims
	for i, raw := range chain {
		if i > 0 {
			if tok, err = jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES384}); err != nil {
				return Result{}, fmt.Errorf("%w: chain[%d]: %w", ErrNotSignedIn, i, err)
			}
		}
		c := &claims[i]
		if err := tok.Claims(key, c); err != nil {
			return Result{}, fmt.Errorf("%w: chain[%d]: %w", ErrNotSignedIn, i, err)
		}
		want := jwt.Expected{Time: now}
		if i > 0 {
			want.Issuer = chainIssuer
			if c.Expiry == nil {
				return Result{}, fmt.Errorf("%w: chain[%d] has no expiry", ErrNotSignedIn, i)
			}
		}
		if err := c.ValidateWithLeeway(want, chainLeeway); err != nil {
			return Result{}, fmt.Errorf("%w: chain[%d]: %w", ErrNotSignedIn, i, err)
		}
		if key, err = ParsePublicKey(c.IdentityPublicKey); err != nil {
			return Result{}, fmt.Errorf("%w: chain[%d] identityPublicKey: %w", ErrNotSignedIn, i, err)
		}
		if i == 0 && !trusted(key, roots) {
			return Result{}, fmt.Errorf("%w: chain not signed by a trusted root", ErrNotSignedIn)
		}
	}
	x := claims[2].ExtraData
	if x.XUID == "" || x.DisplayName == "" {
		return Result{}, fmt.Errorf("%w: chain names no XUID or name", ErrNotSignedIn)
	}
	r := Result{DisplayName: x.DisplayName, XUID: x.XUID, PublicKey: key, UUID: session.UUIDFromXUID(x.XUID), Legacy: true}
	if x.Identity != "" {
		if r.UUID, err = uuid.Parse(x.Identity); err != nil {
			return Result{}, fmt.Errorf("%w: chain identity: %w", ErrNotSignedIn, err)
		}
	}
	return r, nil
}

// trusted reports whether key is one of roots.
func trusted(key *ecdsa.PublicKey, roots []*ecdsa.PublicKey) bool {
	for _, r := range roots {
		if r != nil && key.Equal(r) {
			return true
		}
	}
	return false
}
