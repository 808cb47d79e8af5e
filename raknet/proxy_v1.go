package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
)

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
	// proxyV1Prefix is how every v1 header starts.
	proxyV1Prefix = "PROXY "
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

// Errors of parseProxyV1Header, values so that refusing allocates nothing.
var (
	errProxyV1Short  = fmt.Errorf("decode PROXY v1 header: %w", io.ErrUnexpectedEOF)
	errProxyV1None   = errors.New("decode PROXY v1 header: no \"PROXY \" prefix")
	errProxyV1Long   = errors.New("decode PROXY v1 header: no CRLF within 107 bytes")
	errProxyV1Fields = errors.New("decode PROXY v1 header: not \"PROXY <family> <source> <destination> <source port> <destination port>\"")
	errProxyV1Family = errors.New("decode PROXY v1 header: family is not TCP4, TCP6, UDP4, UDP6 or UNKNOWN")
	errProxyV1Addr   = errors.New("decode PROXY v1 header: address not of the family named")
	errProxyV1Port   = errors.New("decode PROXY v1 header: port not a decimal number from 0 to 65535")
)

// hasProxyV1Prefix reports whether b starts with a v1 header's "PROXY ".
// No RakNet datagram starts with 'P' (0x50): it is no offline message ID
// and lacks the connected datagrams' 0x80 flag.
func hasProxyV1Prefix(b []byte) bool {
	return len(b) >= len(proxyV1Prefix) && string(b[:len(proxyV1Prefix)]) == proxyV1Prefix
}

// hasAnyProxySignature reports whether b starts like a PROXY header of
// either version.
func hasAnyProxySignature(b []byte) bool {
	return hasProxySignature(b) || hasProxyV1Prefix(b)
}

// parseAnyProxyHeader decodes the PROXY header of either version that b
// starts with.
func parseAnyProxyHeader(b []byte) (proxyHeader, error) {
	if hasProxyV1Prefix(b) {
		return parseProxyV1Header(b)
	}
	return parseProxyHeader(b)
}

// parseProxyV1Header decodes the v1 header b starts with. Nothing past
// maxProxyV1Len is looked at. UNKNOWN (the proxy's own connection, or a
// family it cannot name) is reported as local, like a v2 LOCAL header;
// TCP4 and UDP4 need IPv4 addresses, TCP6 and UDP6 IPv6 ones (IPv4-mapped
// included). IPv4 headers are parsed without allocating.
func parseProxyV1Header(b []byte) (proxyHeader, error) {
	var h proxyHeader
	if !hasProxyV1Prefix(b) {
		if len(b) < len(proxyV1Prefix) && string(b) == proxyV1Prefix[:len(b)] {
			return h, errProxyV1Short
		}
		return h, errProxyV1None
	}
	line := b[:min(len(b), maxProxyV1Len)]
	end := bytes.Index(line, []byte("\r\n"))
	if end < 0 {
		if len(b) < maxProxyV1Len {
			return h, errProxyV1Short
		}
		return h, errProxyV1Long
	}
	rest := line[len(proxyV1Prefix):end]
	fam, rest, _ := bytes.Cut(rest, []byte(" "))
	var v6 bool
	switch string(fam) {
	case "UNKNOWN":
		// The rest of the line, if any, is to be ignored.
		h.local, h.n = true, end+2
		return h, nil
	case "TCP4", "UDP4":
	case "TCP6", "UDP6":
		v6 = true
	default:
		return h, errProxyV1Family
	}
	var f [4][]byte
	for i := range f {
		var ok bool
		// Three fields end in a space, the last at the CRLF.
		if f[i], rest, ok = bytes.Cut(rest, []byte(" ")); ok != (i < 3) || len(f[i]) == 0 {
			return h, errProxyV1Fields
		}
	}
	src, ok := parseV1Addr(f[0], v6)
	if !ok {
		return h, errProxyV1Addr
	}
	if _, ok := parseV1Addr(f[1], v6); !ok {
		return h, errProxyV1Addr
	}
	sport, ok := parseV1Port(f[2])
	if !ok {
		return h, errProxyV1Port
	}
	if _, ok := parseV1Port(f[3]); !ok {
		return h, errProxyV1Port
	}
	h.client, h.n = netip.AddrPortFrom(src, sport), end+2
	return h, nil
}

// parseV1Addr parses a v1 header's address of the given family.
func parseV1Addr(b []byte, v6 bool) (netip.Addr, bool) {
	if !v6 {
		return parseDottedQuad(b)
	}
	if bytes.IndexByte(b, ':') < 0 || bytes.IndexByte(b, '%') >= 0 {
		return netip.Addr{}, false // no IPv6 address, or one with a zone
	}
	a, err := netip.ParseAddr(string(b))
	return a, err == nil && a.Is6()
}

// parseDottedQuad parses an IPv4 address in dotted decimal, four numbers
// of 1 to 3 digits, each at most 255 and without leading zeros (which
// some read as octal), without allocating.
func parseDottedQuad(b []byte) (netip.Addr, bool) {
	var ip [4]byte
	for i := range ip {
		n, digits := 0, 0
		for len(b) > 0 && b[0] >= '0' && b[0] <= '9' && digits < 4 {
			n = n*10 + int(b[0]-'0')
			b, digits = b[1:], digits+1
		}
		if digits == 0 || digits > 3 || n > 255 || (digits > 1 && n < int(pow10[digits-1])) {
			return netip.Addr{}, false
		}
		ip[i] = byte(n)
		if i < 3 {
			if len(b) == 0 || b[0] != '.' {
				return netip.Addr{}, false
			}
			b = b[1:]
		}
	}
	return netip.AddrFrom4(ip), len(b) == 0
}

// pow10 holds the smallest number of 1, 2 and 3 digits.
var pow10 = [3]uint8{0, 10, 100}

// parseV1Port parses a decimal port of 1 to 5 digits, at most 65535.
func parseV1Port(b []byte) (uint16, bool) {
	if len(b) == 0 || len(b) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return uint16(n), n <= 65535
}
