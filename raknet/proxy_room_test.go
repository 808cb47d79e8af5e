package raknet

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	proxyproto "github.com/pires/go-proxyproto"
)

// request1 returns an OpenConnectionRequest1 of n bytes, an MTU probe.
func request1(n int) []byte {
	r := wire.OpenConnectionRequest1{Protocol: 11, Size: n}
	return r.Append(nil)
}

// proxiedN returns a v2 header of exactly n bytes (a NOOP TLV fills it
// out; n is at least 31) naming client, followed by payload.
func proxiedN(t *testing.T, n int, client netip.AddrPort, payload []byte) []byte {
	t.Helper()
	h := &proxyproto.Header{
		Version: 2, Command: proxyproto.PROXY, TransportProtocol: proxyproto.UDPv4,
		SourceAddr: net.UDPAddrFromAddrPort(client), DestinationAddr: net.UDPAddrFromAddrPort(proxyDst),
	}
	if err := h.SetTLVs([]proxyproto.TLV{{Type: proxyproto.PP2_TYPE_NOOP, Value: make([]byte, n-16-12-3)}}); err != nil {
		t.Fatal(err)
	}
	b, err := h.FormatUDPDatagram(payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != n+len(payload) {
		t.Fatalf("header of %d bytes, want %d", len(b)-len(payload), n)
	}
	return b
}

// TestProxyReadRoom sends datagrams at the read limits through real
// sockets: a trusted proxy's may be up to maxReadIn bytes (1748) as long
// as what follows the header is at most maxDatagramIn (1492); anyone
// else's, and a listener's without ProxyProtocol, at most 1492. What goes
// over is dropped and counted in Oversize. So it is with batched I/O and
// without.
func TestProxyReadRoom(t *testing.T) {
	if maxReadIn != 1748 || maxDatagramIn != 1492 {
		t.Fatalf("limits %d and %d, want 1748 and 1492", maxReadIn, maxDatagramIn)
	}
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "batched"}[batch], func(t *testing.T) {
			old := batching
			batching = batch && old
			defer func() { batching = old }()
			testProxyReadRoom(t)
		})
	}
}

// probeSize is the size of the probe that ends each case of
// testProxyReadRoom: an MTU (with IP and UDP headers) above the minimum and
// below any other case's.
const probeSize = 600

func testProxyReadRoom(t *testing.T) {
	l := listenTest(t, ListenConfig{
		ProxyProtocol:  true,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		OfflineRate:    -1,
		OfflineBytes:   -1,
	})
	plain := listenTest(t, ListenConfig{OfflineRate: -1, OfflineBytes: -1})
	dial := func(src string, to *Listener) *net.UDPConn {
		c, err := net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(src)), net.UDPAddrFromAddrPort(addrPortOf(to.Addr())))
		if err != nil {
			t.Skipf("cannot send from %s: %v", src, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	proxy, stranger, direct := dial("127.0.0.2:0", l), dial("127.0.0.3:0", l), dial("127.0.0.3:0", plain)
	client := netip.MustParseAddrPort("203.0.113.7:5000")

	// answered reports whether b, sent on c, is answered with a Reply1.
	// A small probe follows it, answered with a smaller MTU: its reply
	// says that b was read (loopback keeps one socket's datagrams in
	// order) and that no reply to b is still to come.
	answered := func(c *net.UDPConn, b, probe []byte) bool {
		t.Helper()
		for _, d := range [][]byte{b, probe} {
			if _, err := c.Write(d); err != nil {
				t.Fatal(err)
			}
		}
		replied := false
		buf := make([]byte, 2048)
		for {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("no reply to the probe: %v", err)
			}
			var r wire.OpenConnectionReply1
			if _, err := r.Decode(buf[:n]); err != nil {
				t.Fatalf("got %x: %v", buf[:min(n, 8)], err)
			}
			if r.MTU == probeSize+ipv4Overhead {
				return replied
			}
			replied = true
		}
	}
	viaProxy := func(b []byte) []byte { return proxied(t, client, b) }
	tests := []struct {
		name     string
		c        *net.UDPConn
		l        *Listener
		b        []byte
		probe    []byte
		answered bool
	}{
		{"trusted, full probe and v2 header (1520)", proxy, l, viaProxy(request1(maxDatagramIn)), viaProxy(request1(probeSize)), true},
		{"trusted, full probe and v1 header", proxy, l, proxiedV1(t, client, proxyDst, request1(maxDatagramIn)), viaProxy(request1(probeSize)), true},
		{"trusted, 256-byte header and 1492 (1748)", proxy, l, proxiedN(t, proxyReadRoom, client, request1(maxDatagramIn)), viaProxy(request1(probeSize)), true},
		{"trusted, 1749 bytes", proxy, l, proxiedN(t, proxyReadRoom, client, request1(maxDatagramIn+1)), viaProxy(request1(probeSize)), false},
		{"trusted, 1493 after a 255-byte header (1748)", proxy, l, proxiedN(t, proxyReadRoom-1, client, request1(maxDatagramIn+1)), viaProxy(request1(probeSize)), false},
		{"trusted, 1493 without header in a flow", proxy, l, request1(maxDatagramIn + 1), viaProxy(request1(probeSize)), false},
		{"trusted, 1492 without header in a flow", proxy, l, request1(maxDatagramIn), viaProxy(request1(probeSize)), true},
		{"untrusted, 1492", stranger, l, request1(maxDatagramIn), request1(probeSize), true},
		{"untrusted, 1493", stranger, l, request1(maxDatagramIn + 1), request1(probeSize), false},
		{"untrusted, 1748", stranger, l, request1(maxReadIn), request1(probeSize), false},
		{"no PROXY protocol, 1492", direct, plain, request1(maxDatagramIn), request1(probeSize), true},
		{"no PROXY protocol, 1493", direct, plain, request1(maxDatagramIn + 1), request1(probeSize), false},
	}
	for _, tc := range tests {
		before := tc.l.Stats().Oversize
		if got := answered(tc.c, tc.b, tc.probe); got != tc.answered {
			t.Errorf("%s (%d bytes): answered %v, want %v", tc.name, len(tc.b), got, tc.answered)
		}
		wantOver := before
		if !tc.answered {
			wantOver++
		}
		if got := tc.l.Stats().Oversize; got != wantOver {
			t.Errorf("%s: Oversize %d, want %d", tc.name, got, wantOver)
		}
	}
	if st := l.Stats(); st.ProxyUntrusted != 0 || st.ProxyNoFlow != 0 {
		t.Errorf("got %d untrusted and %d without a flow, want none", st.ProxyUntrusted, st.ProxyNoFlow)
	}
}
