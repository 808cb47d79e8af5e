package guard

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
	"time"

	"github.com/dchest/siphash"
)

const (
	// DefaultPrefixRate is the replies per second a PrefixLimiter allows
	// each prefix by default. One IPv4 /24 may be a carrier-grade NAT pool
	// or a campus with many players: each joining client sends a handful
	// of OpenConnectionRequest1 probes (MTU steps, each retried) and every
	// open server list pings about once a second.
	DefaultPrefixRate = 64

	// DefaultPrefixBurst is the replies a quiet prefix may get at once,
	// two seconds' worth, enough for a LAN of clients opening their server
	// lists together.
	DefaultPrefixBurst = 128

	// DefaultPrefixSlots is the number of prefixes a PrefixLimiter tracks
	// by default: 16384 ways, 512 KiB. More distinct prefixes than this
	// flooding at once fill their sets (see PrefixLimiter).
	DefaultPrefixSlots = 16384

	// DefaultPrefixHold is how long a prefix keeps its slot after its
	// bucket has refilled. It must exceed the gap between the pings of a
	// client that watches a server (LAN discovery, an open server list
	// pings every second or two) so a flood cannot push such a client out
	// between two of its pings.
	DefaultPrefixHold = 5 * time.Second

	// DefaultIPv4PrefixBits is the IPv4 prefix length a PrefixLimiter
	// groups by: a /24 is the smallest block routed between networks, so
	// one source rarely owns more and usually owns less.
	DefaultIPv4PrefixBits = 24

	// DefaultIPv6PrefixBits is the IPv6 prefix length a PrefixLimiter
	// groups by: a /64 is one subnet, the least a host is given. Sites
	// get a /48 or a /56, so one attacker can hold 65536 /64s; set
	// IPv6Bits to 48 to group those.
	DefaultIPv6PrefixBits = 64
)

// prefixWays is the associativity of a PrefixLimiter's table: a prefix may
// live in any of the four ways of the set its hash picks.
const prefixWays = 4

// PrefixConfig configures a PrefixLimiter. Zero fields take the defaults.
type PrefixConfig struct {
	// Rate is the tokens per second each prefix earns; DefaultPrefixRate
	// if zero.
	Rate int64
	// Burst is the tokens a prefix can hold; DefaultPrefixBurst if zero.
	Burst int64
	// Slots is the number of prefixes tracked at once, rounded up to a
	// power of two no smaller than 4; DefaultPrefixSlots if zero.
	Slots int
	// Hold is how long a slot stays with a prefix whose bucket is full
	// again; DefaultPrefixHold if zero.
	Hold time.Duration
	// IPv4Bits and IPv6Bits are the prefix lengths sources are grouped
	// by: 8 to 32 and 8 to 64. Zero means DefaultIPv4PrefixBits and
	// DefaultIPv6PrefixBits.
	IPv4Bits, IPv6Bits int
	// Key keys the hash that picks a prefix's set. The zero key means a
	// random one, which is what a listener wants: a known key would let
	// an attacker choose prefixes that land in a victim's set.
	Key [16]byte
}

// PrefixLimiter rate-limits offline replies per source prefix (an IPv4 /24
// or an IPv6 /64 by default) with a token bucket each, so one network
// cannot have the listener reflect a flood at another and one network's
// flood does not use up the replies meant for the rest.
//
// Its table is fixed when it is made: Slots ways in sets of four, indexed
// by SipHash-2-4 of the prefix under a secret key, so an attacker cannot
// aim prefixes at the set of a victim. No prefix causes an allocation and
// nothing grows. A way holds one prefix and that prefix's bucket.
//
// A prefix not in its set takes a way over, and with it the bucket as it
// stands. The way taken is:
//
//  1. the way idle longest, if its bucket has been full for Hold: its
//     prefix has gone quiet, and a full bucket is the state a new prefix
//     would start in anyway;
//  2. otherwise the emptiest way, the one whose prefix has lately used
//     the most of its bucket. The newcomer inherits that bucket, debt
//     and all.
//
// A newcomer whose request is refused takes no way. Because a bucket never
// changes hands refilled, moving prefixes between ways creates no tokens:
// each way admits at most Burst + Rate·t over any time t, the whole table
// Slots times that, and one prefix, which only ever lives in the four ways
// of its set, at most four times its own share. Churn cannot buy an
// attacker fresh buckets. There is no shared overflow bucket for prefixes
// without a way: a flood in one set would drain it for the newcomers of
// every other set.
//
// Why a flood cannot starve a light client that holds its way, say a LAN
// scanner pinging from one address a few times a second: rule 1 never
// takes its way while it pings at least once per Hold, and rule 2 takes
// the emptiest way, which in a set with a flooder in it is a flooder's:
// flooders keep their buckets in debt, the light client keeps its own near
// full. Only the first flooder to reach a set of light clients displaces
// one of them (the one that used its bucket last); from then on newcomers
// land on the flooder's way. What fixed memory cannot do is tell a prefix
// it has not seen from a flooder: a prefix that arrives, or returns after
// losing its way, while a flooder holds the emptiest way of its set
// inherits that flooder's debt and is refused until the flood in its set
// ends. With the default 4096 sets that takes thousands of concurrent
// flooding prefixes, and the global ByteLimiter bounds what they get.
//
// A PrefixLimiter is safe for concurrent use: each set has its own mutex,
// held for a few comparisons. The zero value is not usable; call
// NewPrefixLimiter.
type PrefixLimiter struct {
	r         rate
	hold      int64 // nanoseconds
	mask      uint64
	k0, k1    uint64
	v4Mask    uint32
	v6Mask    uint64
	sets      []prefixSet
	v4Prefix  int
	v6Prefix  int
	slotCount int
}

// prefixSet is one set of the table. Sets are padded to 128 bytes, two
// cache lines, so readers working on neighbouring sets do not contend.
type prefixSet struct {
	mu   sync.Mutex
	ways [prefixWays]prefixWay
	_    [128 - 8 - prefixWays*24]byte
}

// noPrefix is the lo of a way that has never held a prefix: IPv6 keys
// have lo zero and IPv4 keys have the ::ffff: bits set, so none equals it.
const noPrefix = 1

// prefixWay is a prefix (the two halves of its masked 16-byte address) and
// the tat of its bucket (see rate).
type prefixWay struct {
	hi, lo uint64
	tat    int64
}

// NewPrefixLimiter returns a PrefixLimiter configured by cfg. It panics on
// a rate or burst NewBucket refuses, a negative Slots or Hold, or prefix
// lengths out of range.
func NewPrefixLimiter(cfg PrefixConfig) *PrefixLimiter {
	cfg.Rate = cmp.Or(cfg.Rate, DefaultPrefixRate)
	cfg.Burst = cmp.Or(cfg.Burst, DefaultPrefixBurst)
	cfg.Slots = cmp.Or(cfg.Slots, DefaultPrefixSlots)
	cfg.Hold = cmp.Or(cfg.Hold, DefaultPrefixHold)
	cfg.IPv4Bits = cmp.Or(cfg.IPv4Bits, DefaultIPv4PrefixBits)
	cfg.IPv6Bits = cmp.Or(cfg.IPv6Bits, DefaultIPv6PrefixBits)
	switch {
	case cfg.Slots < 0 || cfg.Slots > 1<<30:
		panic(fmt.Sprintf("guard: prefix slots %d outside [1, 2^30]", cfg.Slots))
	case cfg.Hold < 0:
		panic(fmt.Sprintf("guard: negative prefix hold %v", cfg.Hold))
	case cfg.IPv4Bits < 8 || cfg.IPv4Bits > 32:
		panic(fmt.Sprintf("guard: IPv4 prefix length %d outside [8, 32]", cfg.IPv4Bits))
	case cfg.IPv6Bits < 8 || cfg.IPv6Bits > 64:
		panic(fmt.Sprintf("guard: IPv6 prefix length %d outside [8, 64]", cfg.IPv6Bits))
	}
	if cfg.Key == ([16]byte{}) {
		_, _ = rand.Read(cfg.Key[:]) // never fails: crypto/rand aborts the program instead
	}
	sets := max(1, 1<<bits.Len(uint(cfg.Slots-1))/prefixWays)
	l := &PrefixLimiter{
		r:         newRate(cfg.Rate, cfg.Burst),
		hold:      int64(cfg.Hold),
		mask:      uint64(sets - 1),
		k0:        binary.LittleEndian.Uint64(cfg.Key[:8]),
		k1:        binary.LittleEndian.Uint64(cfg.Key[8:]),
		v4Mask:    ^uint32(0) << (32 - cfg.IPv4Bits),
		v6Mask:    ^uint64(0) << (64 - cfg.IPv6Bits),
		sets:      make([]prefixSet, sets),
		v4Prefix:  cfg.IPv4Bits,
		v6Prefix:  cfg.IPv6Bits,
		slotCount: sets * prefixWays,
	}
	for i := range l.sets {
		for j := range l.sets[i].ways {
			l.sets[i].ways[j] = prefixWay{lo: noPrefix, tat: emptyTAT}
		}
	}
	return l
}

// Slots returns the number of prefixes the table tracks.
func (l *PrefixLimiter) Slots() int { return l.slotCount }

// Prefix returns the prefix addr is counted under. An IPv4-mapped IPv6
// address counts as its IPv4 address; an invalid one as the IPv6 ::/64.
func (l *PrefixLimiter) Prefix(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap().WithZone("")
	if addr.Is4() {
		return netip.PrefixFrom(addr, l.v4Prefix).Masked()
	}
	if !addr.IsValid() {
		addr = netip.IPv6Unspecified()
	}
	return netip.PrefixFrom(addr, l.v6Prefix).Masked()
}

// Allow reports whether the prefix of addr may be sent a reply costing
// cost tokens at now (one per reply, or its bytes if Rate and Burst are in
// bytes) and, if so, takes them. A cost of zero or less is always allowed;
// a cost above Burst never is.
func (l *PrefixLimiter) Allow(addr netip.Addr, now time.Time, cost int) bool {
	hi, lo := l.key(addr)
	s := &l.sets[l.index(hi, lo)]
	t := now.UnixNano()

	s.mu.Lock()
	w, found := s.lookup(hi, lo, t, l.hold)
	next, ok := l.r.allow(w.tat, t, int64(cost))
	w.tat = next
	if ok && !found {
		w.hi, w.lo = hi, lo
	}
	s.mu.Unlock()
	return ok
}

// key returns the two halves of addr's masked 16-byte form. IPv4 keeps the
// ::ffff: prefix in lo, so no IPv6 prefix (whose lo is zero) equals one.
func (l *PrefixLimiter) key(addr netip.Addr) (hi, lo uint64) {
	addr = addr.Unmap()
	if addr.Is4() {
		a := addr.As4()
		return 0, 0xffff<<32 | uint64(binary.BigEndian.Uint32(a[:])&l.v4Mask)
	}
	a := addr.As16()
	return binary.BigEndian.Uint64(a[:8]) & l.v6Mask, 0
}

// index returns the set of the prefix hi, lo.
func (l *PrefixLimiter) index(hi, lo uint64) uint64 {
	var in [16]byte
	binary.LittleEndian.PutUint64(in[:8], hi)
	binary.LittleEndian.PutUint64(in[8:], lo)
	return siphash.Hash(l.k0, l.k1, in[:]) & l.mask
}

// lookup returns the way holding hi, lo, or the way a newcomer would take
// at now by the rules of PrefixLimiter and false. s.mu must be held.
func (s *prefixSet) lookup(hi, lo uint64, now, hold int64) (*prefixWay, bool) {
	fullest, emptiest := 0, 0
	for i := range s.ways {
		w := &s.ways[i]
		if w.hi == hi && w.lo == lo {
			return w, true
		}
		if w.tat < s.ways[fullest].tat {
			fullest = i
		}
		if w.tat > s.ways[emptiest].tat {
			emptiest = i
		}
	}
	if s.ways[fullest].tat <= now-hold {
		return &s.ways[fullest], false // rule 1: full for Hold
	}
	return &s.ways[emptiest], false // rule 2
}
