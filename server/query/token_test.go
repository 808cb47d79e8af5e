package query

import (
	"net/netip"
	"testing"
	"time"
)

var (
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	client = netip.MustParseAddrPort("192.0.2.7:40000")
	secret = []byte("0123456789abcdef0123456789abcdef")
)

func TestTokenLifetime(t *testing.T) {
	tk := NewTokens(secret, 10*time.Second)
	// Issued at the start of an epoch: good for two whole epochs.
	start := t0.Truncate(10 * time.Second)
	tok := tk.Issue(client, start)
	cases := []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{9 * time.Second, true},
		{10 * time.Second, true},
		{19*time.Second + 999*time.Millisecond, true},
		{20 * time.Second, false},
		{time.Hour, false},
		{-time.Nanosecond, false}, // from the epoch before
	}
	for _, tc := range cases {
		if got := tk.Verify(client, tok, start.Add(tc.at)); got != tc.want {
			t.Errorf("at +%v: got %v, want %v", tc.at, got, tc.want)
		}
	}
	// Issued at an epoch's end: still good for the whole next epoch.
	late := start.Add(10*time.Second - time.Nanosecond)
	tok = tk.Issue(client, late)
	if !tk.Verify(client, tok, late.Add(10*time.Second)) {
		t.Error("token issued at an epoch's end expired within one period")
	}
}

func TestTokenBoundToAddress(t *testing.T) {
	tk := NewTokens(secret, 0)
	tok := tk.Issue(client, t0)
	others := []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.8:40000"),
		netip.MustParseAddrPort("192.0.2.7:40001"),
		netip.MustParseAddrPort("[2001:db8::7]:40000"),
	}
	for _, o := range others {
		if tk.Verify(o, tok, t0) {
			t.Errorf("token of %v accepted from %v", client, o)
		}
	}
	mapped := netip.AddrPortFrom(netip.AddrFrom16(client.Addr().As16()), client.Port())
	if !tk.Verify(mapped, tok, t0) {
		t.Errorf("token of %v refused from its IPv4-mapped form %v", client, mapped)
	}
	if !tk.Verify(client, tok, t0) {
		t.Error("token refused from its own address")
	}
}

func TestTokenSecret(t *testing.T) {
	a, b := NewTokens(secret, 0), NewTokens(secret, 0)
	if !b.Verify(client, a.Issue(client, t0), t0) {
		t.Error("same secret: token refused")
	}
	other := NewTokens([]byte("another secret of 32 bytes......"), 0)
	if other.Verify(client, a.Issue(client, t0), t0) {
		t.Error("different secret: token accepted")
	}
	r1, r2 := NewTokens(nil, 0), NewTokens(nil, 0)
	if r2.Verify(client, r1.Issue(client, t0), t0) && r2.Verify(client, r1.Issue(client, t0.Add(time.Hour)), t0.Add(time.Hour)) {
		t.Error("two random keys accept each other's tokens")
	}
}

// Tokens fit in 31 bits, so clients that read the decimal as signed or as
// unsigned agree; a forged one is refused.
func TestTokenRange(t *testing.T) {
	tk := NewTokens(secret, time.Second)
	accepted := 0
	for i := range 10000 {
		at := t0.Add(time.Duration(i) * 300 * time.Millisecond)
		ap := netip.AddrPortFrom(client.Addr(), uint16(i))
		tok := tk.Issue(ap, at)
		if tok >= 1<<31 {
			t.Fatalf("token %d is not below 2^31", tok)
		}
		if tk.Verify(ap, tok^0x10, at) {
			accepted++
		}
	}
	if accepted > 0 {
		t.Errorf("%d altered tokens accepted", accepted)
	}
}

func TestTokenAllocs(t *testing.T) {
	tk := NewTokens(secret, 0)
	if n := testing.AllocsPerRun(100, func() { tk.Verify(client, tk.Issue(client, t0), t0) }); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

func BenchmarkTokenIssue(b *testing.B) {
	tk := NewTokens(secret, 0)
	b.ReportAllocs()
	for b.Loop() {
		tk.Issue(client, t0)
	}
}
