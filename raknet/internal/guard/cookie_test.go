package guard

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

// t0 is the fixed start of every timed test. It falls 3 s into a 10 s
// cookie epoch, so tests can reach both epoch boundaries from it.
var t0 = time.Date(2026, 7, 1, 12, 0, 3, 0, time.UTC)

var (
	testSecret = [16]byte{0: 0x5e, 1: 0xc7, 15: 0x42}
	clientV4   = netip.MustParseAddrPort("203.0.113.7:51234")
	clientV6   = netip.MustParseAddrPort("[2001:db8::7]:51234")
)

// raknetProtocol is the RakNet protocol byte Bedrock clients send in
// OpenConnectionRequest1.
const raknetProtocol = 11

func TestCookieVerify(t *testing.T) {
	c := NewCookies(testSecret, 10*time.Second)
	other := NewCookies([16]byte{0: 0x5e, 1: 0xc7, 15: 0x43}, 10*time.Second)
	tests := []struct {
		name  string
		issue netip.AddrPort
		check netip.AddrPort
		proto byte
		by    *Cookies
		want  bool
	}{
		{"same v4 client", clientV4, clientV4, raknetProtocol, c, true},
		{"same v6 client", clientV6, clientV6, raknetProtocol, c, true},
		{"v4-mapped v6 form of the same client", clientV4, netip.MustParseAddrPort("[::ffff:203.0.113.7]:51234"), raknetProtocol, c, true},
		{"other port", clientV4, netip.MustParseAddrPort("203.0.113.7:51235"), raknetProtocol, c, false},
		{"other v4 address", clientV4, netip.MustParseAddrPort("203.0.113.8:51234"), raknetProtocol, c, false},
		{"other v6 address", clientV6, netip.MustParseAddrPort("[2001:db8::8]:51234"), raknetProtocol, c, false},
		{"v6 address with the v4 bytes", clientV4, netip.MustParseAddrPort("[::cb00:7107]:51234"), raknetProtocol, c, false},
		{"other protocol", clientV4, clientV4, raknetProtocol + 1, c, false},
		{"other secret", clientV4, clientV4, raknetProtocol, other, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cookie := c.Issue(tc.issue, raknetProtocol, t0)
			if got := tc.by.Verify(tc.check, tc.proto, cookie, t0); got != tc.want {
				t.Errorf("Verify: got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCookieEpochs checks the life of a cookie issued at t0, 3 s into the
// epoch [t0-3s, t0+7s): valid through the next epoch, refused from the
// first instant of the one after.
func TestCookieEpochs(t *testing.T) {
	c := NewCookies(testSecret, 10*time.Second)
	cookie := c.Issue(clientV4, raknetProtocol, t0)
	tests := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"start of the issuing epoch", t0.Add(-3 * time.Second), true},
		{"when issued", t0, true},
		{"last instant of the issuing epoch", t0.Add(7*time.Second - 1), true},
		{"first instant of the next epoch", t0.Add(7 * time.Second), true},
		{"last instant of the next epoch", t0.Add(17*time.Second - 1), true},
		{"first instant two epochs on", t0.Add(17 * time.Second), false},
		{"three epochs on", t0.Add(27 * time.Second), false},
		{"four epochs on, same parity", t0.Add(37 * time.Second), false},
		{"the epoch before issue", t0.Add(-3*time.Second - 1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Verify(clientV4, raknetProtocol, cookie, tc.at); got != tc.want {
				t.Errorf("Verify at issue%+v: got %v, want %v", tc.at.Sub(t0), got, tc.want)
			}
		})
	}
}

// TestCookieRotates checks that cookies change with the epoch and that a
// cookie of the other parity is not checked against the current key.
func TestCookieRotates(t *testing.T) {
	c := NewCookies(testSecret, 10*time.Second)
	a := c.Issue(clientV4, raknetProtocol, t0)
	b := c.Issue(clientV4, raknetProtocol, t0.Add(10*time.Second))
	d := c.Issue(clientV4, raknetProtocol, t0.Add(20*time.Second))
	if a == b || b == d || a == d {
		t.Fatalf("cookies of three epochs: got %#x %#x %#x, want three different", a, b, d)
	}
	if a&1 == b&1 || a&1 != d&1 {
		t.Errorf("parity bits: got %d %d %d, want alternating", a&1, b&1, d&1)
	}
	if got := c.Issue(clientV4, raknetProtocol, t0.Add(6*time.Second)); got != a {
		t.Errorf("cookie later in the same epoch: got %#x, want %#x", got, a)
	}
	// A cookie of the current epoch with its parity bit flipped is checked
	// against the previous epoch's key and must fail.
	if c.Verify(clientV4, raknetProtocol, b^1, t0.Add(10*time.Second)) {
		t.Errorf("Verify of a flipped parity bit: got true, want false")
	}
}

// TestCookieMemo checks that answers do not depend on what the memo holds:
// a fresh Cookies derives every key, a used one reads them back.
func TestCookieMemo(t *testing.T) {
	warm := NewCookies(testSecret, 10*time.Second)
	for i := range 50 {
		at := t0.Add(time.Duration(i) * 3 * time.Second)
		cold := NewCookies(testSecret, 10*time.Second)
		want := cold.Issue(clientV6, raknetProtocol, at)
		if got := warm.Issue(clientV6, raknetProtocol, at); got != want {
			t.Fatalf("step %d: memoised cookie %#x, want %#x", i, got, want)
		}
		if !warm.Verify(clientV6, raknetProtocol, want, at.Add(5*time.Second)) {
			t.Fatalf("step %d: Verify 5 s later: got false, want true", i)
		}
	}
}

// TestCookieBeforeUnixEpoch checks epoch flooring for times before 1970:
// an epoch there is as long as any other.
func TestCookieBeforeUnixEpoch(t *testing.T) {
	c := NewCookies(testSecret, 10*time.Second)
	at := time.Unix(-5, 0) // inside [-10 s, 0)
	cookie := c.Issue(clientV4, raknetProtocol, at)
	if got, want := c.epoch(at), uint64(1<<64-1); got != want {
		t.Errorf("epoch of -5 s: got %d, want %d", got, want)
	}
	if !c.Verify(clientV4, raknetProtocol, cookie, time.Unix(9, 999_999_999)) {
		t.Errorf("Verify in the next epoch: got false, want true")
	}
	if c.Verify(clientV4, raknetProtocol, cookie, time.Unix(10, 0)) {
		t.Errorf("Verify two epochs on: got true, want false")
	}
}

func TestCookieDefaultPeriod(t *testing.T) {
	c := NewCookies(testSecret, 0)
	if got := time.Duration(c.period); got != DefaultCookiePeriod {
		t.Errorf("period: got %v, want %v", got, DefaultCookiePeriod)
	}
}

// TestCookieConcurrent issues and verifies from several goroutines across
// many epochs, racing on the memo (run it with -race).
func TestCookieConcurrent(t *testing.T) {
	c := NewCookies(testSecret, time.Second)
	ref := NewCookies(testSecret, time.Second)
	want := make([]uint32, 200)
	for i := range want {
		want[i] = ref.Issue(clientV4, raknetProtocol, t0.Add(time.Duration(i)*500*time.Millisecond))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for round := range 20 {
				for i := range want {
					j := (i + g*37 + round*11) % len(want)
					at := t0.Add(time.Duration(j) * 500 * time.Millisecond)
					if got := c.Issue(clientV4, raknetProtocol, at); got != want[j] {
						errs <- "Issue disagrees with a fresh Cookies"
						return
					}
					if !c.Verify(clientV4, raknetProtocol, want[j], at.Add(time.Second)) {
						errs <- "Verify one period on refused a valid cookie"
						return
					}
					if c.Verify(clientV4, raknetProtocol, want[j], at.Add(2*time.Second)) {
						errs <- "Verify two periods on accepted a stale cookie"
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCookieAllocs(t *testing.T) {
	c := NewCookies(testSecret, 0)
	cookie := c.Issue(clientV6, raknetProtocol, t0)
	n := testing.AllocsPerRun(1000, func() {
		if !c.Verify(clientV6, raknetProtocol, c.Issue(clientV6, raknetProtocol, t0), t0) {
			t.Fatal("Verify: got false, want true")
		}
		_ = c.Verify(clientV6, raknetProtocol, cookie^2, t0)
	})
	if n != 0 {
		t.Errorf("allocations per Issue and two Verify: got %v, want 0", n)
	}
}

func BenchmarkCookieIssue(b *testing.B) {
	c := NewCookies(testSecret, 0)
	b.ReportAllocs()
	var sink uint32
	for b.Loop() {
		sink += c.Issue(clientV6, raknetProtocol, t0)
	}
	_ = sink
}

func BenchmarkCookieVerify(b *testing.B) {
	c := NewCookies(testSecret, 0)
	for _, tc := range []struct {
		name   string
		cookie uint32
	}{
		{"valid", c.Issue(clientV6, raknetProtocol, t0)},
		{"previous", c.Issue(clientV6, raknetProtocol, t0.Add(-10*time.Second))},
		{"forged", 0x12345678},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Verify(clientV6, raknetProtocol, tc.cookie, t0)
			}
		})
	}
}

// BenchmarkCookieDerive measures what the memo saves on each call.
func BenchmarkCookieDerive(b *testing.B) {
	c := NewCookies(testSecret, 0)
	b.ReportAllocs()
	var sink uint64
	e := uint64(0)
	for b.Loop() {
		k0, _ := c.derive(e)
		sink += k0
		e++
	}
	_ = sink
}

// A cookie sent with only the bits of a mask verifies with that mask;
// one with a bit outside it, or altered within it, does not.
func TestCookieVerifyMasked(t *testing.T) {
	c := NewCookies(testSecret, 10*time.Second)
	const mask = 1<<31 - 1
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * 300 * time.Millisecond)
		ap := netip.AddrPortFrom(clientV4.Addr(), uint16(i))
		full := c.Issue(ap, raknetProtocol, at)
		sent := full & mask
		for _, tc := range []struct {
			name   string
			cookie uint32
			want   bool
		}{
			{"masked", sent, true},
			{"bit outside the mask", sent | 1<<31, false},
			{"bit within it altered", sent ^ 0x10, false},
			{"parity altered", sent ^ 1, false},
		} {
			if got := c.VerifyMasked(ap, raknetProtocol, tc.cookie, mask, at); got != tc.want {
				t.Fatalf("%s, cookie %#x of %v: got %v, want %v", tc.name, tc.cookie, ap, got, tc.want)
			}
		}
	}
}
