package raknet

import "github.com/basaltmc/basalt/raknet/proxyproto"

// PROXY protocol version 1 (haproxy's proxy-protocol.txt, section 2.1),
// the text header nginx's stream module sends before 1.31.4 (and with
// `proxy_protocol on;` after), in front of a UDP flow's first datagram:
//
//	PROXY TCP4 203.0.113.7 192.0.2.1 51234 19132\r\n
//	PROXY TCP6 2001:db8::7 2001:db8::1 51234 19132\r\n
//	PROXY UNKNOWN\r\n
//
// nginx names the family TCP4 or TCP6 whatever the transport; UDP4 and
// UDP6, which other senders use, are taken the same way. The line is at
// most 107 bytes, CRLF included, and fields are separated by one space.
const (
	// maxProxyV1Len is the longest v1 header the specification allows:
	// "PROXY TCP6 " and two full IPv6 addresses and ports.
	maxProxyV1Len = 107
	// proxyReadRoom is how far a datagram from a trusted proxy may go
	// over maxDatagramIn, for the header in front of a full-size client
	// datagram (a 1464-byte MTU probe is a client's first): the longest
	// v1 header (107 bytes), or a v2 header for IPv6 (52 bytes) with
	// nginx's CRC32C TLV (7) and a unique ID TLV of up to 128 bytes
	// (131), 190 in all. What follows the header is still held to
	// maxDatagramIn.
	proxyReadRoom = 256
	// maxReadIn is the largest datagram any endpoint reads: maxDatagramIn
	// and room for a PROXY header in front, taken only from trusted
	// proxies (see endpoint.maxIn and reader.unproxy).
	maxReadIn = maxDatagramIn + proxyReadRoom
)

// Errors of parseProxyV1Header: proxyproto's, values, so that refusing
// allocates nothing.
var (
	errProxyV1Short  = proxyproto.ErrV1Short
	errProxyV1None   = proxyproto.ErrV1None
	errProxyV1Long   = proxyproto.ErrV1Long
	errProxyV1Fields = proxyproto.ErrV1Fields
	errProxyV1Family = proxyproto.ErrV1Family
	errProxyV1Addr   = proxyproto.ErrV1Addr
	errProxyV1Port   = proxyproto.ErrV1Port
)

// hasProxyV1Prefix reports whether b starts with a v1 header's "PROXY ".
// No RakNet datagram starts with 'P' (0x50): it is no offline message ID
// and lacks the connected datagrams' 0x80 flag.
func hasProxyV1Prefix(b []byte) bool { return proxyproto.HasV1Prefix(b) }

// hasAnyProxySignature reports whether b starts like a PROXY header of
// either version.
func hasAnyProxySignature(b []byte) bool { return proxyproto.HasSignature(b) }

// parseAnyProxyHeader decodes the PROXY header of either version that b
// starts with.
func parseAnyProxyHeader(b []byte) (proxyHeader, error) {
	if hasProxyV1Prefix(b) {
		return parseProxyV1Header(b)
	}
	return parseProxyHeader(b)
}

// parseProxyV1Header decodes the v1 header b starts with
// (proxyproto.ParseV1).
func parseProxyV1Header(b []byte) (proxyHeader, error) {
	h, err := proxyproto.ParseV1(b)
	return proxyHeader{local: h.Local, client: h.Client, n: h.Len}, err
}
