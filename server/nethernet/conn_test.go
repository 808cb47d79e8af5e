package nethernet

import (
	"net"
	"net/netip"
	"testing"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/pion/webrtc/v4"
)

// The client's address, which IP bans see, is never a TURN relay's and
// is known before a candidate pair is selected: a relayed client is seen
// at the address its offer came from, one without a selected pair at the
// address of its ICE check.
func TestRemoteAddr(t *testing.T) {
	host := webrtc.ICECandidate{Typ: webrtc.ICECandidateTypeHost, Address: "192.0.2.10", Port: 50000}
	srflx := webrtc.ICECandidate{Typ: webrtc.ICECandidateTypeSrflx, Address: "198.51.100.20", Port: 50001}
	relay := webrtc.ICECandidate{Typ: webrtc.ICECandidateTypeRelay, Address: "203.0.113.250", Port: 3478}
	mapped := webrtc.ICECandidate{Typ: webrtc.ICECandidateTypeHost, Address: "::ffff:192.0.2.11", Port: 50002}
	offer := netip.MustParseAddr("198.51.100.20")
	fromHost := netip.MustParseAddrPort("192.0.2.10:50000")
	fromRelay := netip.MustParseAddrPort("203.0.113.250:3478")
	addr := func(selected *webrtc.ICECandidate, cs ...webrtc.ICECandidate) *gonn.Addr {
		return &gonn.Addr{NetworkID: "7", ConnectionID: 1, SelectedCandidate: selected, Candidates: cs}
	}
	tests := []struct {
		name  string
		ra    net.Addr
		offer netip.Addr
		check netip.AddrPort
		want  string // "" for go-nethernet's Addr
	}{
		{"host pair", addr(&host, host), offer, fromHost, "192.0.2.10:50000"},
		{"server-reflexive pair", addr(&srflx, srflx), offer, fromHost, "198.51.100.20:50001"},
		{"IPv4-mapped pair", addr(&mapped, mapped), offer, fromHost, "192.0.2.11:50002"},
		{"relay pair", addr(&relay, relay), offer, fromRelay, "198.51.100.20:0"},
		{"relay pair, no offer known", addr(&relay, relay), netip.Addr{}, fromRelay, ""},
		{"no pair, check from a host", addr(nil, host, relay), offer, fromHost, "192.0.2.10:50000"},
		{"no pair, check from a relay", addr(nil, host, relay), offer, fromRelay, "198.51.100.20:0"},
		{"no pair, no check", addr(nil, host), offer, netip.AddrPort{}, "198.51.100.20:0"},
		{"no pair, nothing known", addr(nil), netip.Addr{}, netip.AddrPort{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := remoteAddr(tc.ra, tc.offer, tc.check)
			if tc.want == "" {
				if got != tc.ra {
					t.Errorf("got %v, want go-nethernet's Addr", got)
				}
				return
			}
			ua, ok := got.(*net.UDPAddr)
			if !ok || ua.AddrPort().String() != tc.want {
				t.Errorf("got %v (%T), want %s", got, got, tc.want)
			}
		})
	}
	udp := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	if got := remoteAddr(udp, offer, fromHost); got != udp {
		t.Errorf("an address not go-nethernet's: got %v, want it unchanged", got)
	}
}

// Accept hands on where the client was seen and keeps nothing of it.
func TestAcceptForgetsOrigin(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true})
	cc, err := dial(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := accept(t, l)
	if ua, ok := sc.RemoteAddr().(*net.UDPAddr); !ok || !ua.AddrPort().Addr().IsLoopback() {
		t.Errorf("RemoteAddr: got %v, want the client's loopback UDP address", sc.RemoteAddr())
	}
	n := 0
	l.origins.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("origins kept after Accept: got %d, want 0", n)
	}
	_ = cc.Close()
	_ = sc.Close()
	_ = l.Close()
}
