package query

import (
	"crypto/rand"
	"crypto/sha256"
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet"
)

// DefaultTokenPeriod is how often the token key rotates when NewTokens is
// given no period. A token is accepted during the epoch it was issued in
// and the next, so it lives 30 to 60 s: PocketMine regenerates its token
// every 30 s and accepts the current and the last one, and the vanilla
// Java server drops challenges after 30 s.
const DefaultTokenPeriod = 30 * time.Second

// tokenLabel separates the token key from every other key derived from the
// same secret (the RakNet cookie key among them).
const tokenLabel = "basalt query token v1\x00"

// Tokens issues and verifies challenge tokens without keeping any state:
// a token is a MAC of the client's address, port and the current epoch,
// so the server remembers nothing per client and a flood of handshakes
// costs it no memory. A valid token in a stat request proves that its
// sender receives datagrams at the address it claims, since the token was
// only ever sent there. The construction is raknet.AddressTokens (the
// RakNet handshake cookies kept to 31 bits, so clients that parse the
// decimal as signed and as unsigned agree), keyed with a key derived from
// the secret for tokens alone.
//
// Tokens is safe for concurrent use; it is immutable after NewTokens. The
// zero value is not usable.
type Tokens struct {
	t *raknet.AddressTokens
}

// NewTokens returns Tokens keyed from secret, rotating every period
// (DefaultTokenPeriod if zero or negative). The key is the first 128 bits of
// SHA-256 over a label and the secret, so the same secret can key other
// things (the RakNet cookies) without the keys being related. A nil or
// empty secret means a random key for this Tokens alone. The secret should
// have at least 128 bits of entropy and stay private: whoever knows it can
// mint tokens for any address.
func NewTokens(secret []byte, period time.Duration) *Tokens {
	if period <= 0 {
		period = DefaultTokenPeriod
	}
	var key [16]byte
	if len(secret) == 0 {
		_, _ = rand.Read(key[:]) // crypto/rand.Read never fails; it crashes instead
	} else {
		h := sha256.New()
		h.Write([]byte(tokenLabel))
		h.Write(secret)
		copy(key[:], h.Sum(nil))
	}
	return &Tokens{t: raknet.NewAddressTokens(key, period)}
}

// Issue returns the token for a client at ap, valid from now until the end
// of the next epoch. It is below 2^31 and allocates nothing.
func (t *Tokens) Issue(ap netip.AddrPort, now time.Time) uint32 { return t.t.Issue(ap, now) }

// Verify reports whether token is one Issue returned for ap during the
// epoch of now or the one before. It allocates nothing.
func (t *Tokens) Verify(ap netip.AddrPort, token uint32, now time.Time) bool {
	return t.t.Verify(ap, token, now)
}
