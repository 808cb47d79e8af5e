package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	proxyproto "github.com/pires/go-proxyproto"
)

// proxiedV1 returns the PROXY v1 header go-proxyproto writes for a flow
// from client to dst (TCP4 or TCP6, as nginx names UDP flows too),
// followed by payload.
func proxiedV1(t testing.TB, client, dst netip.AddrPort, payload []byte) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(1, net.TCPAddrFromAddrPort(client), net.TCPAddrFromAddrPort(dst))
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, payload...)
}

// longestV1 is the longest v1 header the specification allows.
const longestV1 = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"

func TestParseProxyV1HeaderGolden(t *testing.T) {
	payload := []byte{wire.IDOpenConnectionRequest1, 0, 0xff}
	tests := []struct {
		name   string
		header string
		client string // "" for a local header
	}{
		// What Debian's nginx 1.22.1 writes for a UDP flow.
		{"nginx IPv4", "PROXY TCP4 127.0.0.1 127.0.0.1 51234 19132\r\n", "127.0.0.1:51234"},
		{"nginx IPv6", "PROXY TCP6 ::1 ::1 40000 19133\r\n", "[::1]:40000"},
		{"UDP4", "PROXY UDP4 203.0.113.7 192.0.2.1 5000 19132\r\n", "203.0.113.7:5000"},
		{"UDP6", "PROXY UDP6 2001:db8::7 2001:db8::1 6000 19133\r\n", "[2001:db8::7]:6000"},
		{"mapped in TCP6", "PROXY TCP6 ::ffff:203.0.113.7 ::ffff:192.0.2.1 5000 19132\r\n", "[::ffff:203.0.113.7]:5000"},
		{"extreme ports", "PROXY TCP4 255.255.255.255 0.0.0.0 65535 0\r\n", "255.255.255.255:65535"},
		{"unknown", "PROXY UNKNOWN\r\n", ""},
		{"unknown with addresses", "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n", ""},
		{"longest", longestV1, ""},
		{"longest address", "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
			"[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(tc.header), payload...)
			h, err := parseProxyV1Header(b)
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if h.n != len(tc.header) {
				t.Errorf("length: got %d, want %d", h.n, len(tc.header))
			}
			if !bytes.Equal(b[h.n:], payload) {
				t.Errorf("payload: got %x, want %x", b[h.n:], payload)
			}
			if tc.client == "" {
				if !h.local || h.client.IsValid() {
					t.Errorf("got local %v client %v, want a local header", h.local, h.client)
				}
				return
			}
			if want := netip.MustParseAddrPort(tc.client); h.local || h.client != want {
				t.Errorf("got local %v client %v, want %v", h.local, h.client, want)
			}
			// The same through the either-version entry point.
			if h2, err := parseAnyProxyHeader(b); err != nil || h2 != h {
				t.Errorf("parseAnyProxyHeader: got %+v, %v; want %+v", h2, err, h)
			}
		})
	}
	if n := len(longestV1); n != maxProxyV1Len {
		t.Errorf("longest header: %d bytes, maxProxyV1Len %d", n, maxProxyV1Len)
	}
}

func TestParseProxyV1HeaderFromEncoder(t *testing.T) {
	payload := []byte{wire.IDUnconnectedPing, 1, 2, 3}
	for _, c := range []struct{ client, dst string }{
		{"203.0.113.7:5000", "192.0.2.1:19132"},
		{"[2001:db8::7]:6000", "[2001:db8::1]:19133"},
	} {
		client, dst := netip.MustParseAddrPort(c.client), netip.MustParseAddrPort(c.dst)
		b := proxiedV1(t, client, dst, payload)
		h, err := parseProxyV1Header(b)
		if err != nil || h.local || h.client != client || !bytes.Equal(b[h.n:], payload) {
			t.Errorf("%s: got %+v, %v, rest %x; want client %v, rest %x", b[:len(b)-len(payload)], h, err, b[h.n:], client, payload)
		}
	}
}

func TestParseProxyV1HeaderRefuses(t *testing.T) {
	tests := []struct {
		name, header string
		want         error
	}{
		{"empty", "", errProxyV1Short},
		{"prefix cut", "PRO", errProxyV1Short},
		{"no prefix", "\x05RakNet", errProxyV1None},
		{"lower case", "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", errProxyV1None},
		{"no CRLF yet", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2", errProxyV1Short},
		{"LF only", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n" + strings.Repeat("x", 120), errProxyV1Long},
		{"CR only", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r" + strings.Repeat("x", 120), errProxyV1Long},
		{"CRLF past 107", "PROXY TCP6 " + strings.Repeat("f", 100) + "\r\n", errProxyV1Long},
		{"wrong family", "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", errProxyV1Family},
		{"no family", "PROXY \r\n", errProxyV1Family},
		{"IPv6 in TCP4", "PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"IPv6 destination in TCP4", "PROXY TCP4 1.2.3.4 ::1 1 2\r\n", errProxyV1Addr},
		{"IPv4 in TCP6", "PROXY TCP6 1.2.3.4 ::1 1 2\r\n", errProxyV1Addr},
		{"IPv4 in UDP6", "PROXY UDP6 ::1 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"zone", "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", errProxyV1Addr},
		{"octet too big", "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"leading zero", "PROXY TCP4 1.2.3.04 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"three octets", "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"five octets", "PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"a name", "PROXY TCP4 localhost 5.6.7.8 1 2\r\n", errProxyV1Addr},
		{"port too big", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", errProxyV1Port},
		{"port too long", "PROXY TCP4 1.2.3.4 5.6.7.8 000001 2\r\n", errProxyV1Port},
		{"signed port", "PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n", errProxyV1Port},
		{"destination port", "PROXY TCP4 1.2.3.4 5.6.7.8 1 x\r\n", errProxyV1Port},
		{"missing port", "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", errProxyV1Fields},
		{"extra field", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", errProxyV1Fields},
		{"trailing space", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", errProxyV1Fields},
		{"double space", "PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n", errProxyV1Fields},
		{"family only", "PROXY TCP4\r\n", errProxyV1Fields},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseProxyV1Header([]byte(tc.header))
			if !errors.Is(err, tc.want) && err != tc.want {
				t.Errorf("got %+v, %v; want %v", h, err, tc.want)
			}
		})
	}
}

// TestParseProxyV1HeaderTruncated cuts a header with its payload at every
// length: a cut inside the line is too short, a cut after it parses.
func TestParseProxyV1HeaderTruncated(t *testing.T) {
	const header = "PROXY TCP4 203.0.113.7 192.0.2.1 51234 19132\r\n"
	b := []byte(header + "\x05payload")
	for n := range len(b) + 1 {
		h, err := parseProxyV1Header(b[:n])
		if n < len(header) {
			if !errors.Is(err, errProxyV1Short) {
				t.Errorf("%d bytes: got %+v, %v; want %v", n, h, err, errProxyV1Short)
			}
			continue
		}
		if err != nil || h.n != len(header) {
			t.Errorf("%d bytes: got %+v, %v; want the header", n, h, err)
		}
	}
}

func TestParseProxyV1HeaderAllocs(t *testing.T) {
	b := []byte("PROXY TCP4 203.0.113.7 192.0.2.1 51234 19132\r\n\x84\x00\x00\x00")
	var err error
	if n := testing.AllocsPerRun(100, func() { _, err = parseProxyV1Header(b) }); n != 0 || err != nil {
		t.Errorf("IPv4 header: %v allocations, err %v; want 0, nil", n, err)
	}
	bad := []byte("PROXY TCP4 203.0.113.7 192.0.2.1 51234 99999\r\n")
	if n := testing.AllocsPerRun(100, func() { _, err = parseProxyV1Header(bad) }); n != 0 || err == nil {
		t.Errorf("refusal: %v allocations, err %v; want 0 and an error", n, err)
	}
}

// TestProxyGateV1 runs v1 headers through a listener's gate: the same
// trust, flow and counting rules as v2, header on the first datagram only
// (nginx) or on every one.
func TestProxyGateV1(t *testing.T) {
	trusted := netip.MustParseAddrPort("10.0.0.1:40000")
	stranger := netip.MustParseAddrPort("198.51.100.9:40000")
	client := netip.MustParseAddrPort("203.0.113.7:5000")
	dst := netip.MustParseAddrPort("10.0.0.2:19132")
	g, err := newProxyGate([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, DefaultTimeout)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte{wire.FlagValid, 0, 0, 0}
	now := time.Unix(1000, 0)

	// Untrusted source: refused unparsed, even a well-formed header.
	if b, _, v := g.unwrap(proxiedV1(t, client, dst, data), stranger, now); v != proxyUntrusted || b != nil {
		t.Errorf("untrusted source: got %v %x, want proxyUntrusted", v, b)
	}
	// A trusted proxy without a flow yet: dropped.
	if _, _, v := g.unwrap(data, trusted, now); v != proxyNoFlow {
		t.Errorf("no flow: got %v, want proxyNoFlow", v)
	}
	// First datagram with the header names the client and starts a flow.
	b, from, v := g.unwrap(proxiedV1(t, client, dst, data), trusted, now)
	if v != proxyClient || from != client || !bytes.Equal(b, data) {
		t.Errorf("first datagram: got %v %v %x, want proxyClient %v %x", v, from, b, client, data)
	}
	// Later datagrams without it are the client's.
	if b, from, v := g.unwrap(data, trusted, now.Add(time.Millisecond)); v != proxyClient || from != client || !bytes.Equal(b, data) {
		t.Errorf("later datagram: got %v %v %x, want proxyClient %v", v, from, b, client)
	}
	// Every-datagram style: each header still names the client.
	if b, from, v := g.unwrap(proxiedV1(t, client, dst, data), trusted, now.Add(2*time.Millisecond)); v != proxyClient || from != client || !bytes.Equal(b, data) {
		t.Errorf("repeated header: got %v %v %x", v, from, b)
	}
	// A mapped IPv4 client is the IPv4 client, as in v2.
	mapped := []byte("PROXY TCP6 ::ffff:203.0.113.7 ::ffff:10.0.0.2 5000 19132\r\n")
	if _, from, v := g.unwrap(append(mapped, data...), trusted, now.Add(3*time.Millisecond)); v != proxyClient || from != client {
		t.Errorf("mapped client: got %v %v, want %v", v, from, client)
	}
	// UNKNOWN is the proxy's own: dropped like LOCAL.
	if _, _, v := g.unwrap(append([]byte("PROXY UNKNOWN\r\n"), data...), trusted, now); v != proxyLocal {
		t.Errorf("UNKNOWN: got %v, want proxyLocal", v)
	}
	// A header and nothing after it, or a broken one: malformed.
	for _, bad := range [][]byte{
		proxiedV1(t, client, dst, nil),
		[]byte("PROXY TCP4 203.0.113.7 10.0.0.2 5000\r\n\x84"),
		[]byte("PROXY TCP4 203.0.113.7 10.0.0.2 5000 19132"),
	} {
		if _, _, v := g.unwrap(bad, trusted, now); v != proxyMalformed {
			t.Errorf("%q: got %v, want proxyMalformed", bad, v)
		}
	}
}

// Clients behind nginx-style v1 headers, on each datagram or on a flow's
// first only, connect through a listener and are known by their own
// addresses.
func TestListenerProxyV1Clients(t *testing.T) {
	l, rc := proxyListener(t, 0)
	now := time.Now()
	peers := []*proxiedPeer{
		{t: t, l: l, rc: rc, client: netip.MustParseAddrPort("127.0.9.1:4000"), via: ap(30000), v1: true},
		{t: t, l: l, rc: rc, client: netip.MustParseAddrPort("127.0.9.2:4001"), via: ap(30001), v1: true, first: true},
	}
	for i, p := range peers {
		p.open(int64(-1-i), now)
		p.connect(int64(-1-i), now)
	}
	want := map[netip.AddrPort]bool{peers[0].client: true, peers[1].client: true}
	for range peers {
		c := acceptTest(t, l)
		ra := c.RemoteAddr().(*net.UDPAddr).AddrPort()
		if !want[ra] {
			t.Fatalf("accepted %v, want one of %v", ra, want)
		}
		delete(want, ra)
	}
	if st := l.Stats(); st.Accepted != 2 || st.ProxyNoFlow != 0 || st.ProxyUntrusted != 0 || st.Dropped != 0 {
		t.Errorf("got %+v, want 2 accepted and nothing refused", st)
	}
}

// FuzzProxyV1Header holds the v1 parser to its contract on any input:
// no panic, a header that ends in CRLF within 107 bytes, and for a client
// a line that, written back in canonical form, parses to the same client.
func FuzzProxyV1Header(f *testing.F) {
	for _, s := range []string{
		"PROXY TCP4 127.0.0.1 127.0.0.1 51234 19132\r\n\x05",
		"PROXY TCP6 ::1 ::1 40000 19133\r\n\x84\x00",
		"PROXY UDP4 203.0.113.7 192.0.2.1 5000 19132\r\n",
		"PROXY UNKNOWN\r\n",
		"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
		"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",
		"PROXY TCP4 1.2.3.4",
		longestV1,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseProxyV1Header(b)
		if err != nil {
			if h.n != 0 || h.client.IsValid() || h.local {
				t.Fatalf("error %v with a result %+v", err, h)
			}
			return
		}
		if h.n < len("PROXY UNKNOWN\r\n") || h.n > maxProxyV1Len || h.n > len(b) || string(b[h.n-2:h.n]) != "\r\n" {
			t.Fatalf("header of %d bytes in %q", h.n, b)
		}
		if bytes.Contains(b[:h.n-2], []byte("\r\n")) {
			t.Fatalf("header %q runs past its first CRLF", b[:h.n])
		}
		if h.local {
			return
		}
		if !h.client.IsValid() {
			t.Fatalf("no client from %q", b[:h.n])
		}
		fields := strings.Split(string(b[:h.n-2]), " ")
		if len(fields) != 6 {
			t.Fatalf("accepted %q with %d fields", b[:h.n], len(fields))
		}
		canon := fmt.Sprintf("PROXY %s %s %s %d %s\r\n", fields[1], h.client.Addr(), fields[3], h.client.Port(), fields[5])
		h2, err := parseProxyV1Header([]byte(canon))
		if err != nil || h2.client != h.client {
			t.Fatalf("%q parsed to %v, its canonical %q to %v, %v", b[:h.n], h.client, canon, h2.client, err)
		}
	})
}
