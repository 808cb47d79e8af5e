package guard

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var testPrefixKey = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// v4 returns the address 10.a.b.c.
func v4(a, b, c byte) netip.Addr { return netip.AddrFrom4([4]byte{10, a, b, c}) }

// v4n returns an address in the n-th /24 of 10.0.0.0/8.
func v4n(n int) netip.Addr { return v4(byte(n>>8), byte(n), 1) }

// drain takes a whole burst for addr at now and checks it was all there.
func drain(t *testing.T, l *PrefixLimiter, addr netip.Addr, now time.Time) {
	t.Helper()
	for i := range l.r.burst {
		if !l.Allow(addr, now, 1) {
			t.Fatalf("Allow(%v) #%d of a full burst: got false, want true", addr, i)
		}
	}
}

// TestPrefixGrouping checks which addresses share a bucket: drain one, and
// see whether the other is refused.
func TestPrefixGrouping(t *testing.T) {
	tests := []struct {
		name     string
		v6Bits   int
		a, b     string
		together bool
	}{
		{"same v4 address", 0, "198.51.100.7", "198.51.100.7", true},
		{"same v4 /24", 0, "198.51.100.7", "198.51.100.250", true},
		{"next v4 /24", 0, "198.51.100.7", "198.51.101.7", false},
		{"v4 and its mapped v6 form", 0, "198.51.100.7", "::ffff:198.51.100.9", true},
		{"v4 and the v6 address with its bytes", 0, "198.51.100.7", "::c633:6407", false},
		{"same v6 /64", 0, "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{"next v6 /64", 0, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"same v6 /48 at /48", 48, "2001:db8:1:2::1", "2001:db8:1:ffff::1", true},
		{"next v6 /48 at /48", 48, "2001:db8:1:2::1", "2001:db8:2:2::1", false},
		{"zones do not matter", 0, "fe80::1%eth0", "fe80::2%eth1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewPrefixLimiter(PrefixConfig{Rate: 10, Burst: 5, Slots: 64, IPv6Bits: tc.v6Bits, Key: testPrefixKey})
			a, b := netip.MustParseAddr(tc.a), netip.MustParseAddr(tc.b)
			drain(t, l, a, t0)
			if got := !l.Allow(b, t0, 1); got != tc.together {
				t.Errorf("%v refused after %v drained its bucket: got %v, want %v", b, a, got, tc.together)
			}
			if got := l.Prefix(a) == l.Prefix(b); got != tc.together {
				t.Errorf("Prefix(%v) = %v, Prefix(%v) = %v: got equal %v, want %v", a, l.Prefix(a), b, l.Prefix(b), got, tc.together)
			}
		})
	}
}

func TestPrefixOf(t *testing.T) {
	l := NewPrefixLimiter(PrefixConfig{Key: testPrefixKey})
	l48 := NewPrefixLimiter(PrefixConfig{Key: testPrefixKey, IPv4Bits: 16, IPv6Bits: 48})
	tests := []struct {
		l    *PrefixLimiter
		addr netip.Addr
		want string
	}{
		{l, netip.MustParseAddr("198.51.100.7"), "198.51.100.0/24"},
		{l, netip.MustParseAddr("::ffff:198.51.100.7"), "198.51.100.0/24"},
		{l, netip.MustParseAddr("2001:db8:1:2:3::4"), "2001:db8:1:2::/64"},
		{l, netip.MustParseAddr("fe80::1%eth0"), "fe80::/64"},
		{l, netip.Addr{}, "::/64"},
		{l48, netip.MustParseAddr("198.51.100.7"), "198.51.0.0/16"},
		{l48, netip.MustParseAddr("2001:db8:1:2:3::4"), "2001:db8:1::/48"},
	}
	for _, tc := range tests {
		if got := tc.l.Prefix(tc.addr).String(); got != tc.want {
			t.Errorf("Prefix(%v): got %v, want %v", tc.addr, got, tc.want)
		}
	}
}

func TestPrefixRate(t *testing.T) {
	l := NewPrefixLimiter(PrefixConfig{Rate: 10, Burst: 5, Key: testPrefixKey})
	a := v4(1, 2, 3)
	steps := []step{
		{0, 3, true},
		{0, 2, true},
		{0, 1, false},
		{99 * time.Millisecond, 1, false},
		{100 * time.Millisecond, 1, true},
		{100 * time.Millisecond, 1, false},
		{time.Hour, 6, false},
		{time.Hour, 5, true},
	}
	for i, s := range steps {
		if got := l.Allow(a, t0.Add(s.at), s.cost); got != s.want {
			t.Errorf("step %d: Allow(t0+%v, %d): got %v, want %v", i, s.at, s.cost, got, s.want)
		}
	}
}

// owners returns the prefixes of a one-set limiter's ways, as the n of
// v4n, or -1 for a way that no address of v4n holds.
func owners(l *PrefixLimiter) [prefixWays]int {
	var o [prefixWays]int
	for i, w := range l.sets[0].ways {
		o[i] = -1
		for n := range 64 {
			if hi, lo := l.key(v4n(n)); hi == w.hi && lo == w.lo {
				o[i] = n
			}
		}
	}
	return o
}

// holds reports whether a one-set limiter has a way for v4n(n).
func holds(l *PrefixLimiter, n int) bool {
	for _, o := range owners(l) {
		if o == n {
			return true
		}
	}
	return false
}

// TestPrefixTakeover checks the three rules for the way a newcomer takes,
// on a table of one set so every prefix collides.
func TestPrefixTakeover(t *testing.T) {
	const hold = 5 * time.Second
	cfg := PrefixConfig{Rate: 10, Burst: 10, Slots: 4, Hold: hold, Key: testPrefixKey}
	type use struct {
		n    int           // prefix v4n(n)
		at   time.Duration // from t0
		cost int
	}
	tests := []struct {
		name string
		uses []use
		// newcomer v4n(10) asks for cost at t0+at
		at       time.Duration
		cost     int
		want     bool
		evicted  int // prefix that lost its way, -1 for none
		newLevel int64
	}{
		{
			name: "empty ways first",
			uses: []use{{0, 0, 1}, {1, 0, 1}, {2, 0, 1}},
			at:   time.Second, cost: 1, want: true, evicted: -1, newLevel: 9,
		},
		{
			name: "rule 1: the way idle longest once idle for Hold",
			uses: []use{{0, 0, 1}, {1, time.Second, 1}, {2, 2 * time.Second, 1}, {3, 3 * time.Second, 1}},
			// v4n(0) has been full since t0+100ms.
			at: hold + 100*time.Millisecond, cost: 1, want: true, evicted: 0, newLevel: 9,
		},
		{
			name: "rule 2: the emptiest way",
			uses: []use{{0, 0, 1}, {1, 0, 10}, {2, 0, 6}, {3, 0, 2}},
			// v4n(1) owes 10 tokens: the newcomer inherits its empty
			// bucket and is refused, so it takes nothing.
			at: 0, cost: 1, want: false, evicted: -1, newLevel: -1,
		},
		{
			name: "rule 2: the inherited debt, once it has been repaid in part",
			uses: []use{{0, 0, 1}, {1, 0, 10}, {2, 0, 6}, {3, 0, 2}},
			// At 400 ms v4n(1) owes 6 and has 4.
			at: 400 * time.Millisecond, cost: 4, want: true, evicted: 1, newLevel: 0,
		},
		{
			name: "rule 2: among light ways, the one used most",
			uses: []use{{0, 0, 4}, {1, 0, 2}, {2, 0, 5}, {3, 0, 3}},
			at:   0, cost: 1, want: true, evicted: 2, newLevel: 4,
		},
		{
			name: "a light way within Hold is not taken as idle",
			uses: []use{{0, 0, 1}, {1, 1900 * time.Millisecond, 10}, {2, 1900 * time.Millisecond, 10}, {3, 1900 * time.Millisecond, 10}},
			// v4n(0) has been full since t0+100ms, not yet for Hold:
			// the newcomer goes to a flooder's way and gets the one
			// token it has earned back.
			at: 2 * time.Second, cost: 1, want: true, evicted: 1, newLevel: 0,
		},
		{
			name: "rule 1 before rule 2",
			uses: []use{{0, 0, 1}, {1, 5 * time.Second, 10}, {2, 5 * time.Second, 10}, {3, 5 * time.Second, 10}},
			at:   hold + 100*time.Millisecond, cost: 1, want: true, evicted: 0, newLevel: 9,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := NewPrefixLimiter(cfg)
			for _, u := range tc.uses {
				if !l.Allow(v4n(u.n), t0.Add(u.at), u.cost) {
					t.Fatalf("setup Allow(v4n(%d), t0+%v, %d): got false, want true", u.n, u.at, u.cost)
				}
			}
			before := owners(l)
			now := t0.Add(tc.at)
			if got := l.Allow(v4n(10), now, tc.cost); got != tc.want {
				t.Fatalf("newcomer Allow: got %v, want %v", got, tc.want)
			}
			evicted := -1
			for _, o := range before {
				if o >= 0 && !holds(l, o) {
					evicted = o
				}
			}
			if evicted != tc.evicted {
				t.Errorf("evicted: got v4n(%d), want v4n(%d) (ways before %v, after %v)", evicted, tc.evicted, before, owners(l))
			}
			if got := holds(l, 10); got != tc.want {
				t.Errorf("newcomer holds a way: got %v, want %v", got, tc.want)
			}
			if tc.want {
				if got := l.tokens(v4n(10), now); got != tc.newLevel {
					t.Errorf("newcomer's tokens after its request: got %d, want %d", got, tc.newLevel)
				}
			}
		})
	}
}

// tokens returns the tokens addr's way holds at now, or -1 if it has none.
func (l *PrefixLimiter) tokens(addr netip.Addr, now time.Time) int64 {
	hi, lo := l.key(addr)
	s := &l.sets[l.index(hi, lo)]
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.ways {
		if w.hi == hi && w.lo == lo {
			return l.r.tokens(w.tat, now.UnixNano())
		}
	}
	return -1
}

// TestPrefixScannerUnderFlood checks the promise PrefixLimiter makes a
// light client: a LAN scanner pinging from one address four times a second
// is never refused while 10,000 other prefixes, far more than the table's
// 1024 ways, each send 25 pings a second for three seconds: about ten
// flooders to a way, each way asked ten times its rate.
func TestPrefixScannerUnderFlood(t *testing.T) {
	const (
		flooders = 10_000
		tick     = 40 * time.Millisecond
		ticks    = 75
		rate     = 64
		burst    = 128
	)
	l := NewPrefixLimiter(PrefixConfig{Rate: rate, Burst: burst, Slots: 1024, Key: testPrefixKey})
	scanner := netip.MustParseAddr("192.168.1.20")
	if !l.Allow(scanner, t0, 1) {
		t.Fatal("scanner's first ping: got refused, want allowed")
	}
	var floodAllowed, floodAsked int
	for i := 1; i <= ticks; i++ {
		now := t0.Add(time.Duration(i) * tick)
		for f := range flooders {
			floodAsked++
			if l.Allow(v4n(f), now, 1) {
				floodAllowed++
			}
		}
		if i%6 == 0 && !l.Allow(scanner, now, 1) {
			t.Fatalf("scanner's ping at t0+%v: got refused, want allowed", now.Sub(t0))
		}
	}
	// The flood had the other ways, each at most a burst and its refill.
	elapsed := time.Duration(ticks) * tick
	limit := (l.Slots() - 1) * (burst + int(rate*elapsed/time.Second))
	if floodAllowed > limit {
		t.Errorf("flood allowed %d of %d, want at most %d", floodAllowed, floodAsked, limit)
	}
}

// TestPrefixOneFlooder checks that a prefix flooding alone gets its rate.
func TestPrefixOneFlooder(t *testing.T) {
	l := NewPrefixLimiter(PrefixConfig{Rate: 100, Burst: 50, Key: testPrefixKey})
	a := netip.MustParseAddr("2001:db8::66")
	allowed := 0
	for i := range 10_000 { // 10 s at one request per millisecond
		if l.Allow(a, t0.Add(time.Duration(i)*time.Millisecond), 1) {
			allowed++
		}
	}
	if want := 50 + 100*10 - 1; allowed < want-1 || allowed > want+1 {
		t.Errorf("allowed: got %d, want %d±1", allowed, want)
	}
}

// TestPrefixConcurrent races goroutines on one prefix and on many at one
// instant (run with -race): the shared prefix gets exactly its burst, and
// no prefix gets more than the four ways of its set hold.
func TestPrefixConcurrent(t *testing.T) {
	const burst = 20
	l := NewPrefixLimiter(PrefixConfig{Rate: 10, Burst: burst, Slots: 256, Key: testPrefixKey})
	shared := netip.MustParseAddr("198.51.100.1")
	var sharedAllowed atomic.Int64
	perPrefix := make([]atomic.Int64, 1000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				if l.Allow(shared, t0, 1) {
					sharedAllowed.Add(1)
				}
				n := (i*7 + g*131) % len(perPrefix)
				if l.Allow(v4n(n), t0, 1) {
					perPrefix[n].Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := sharedAllowed.Load(); got < burst || got > prefixWays*burst {
		t.Errorf("shared prefix allowed: got %d, want between %d and %d", got, burst, prefixWays*burst)
	}
	var total int64
	for n := range perPrefix {
		got := perPrefix[n].Load()
		total += got
		if got > prefixWays*burst {
			t.Errorf("prefix %d allowed: got %d, want at most %d", n, got, prefixWays*burst)
		}
	}
	if limit := int64(l.Slots() * burst); total+sharedAllowed.Load() > limit {
		t.Errorf("table allowed: got %d, want at most %d", total+sharedAllowed.Load(), limit)
	}
}

func TestNewPrefixLimiterSlots(t *testing.T) {
	tests := []struct{ slots, want int }{
		{0, DefaultPrefixSlots},
		{1, 4},
		{4, 4},
		{5, 8},
		{1000, 1024},
		{1024, 1024},
	}
	for _, tc := range tests {
		if got := NewPrefixLimiter(PrefixConfig{Slots: tc.slots, Key: testPrefixKey}).Slots(); got != tc.want {
			t.Errorf("Slots for %d: got %d, want %d", tc.slots, got, tc.want)
		}
	}
}

func TestNewPrefixLimiterPanics(t *testing.T) {
	tests := []PrefixConfig{
		{Slots: -1},
		{Hold: -time.Second},
		{IPv4Bits: 7},
		{IPv4Bits: 33},
		{IPv6Bits: 65},
		{Rate: -1},
		{Burst: -1},
	}
	for _, cfg := range tests {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewPrefixLimiter(%+v): got no panic, want one", cfg)
				}
			}()
			NewPrefixLimiter(cfg)
		})
	}
}

// TestPrefixRandomKey checks that the zero Key draws a random one, so two
// limiters place prefixes differently.
func TestPrefixRandomKey(t *testing.T) {
	a, b := NewPrefixLimiter(PrefixConfig{}), NewPrefixLimiter(PrefixConfig{})
	if a.k0 == b.k0 && a.k1 == b.k1 {
		t.Errorf("keys of two limiters with the zero Key: got equal, want different")
	}
}

func TestPrefixAllocs(t *testing.T) {
	l := NewPrefixLimiter(PrefixConfig{Key: testPrefixKey})
	v6 := netip.MustParseAddr("2001:db8::1")
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		i++
		l.Allow(v4n(i), t0, 1)
		l.Allow(v6, t0, 1)
	})
	if n != 0 {
		t.Errorf("allocations per Allow: got %v, want 0", n)
	}
}

// BenchmarkPrefixAllow measures a prefix that holds its way (hit), one
// new prefix after another taking ways over (miss), and a refused flooder.
func BenchmarkPrefixAllow(b *testing.B) {
	b.Run("hit", func(b *testing.B) {
		l := NewPrefixLimiter(PrefixConfig{Rate: MaxRate, Burst: MaxRate, Key: testPrefixKey})
		a := netip.MustParseAddr("198.51.100.7")
		b.ReportAllocs()
		for b.Loop() {
			l.Allow(a, t0, 1)
		}
	})
	b.Run("miss", func(b *testing.B) {
		l := NewPrefixLimiter(PrefixConfig{Key: testPrefixKey})
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			l.Allow(netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 1}), t0, 1)
		}
	})
	b.Run("refused", func(b *testing.B) {
		l := NewPrefixLimiter(PrefixConfig{Rate: 1, Burst: 1, Key: testPrefixKey})
		a := netip.MustParseAddr("2001:db8::1")
		l.Allow(a, t0, 1)
		b.ReportAllocs()
		for b.Loop() {
			l.Allow(a, t0, 1)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := NewPrefixLimiter(PrefixConfig{Key: testPrefixKey})
		var seq atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1)) << 20
			for pb.Next() {
				i++
				l.Allow(netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), 1}), t0, 1)
			}
		})
	})
}
