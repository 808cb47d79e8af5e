package raknet

import (
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
)

// AddressTokens issues and verifies stateless tokens that prove their
// holder receives datagrams at the address and port it claims, for the
// other protocols a listener's socket carries, such as Query's challenge
// tokens. They are the listener's handshake cookies (SipHash-2-4 of the
// address and port under a key derived per epoch from a 128-bit key; a
// token is good in the epoch it was issued in and the next), kept to 31
// bits so that clients reading the decimal as signed or unsigned agree: a
// forged one passes with probability 2^-30 per guess. Give it a key of its
// own, not the listener's cookie secret, so that a token is never a
// cookie. AddressTokens is safe for concurrent use; the zero value is not
// usable.
type AddressTokens struct {
	c *guard.Cookies
}

// addressTokenMask keeps a token's 31 low bits.
const addressTokenMask = 1<<31 - 1

// NewAddressTokens returns AddressTokens keyed with key, rotating every
// period (10 s if zero or negative).
func NewAddressTokens(key [16]byte, period time.Duration) *AddressTokens {
	return &AddressTokens{c: guard.NewCookies(key, period)}
}

// Issue returns the token for a peer at ap, good from now to the end of
// the next epoch. It is below 2^31 and allocates nothing.
func (t *AddressTokens) Issue(ap netip.AddrPort, now time.Time) uint32 {
	return t.c.Issue(ap, 0, now) & addressTokenMask
}

// Verify reports whether token is one Issue returned for ap during the
// epoch of now or the one before. It allocates nothing.
func (t *AddressTokens) Verify(ap netip.AddrPort, token uint32, now time.Time) bool {
	return t.c.VerifyMasked(ap, 0, token, addressTokenMask, now)
}
