package raknet

import (
	"crypto/sha256"
	"errors"
)

// MinCookieSecret is the shortest ListenConfig.CookieSecret accepted: 128
// bits, the size of the key it is reduced to.
const MinCookieSecret = 16

// cookieLabel separates the cookie key from other keys derived from the
// same secret (a server's query tokens, say).
const cookieLabel = "basalt raknet cookie v1\x00"

var errShortCookieSecret = errors.New("cookie secret shorter than 16 bytes")

// cookieKey derives the 128-bit cookie master key from a configured
// secret: the first half of SHA-256 over a label and the secret.
func cookieKey(secret []byte) [16]byte {
	h := sha256.New()
	h.Write([]byte(cookieLabel))
	h.Write(secret)
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k
}
