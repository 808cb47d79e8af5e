package guard

import (
	"net/netip"
	"testing"
	"time"
)

// fuzzAddrs are the sources a FuzzPrefixLimiter op picks from: several
// per prefix, both families, mapped forms and the invalid address.
var fuzzAddrs = func() []netip.Addr {
	var a []netip.Addr
	for n := range 12 {
		a = append(a, v4(0, byte(n), 1), v4(0, byte(n), 200))
	}
	for n := range 12 {
		a = append(a,
			netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 7: byte(n), 15: 1}),
			netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 7: byte(n), 8: 0xff, 15: 9}))
	}
	return append(a,
		netip.MustParseAddr("::ffff:10.0.3.9"),
		netip.MustParseAddr("::"),
		netip.Addr{})
}()

// FuzzPrefixLimiter runs arbitrary sequences of requests (source, time
// step, cost) through a two-set table and checks after each one that no
// prefix is held twice, that only the requester's set changed and by at
// most the requester taking one way, that a refused newcomer took nothing,
// that a newcomer finding a way idle for Hold is allowed, and that no
// prefix, set or table got more than its ways can admit since it was first
// seen: taking a way over must not refill its bucket.
func FuzzPrefixLimiter(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 0, 1, 2, 0, 1, 3, 0, 1, 4, 0, 1})
	f.Add([]byte{0, 0, 8, 0, 0, 1, 0, 10, 1, 0, 100, 8, 5, 1, 3})
	f.Add([]byte{1, 0, 1, 3, 0, 1, 5, 0, 1, 7, 0, 1, 9, 0, 1, 11, 0, 1, 13, 0, 1, 1, 200, 1})
	f.Add([]byte{48, 0, 1, 49, 0, 1, 50, 0, 1, 24, 0, 9, 25, 0, 1})
	// Nine prefixes, so five share a set, each asking for a whole burst
	// at once: the fifth in a set must inherit an empty bucket.
	f.Add([]byte{0, 0, 9, 2, 0, 9, 4, 0, 9, 6, 0, 9, 8, 0, 9, 10, 0, 9, 12, 0, 9, 14, 0, 9, 16, 0, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const (
			rate  = 10 // tokens per second: 100 ms a token, exactly
			burst = 8
			hold  = time.Second
		)
		l := NewPrefixLimiter(PrefixConfig{Rate: rate, Burst: burst, Slots: 8, Hold: hold, Key: testPrefixKey})
		type account struct {
			first    time.Time
			admitted int64
		}
		got := make(map[netip.Prefix]*account)
		perSet := make([]int64, len(l.sets))
		var total int64
		now := t0
		for len(ops) >= 3 {
			addr := fuzzAddrs[int(ops[0])%len(fuzzAddrs)]
			now = now.Add(time.Duration(ops[1]) * 10 * time.Millisecond)
			cost := int(ops[2]%(burst+2)) - 1 // -1 to burst+0
			ops = ops[3:]

			hi, lo := l.key(addr)
			si := l.index(hi, lo)
			before := l.sets[si].ways
			held, idle := false, false
			for _, w := range before {
				held = held || (w.hi == hi && w.lo == lo)
				idle = idle || w.tat <= now.UnixNano()-int64(hold)
			}

			ok := l.Allow(addr, now, cost)

			p := l.Prefix(addr)
			a := got[p]
			if a == nil {
				a = &account{first: now}
				got[p] = a
			}
			if ok && cost > 0 {
				a.admitted += int64(cost)
				perSet[si] += int64(cost)
				total += int64(cost)
			}
			if cost <= 0 && !ok {
				t.Fatalf("Allow(%v, cost %d): got refused, want allowed", addr, cost)
			}
			if cost > burst && ok {
				t.Fatalf("Allow(%v, cost %d > burst): got allowed, want refused", addr, cost)
			}
			if !held && idle && cost > 0 && cost <= burst && !ok {
				t.Fatalf("newcomer %v with an idle way in its set: got refused, want allowed", addr)
			}

			after := l.sets[si].ways
			changed := 0
			for i := range after {
				if after[i].hi != before[i].hi || after[i].lo != before[i].lo {
					changed++
					if after[i].hi != hi || after[i].lo != lo {
						t.Fatalf("way %d went to %#x/%#x, not the requester %v", i, after[i].hi, after[i].lo, addr)
					}
				}
			}
			if changed > 1 || (changed == 1 && (held || !ok)) {
				t.Fatalf("%d ways changed hands for %v (held %v, allowed %v)", changed, addr, held, ok)
			}

			for i := range l.sets {
				ways := l.sets[i].ways
				for j := range ways {
					for k := j + 1; k < len(ways); k++ {
						if ways[j].lo != noPrefix && ways[j].hi == ways[k].hi && ways[j].lo == ways[k].lo {
							t.Fatalf("set %d holds %#x/%#x in ways %d and %d", i, ways[j].hi, ways[j].lo, j, k)
						}
					}
				}
			}

			// A way admits at most a burst plus one token per 100 ms.
			wayLimit := func(since time.Time) int64 {
				return burst + int64(now.Sub(since)/(time.Second/rate))
			}
			if limit := prefixWays * wayLimit(a.first); a.admitted > limit {
				t.Fatalf("prefix %v admitted %d since t0+%v, want at most %d", p, a.admitted, a.first.Sub(t0), limit)
			}
			if limit := prefixWays * wayLimit(t0); perSet[si] > limit {
				t.Fatalf("set %d admitted %d, want at most %d", si, perSet[si], limit)
			}
			if limit := int64(l.Slots()) * wayLimit(t0); total > limit {
				t.Fatalf("table admitted %d, want at most %d", total, limit)
			}
		}
	})
}
