package proxyproto

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	goproxy "github.com/pires/go-proxyproto"
)

// header encodes a go-proxyproto header of version v for the transport.
func header(t testing.TB, v byte, tr goproxy.AddressFamilyAndProtocol, src, dst string) []byte {
	t.Helper()
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	h := &goproxy.Header{Version: v, Command: goproxy.PROXY, TransportProtocol: tr}
	if tr.IsStream() {
		h.SourceAddr, h.DestinationAddr = net.TCPAddrFromAddrPort(s), net.TCPAddrFromAddrPort(d)
	} else {
		h.SourceAddr, h.DestinationAddr = net.UDPAddrFromAddrPort(s), net.UDPAddrFromAddrPort(d)
	}
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Both versions, over both transports: a stream header is taken only
// where a stream's is wanted, and a datagram's only for datagrams.
func TestParseTransports(t *testing.T) {
	src := "203.0.113.7:51234"
	for _, tc := range []struct {
		name string
		b    []byte
		tr   Transport
		err  error
	}{
		{"v2 TCP4 on a stream", header(t, 2, goproxy.TCPv4, src, "192.0.2.1:19132"), Stream, nil},
		{"v2 TCP6 on a stream", header(t, 2, goproxy.TCPv6, "[2001:db8::7]:51234", "[2001:db8::1]:19132"), Stream, nil},
		{"v2 UDP4 on a datagram", header(t, 2, goproxy.UDPv4, src, "192.0.2.1:19132"), Datagram, nil},
		{"v2 UDP4 on a stream", header(t, 2, goproxy.UDPv4, src, "192.0.2.1:19132"), Stream, ErrV2Family},
		{"v2 TCP4 on a datagram", header(t, 2, goproxy.TCPv4, src, "192.0.2.1:19132"), Datagram, ErrV2Family},
		{"v1 TCP4 on a stream", header(t, 1, goproxy.TCPv4, src, "192.0.2.1:19132"), Stream, nil},
		{"v1 TCP4 on a datagram (nginx)", header(t, 1, goproxy.TCPv4, src, "192.0.2.1:19132"), Datagram, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append(tc.b, "GET / HTTP/1.1\r\n"...)
			h, err := Parse(b, tc.tr)
			if !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if h.Len != len(tc.b) || h.Local || h.Client.Port() != 51234 {
				t.Errorf("got %+v, want the client's address and a %d-byte header", h, len(tc.b))
			}
			for i := range len(tc.b) {
				if _, err := Parse(tc.b[:i], tc.tr); err == nil {
					t.Fatalf("a %d-byte prefix parsed", i)
				}
				if !MaybeHeader(tc.b[:i]) && i < 12 {
					t.Fatalf("a %d-byte prefix not seen as a possible header", i)
				}
			}
		})
	}
	if MaybeHeader([]byte("GET ")) || MaybeHeader([]byte("POST /v1")) {
		t.Error("an HTTP request taken for a possible header")
	}
}

// Headers are hostile: parsing never panics and never reports a header
// longer than its input; what go-proxyproto parses from a stream, this
// parses to the same client.
func FuzzParse(f *testing.F) {
	f.Add(header(f, 2, goproxy.TCPv4, "203.0.113.7:1", "192.0.2.1:2"), true)
	f.Add(header(f, 2, goproxy.UDPv6, "[2001:db8::7]:1", "[2001:db8::1]:2"), false)
	f.Add(header(f, 1, goproxy.TCPv6, "[2001:db8::7]:1", "[2001:db8::1]:2"), true)
	f.Add([]byte("PROXY UNKNOWN\r\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, stream bool) {
		tr := Datagram
		if stream {
			tr = Stream
		}
		h, err := Parse(b, tr)
		if err != nil {
			return
		}
		if h.Len <= 0 || h.Len > len(b) {
			t.Fatalf("a %d-byte header from %d bytes", h.Len, len(b))
		}
		if !h.Local && !h.Client.IsValid() {
			t.Fatal("a PROXY header with no client")
		}
	})
}
