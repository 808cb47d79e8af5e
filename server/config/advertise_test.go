package config

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetherNetAdvertiseAddress checks network.nethernet_advertise_address:
// what it accepts reaches server.Config, and each mistake is named with the
// key and what to write instead.
func TestNetherNetAdvertiseAddress(t *testing.T) {
	tests := []struct {
		name              string
		v4, v6, advertise string
		icePort           int
		want              string // the Config's AdvertiseAddress, or "" for an error
		wantMsg           string // a substring of the error
	}{
		{name: "empty", v4: "0.0.0.0:19132", want: "invalid AddrPort"},
		{name: "the game port", v4: "0.0.0.0:19132", advertise: "203.0.113.11:19132", want: "203.0.113.11:19132"},
		{name: "the ICE port", v4: "0.0.0.0:19132", icePort: 19200, advertise: "203.0.113.11:19200", want: "203.0.113.11:19200"},
		{name: "a port the system picks", v4: "127.0.0.1:0", advertise: "127.0.0.2:40000", want: "127.0.0.2:40000"},
		{name: "IPv6 only", v6: "[::]:19133", advertise: "[2001:db8::11]:19133", want: "[2001:db8::11]:19133"},
		{name: "mapped IPv4", v4: "0.0.0.0:19132", advertise: "[::ffff:203.0.113.11]:19132", want: "203.0.113.11:19132"},
		{name: "without port", v4: "0.0.0.0:19132", advertise: "203.0.113.11", wantMsg: "IP:port"},
		{name: "a name", v4: "0.0.0.0:19132", advertise: "pod-1.example:19132", wantMsg: "not an IP address"},
		{name: "unspecified", v4: "0.0.0.0:19132", advertise: "0.0.0.0:19132", wantMsg: "unspecified"},
		{name: "another port than the game's", v4: "0.0.0.0:19132", advertise: "203.0.113.11:7000", wantMsg: `port 7000 is not 19132, the UDP port of NetherNet's peer connections (network.address_v4); ICE candidates keep their port, so advertise "203.0.113.11:19132"`},
		{name: "the game port with an ICE port", v4: "0.0.0.0:19132", icePort: 19200, advertise: "203.0.113.11:19132", wantMsg: "(network.nethernet_ice_port)"},
		{name: "IPv6 while NetherNet is on IPv4", v4: "0.0.0.0:19132", v6: "[::]:19133", advertise: "[2001:db8::11]:19132", wantMsg: `not of the family of network.address_v4 "0.0.0.0:19132"`},
		{name: "IPv4 while NetherNet is on IPv6", v6: "[::]:19133", advertise: "203.0.113.11:19133", wantMsg: "network.address_v6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uc := DefaultUserConfig()
			uc.Network.AddressV4, uc.Network.AddressV6 = tc.v4, tc.v6
			uc.Network.NetherNetICEPort = tc.icePort
			uc.Network.NetherNetAdvertise = tc.advertise
			uc.Network.PublicAddress = "198.51.100.1:19132" // the balancer's
			uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
			c, err := uc.Config(nil)
			if tc.wantMsg != "" {
				if err == nil || !strings.Contains(err.Error(), "network.nethernet_advertise_address") || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("got %v, want an error naming network.nethernet_advertise_address with %q", err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if got := c.NetherNet.AdvertiseAddress.String(); got != tc.want {
				t.Errorf("AdvertiseAddress %s, want %s", got, tc.want)
			}
			// The pong keeps the balancer's address.
			if got, want := c.Network.PublicAddress, netip.MustParseAddrPort("198.51.100.1:19132"); got != want {
				t.Errorf("PublicAddress %v, want %v", got, want)
			}
		})
	}
}
