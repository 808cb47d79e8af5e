package guard

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/dchest/siphash"
)

// DefaultCookiePeriod is how long one cookie key lives when NewCookies is
// given no period. A cookie is accepted during the epoch it was issued in and
// the next one, so it stays valid for at least one period and at most two.
//
// go-raknet rotates every 2 s, which leaves a client between 2 and 4 s from
// OpenConnectionReply1 to the server's check of OpenConnectionRequest2. A
// phone on a congested cellular link can spend that on one lost Request2 and
// its retry (clients wait about a second between attempts), and a client that
// probes the MTU sends Request2 only after its last Reply1. Ten seconds covers
// the whole of a client's handshake attempt. A longer life costs nothing
// real: a cookie proves only that its holder receives datagrams sent to that
// address and port, and whoever can read those can fetch a fresh cookie at
// any time.
const DefaultCookiePeriod = 10 * time.Second

// cookieInputSize is the bytes hashed into a cookie: the 16-byte address,
// the u16 port and the RakNet protocol byte of OpenConnectionRequest1.
const cookieInputSize = 16 + 2 + 1

// Cookies issues and verifies the stateless handshake cookies a listener
// sends in OpenConnectionReply1 (bool security = 1, then u32 cookie) and
// expects back in OpenConnectionRequest2 (u32 cookie, bool client security,
// before the server address). A valid cookie is proof that the sender
// receives datagrams at the address it claims, so a listener can hold back
// every per-address state, slot and log line until it sees one.
//
// A cookie is the low 31 bits of SipHash-2-4 over the client's address (its
// 16-byte form, IPv4 unmapped first so ::ffff:1.2.3.4 and 1.2.3.4 agree),
// port and protocol byte, keyed with the epoch's key; bit 0 carries the
// parity of the epoch it was issued in. SipHash is a keyed PRF built for
// short inputs: 20 to 30 ns for these 19 bytes with no allocation, where
// HMAC-SHA256 costs about a microsecond and five allocations for its state
// (BenchmarkCookieIssue has the whole Issue). The
// parity bit tells Verify which of the two live epochs to check, so a forged
// cookie passes with probability 2^-31 per guess, the same as checking a
// 32-bit value against two keys, for one hash instead of two.
//
// The key of epoch e (now.UnixNano() / period, floored) is derived from the
// 128-bit secret as SipHash(secret, e‖0) ‖ SipHash(secret, e‖1): rotation
// needs no timer and no lock, and listeners that share the secret and a
// roughly synchronised clock accept each other's cookies. The current
// epoch's key is memoised in a small seqlock so the common case hashes once.
//
// A Cookies is safe for concurrent use. The zero value is not usable; call
// NewCookies.
type Cookies struct {
	m0, m1 uint64 // master secret
	period int64  // nanoseconds per epoch

	// memo holds the key of a recent epoch in each parity slot. A reader
	// that finds its slot being written, or holding another epoch, derives
	// the key itself: the memo only saves work, it never decides.
	memo [2]epochMemo
}

// epochMemo is a seqlock over one epoch key: seq is odd while a writer
// fills the fields and grows by two for every completed write.
type epochMemo struct {
	seq    atomic.Uint64
	epoch  atomic.Uint64
	k0, k1 atomic.Uint64
	_      [32]byte // keep the two slots on separate cache lines
}

// NewCookies returns a Cookies keyed with secret, rotating keys every period
// (DefaultCookiePeriod if period is zero or negative). The secret must come
// from a cryptographic source such as crypto/rand and stay private: whoever
// knows it can mint cookies for any address.
func NewCookies(secret [16]byte, period time.Duration) *Cookies {
	if period <= 0 {
		period = DefaultCookiePeriod
	}
	return &Cookies{
		m0:     binary.LittleEndian.Uint64(secret[:8]),
		m1:     binary.LittleEndian.Uint64(secret[8:]),
		period: int64(period),
	}
}

// Issue returns the cookie for a client at ap speaking RakNet protocol
// proto, valid from now until the end of the next epoch.
func (c *Cookies) Issue(ap netip.AddrPort, proto byte, now time.Time) uint32 {
	e := c.epoch(now)
	return c.cookie(e, ap, proto)
}

// Verify reports whether cookie is one that Issue returned for ap and proto
// during the epoch of now or the one before it. OpenConnectionRequest2 does
// not repeat the protocol, so the listener passes the protocol it accepted
// Request1 with (it answers any other with IncompatibleProtocolVersion and
// issues no cookie for it).
func (c *Cookies) Verify(ap netip.AddrPort, proto byte, cookie uint32, now time.Time) bool {
	return c.VerifyMasked(ap, proto, cookie, ^uint32(0), now)
}

// VerifyMasked is Verify for cookies sent with only the bits of mask,
// which must keep bit 0 (the epoch's parity): a cookie with a bit
// outside mask is refused. Fewer bits make a forgery likelier: 2^-(n-1)
// per guess for n bits kept.
func (c *Cookies) VerifyMasked(ap netip.AddrPort, proto byte, cookie, mask uint32, now time.Time) bool {
	if cookie&^mask != 0 {
		return false
	}
	e := c.epoch(now)
	if uint64(cookie&1) != e&1 {
		e-- // issued during the previous epoch, or forged
	}
	return c.cookie(e, ap, proto)&mask == cookie
}

// epoch returns the number of whole periods between the Unix epoch and now,
// rounded towards minus infinity so the epochs before 1970 are as long as
// the others.
func (c *Cookies) epoch(now time.Time) uint64 {
	t := now.UnixNano()
	e := t / c.period
	if t%c.period < 0 {
		e--
	}
	return uint64(e)
}

// cookie computes the cookie of epoch e.
func (c *Cookies) cookie(e uint64, ap netip.AddrPort, proto byte) uint32 {
	k0, k1 := c.key(e)
	var in [cookieInputSize]byte
	*(*[16]byte)(in[:16]) = ap.Addr().Unmap().As16()
	binary.BigEndian.PutUint16(in[16:], ap.Port())
	in[18] = proto
	h := siphash.Hash(k0, k1, in[:])
	return uint32(h)&^1 | uint32(e&1)
}

// key returns the key of epoch e, from the memo when it holds it.
func (c *Cookies) key(e uint64) (k0, k1 uint64) {
	m := &c.memo[e&1]
	s := m.seq.Load()
	if s&1 == 0 && m.epoch.Load() == e {
		k0, k1 = m.k0.Load(), m.k1.Load()
		if m.seq.Load() == s {
			return k0, k1
		}
	}
	k0, k1 = c.derive(e)
	if s&1 == 0 && m.seq.CompareAndSwap(s, s+1) {
		m.epoch.Store(e)
		m.k0.Store(k0)
		m.k1.Store(k1)
		m.seq.Store(s + 2)
	}
	return k0, k1
}

// derive computes the key of epoch e from the master secret.
func (c *Cookies) derive(e uint64) (k0, k1 uint64) {
	var in [9]byte
	binary.LittleEndian.PutUint64(in[:8], e)
	k0 = siphash.Hash(c.m0, c.m1, in[:])
	in[8] = 1
	k1 = siphash.Hash(c.m0, c.m1, in[:])
	return k0, k1
}
