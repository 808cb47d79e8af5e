package access

import (
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/session"
)

func TestBanMatches(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	steve := session.Identity{DisplayName: "Steve", XUID: "2535400000000001"}
	v4 := netip.MustParseAddr("203.0.113.7")
	v6 := netip.MustParseAddr("2001:db8::7")
	tests := []struct {
		name string
		ban  Ban
		id   session.Identity
		ip   netip.Addr
		want bool
	}{
		{"XUID", Ban{XUID: "2535400000000001"}, steve, v4, true},
		{"other XUID", Ban{XUID: "2535400000000002"}, steve, v4, false},
		{"name in another case", Ban{Name: "sTEVE"}, steve, v4, true},
		{"other name", Ban{Name: "Alex"}, steve, v4, false},
		{"IP", Ban{IP: "203.0.113.7"}, steve, v4, true},
		{"other IP", Ban{IP: "203.0.113.8"}, steve, v4, false},
		{"CIDR", Ban{IP: "203.0.113.0/24"}, steve, v4, true},
		{"CIDR not holding it", Ban{IP: "198.51.100.0/24"}, steve, v4, false},
		{"CIDR with host bits", Ban{IP: "203.0.113.99/24"}, steve, v4, true},
		{"IPv6 CIDR", Ban{IP: "2001:db8::/32"}, steve, v6, true},
		{"IPv4 ban, IPv4-mapped address", Ban{IP: "203.0.113.0/24"}, steve, netip.AddrFrom16(v4.As16()), true},
		{"IPv4 ban, IPv6 client", Ban{IP: "203.0.113.0/24"}, steve, v6, false},
		{"IP ban, no address", Ban{IP: "203.0.113.7"}, steve, netip.Addr{}, false},
		{"expired", Ban{XUID: "2535400000000001", Expires: now.Add(-time.Second)}, steve, v4, false},
		{"not expired yet", Ban{XUID: "2535400000000001", Expires: now.Add(time.Hour)}, steve, v4, true},
		{"XUID ban, player without XUID", Ban{XUID: "2535400000000001"}, session.Identity{DisplayName: "Steve2"}, v4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ban.matches(tc.id, tc.ip, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []Ban{{}, {IP: "not an ip"}, {IP: "10.0.0.0/33"}, {Reason: "no target"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("validate(%+v): got nil, want an error", bad)
		}
	}
}

func TestAllowlistMatches(t *testing.T) {
	steve := session.Identity{DisplayName: "Steve", XUID: "2535400000000001"}
	for _, tc := range []struct {
		e    AllowlistEntry
		want bool
	}{
		{AllowlistEntry{Name: "steve"}, true},
		{AllowlistEntry{Name: "Alex"}, false},
		{AllowlistEntry{XUID: "2535400000000001"}, true},
		// An entry with an XUID matches that XUID only, not the name: a
		// gamertag can change hands.
		{AllowlistEntry{Name: "Steve", XUID: "2535400000000002"}, false},
		{AllowlistEntry{}, false},
	} {
		if got := tc.e.matches(steve); got != tc.want {
			t.Errorf("%+v: got %v, want %v", tc.e, got, tc.want)
		}
	}
}
