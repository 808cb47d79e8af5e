package query

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/dchest/siphash"
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
// only ever sent there.
//
// A token is the SipHash-2-4 of the epoch (now.UnixNano() / period,
// floored), the client's 16-byte address (IPv4 unmapped first, so
// ::ffff:1.2.3.4 and 1.2.3.4 agree) and its port, keyed with a key derived
// from the secret; of the 64-bit hash it keeps 30 bits, then bit 0 carries
// the epoch's parity so Verify knows which of the two live epochs to
// check, and bit 31 is clear so that clients that parse the decimal as
// signed and as unsigned agree. A forged token passes with probability
// 2^-30 per guess, each guess costing a datagram that the listener's rate
// limits count. This is the construction of the RakNet cookies
// (raknet/internal/guard), with the epoch in the hashed input rather than
// in a derived key, which costs one hash instead of a memo.
//
// Tokens is safe for concurrent use; it is immutable after NewTokens. The
// zero value is not usable.
type Tokens struct {
	k0, k1 uint64
	period int64
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
	return &Tokens{
		k0:     binary.LittleEndian.Uint64(key[:8]),
		k1:     binary.LittleEndian.Uint64(key[8:]),
		period: int64(period),
	}
}

// Issue returns the token for a client at ap, valid from now until the end
// of the next epoch. It is below 2^31 and allocates nothing.
func (t *Tokens) Issue(ap netip.AddrPort, now time.Time) uint32 {
	return t.token(t.epoch(now), ap)
}

// Verify reports whether token is one Issue returned for ap during the
// epoch of now or the one before. It allocates nothing.
func (t *Tokens) Verify(ap netip.AddrPort, token uint32, now time.Time) bool {
	e := t.epoch(now)
	if uint64(token&1) != e&1 {
		e-- // issued during the previous epoch, or forged
	}
	return t.token(e, ap) == token
}

// epoch returns the number of whole periods between the Unix epoch and
// now, rounded towards minus infinity.
func (t *Tokens) epoch(now time.Time) uint64 {
	n := now.UnixNano()
	e := n / t.period
	if n%t.period < 0 {
		e--
	}
	return uint64(e)
}

// token computes the token of epoch e for ap.
func (t *Tokens) token(e uint64, ap netip.AddrPort) uint32 {
	var in [8 + 16 + 2]byte
	binary.LittleEndian.PutUint64(in[:8], e)
	*(*[16]byte)(in[8:24]) = ap.Addr().Unmap().As16()
	binary.BigEndian.PutUint16(in[24:], ap.Port())
	h := siphash.Hash(t.k0, t.k1, in[:])
	return uint32(h)&0x7ffffffe | uint32(e&1)
}
