// Package proxyproto decodes PROXY protocol headers (haproxy's
// proxy-protocol.txt), version 1 (text) and version 2 (binary), as
// balancers put them in front of a UDP flow's first datagram or a TCP
// connection's first bytes. The RakNet listener reads them from trusted
// proxies' datagrams, NetherNet's signalling from trusted proxies'
// connections.
//
// Decoding never panics, allocates nothing for IPv4 headers, and looks no
// further than the header's own bounds (107 bytes for version 1, the
// length field, at most 4096, for version 2), checked against the input
// before anything past the fixed part is read.
package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
)

// Header is what a PROXY header says.
type Header struct {
	// Local is set for the LOCAL command (version 1: UNKNOWN): the
	// proxy's own traffic, a health check, on behalf of no client.
	Local bool
	// Client is the source address of the client the proxy speaks for.
	Client netip.AddrPort
	// Len is the header's length in bytes: the client's bytes follow.
	Len int
}

// Transport is what a version 2 header's PROXY command must name: the
// transport the header came over.
type Transport uint8

const (
	// Datagram accepts UDP over IPv4 or IPv6 (a RakNet client's).
	Datagram Transport = iota
	// Stream accepts TCP over IPv4 or IPv6 (a signalling client's).
	Stream
)

// Version 2 (section 2.2):
//
//	12 bytes  signature \r\n\r\n\0\r\nQUIT\n
//	 1 byte   version (high nibble, 2) and command (low: 0 LOCAL, 1 PROXY)
//	 1 byte   address family (high: 1 INET, 2 INET6) and transport (low: 1 STREAM, 2 DGRAM)
//	 2 bytes  length of what follows, big endian: addresses, then TLVs
//	          INET:  source 4, destination 4, source port 2, destination port 2
//	          INET6: source 16, destination 16, source port 2, destination port 2
const (
	sigLen    = 12
	fixedLen  = 16
	addrLenV4 = 12
	addrLenV6 = 36
	maxV2Len  = 4096
	cmdLocal  = 0x20
	cmdProxy  = 0x21
	famShift  = 4
	udpV4     = 0x12
	udpV6     = 0x22
	tcpV4     = 0x11
	tcpV6     = 0x21
	// MaxV1Len is the longest version 1 header: "PROXY TCP6 ", two full
	// IPv6 addresses and ports, CRLF.
	MaxV1Len = 107
	// MaxV2Len is the longest version 2 header accepted.
	MaxV2Len = fixedLen + maxV2Len
	v1Prefix = "PROXY "
)

// sig is the version 2 signature.
var sig = [sigLen]byte{'\r', '\n', '\r', '\n', 0, '\r', '\n', 'Q', 'U', 'I', 'T', '\n'}

// Errors of the decoders. They are values, so refusing allocates nothing.
var (
	ErrV2Short   = fmt.Errorf("decode PROXY header: %w", io.ErrUnexpectedEOF)
	ErrV2None    = errors.New("decode PROXY header: no PROXY v2 signature")
	ErrV2Command = errors.New("decode PROXY header: not version 2 LOCAL or PROXY")
	ErrV2Family  = errors.New("decode PROXY header: address family is not the transport's over IPv4 or IPv6")
	ErrV2Length  = errors.New("decode PROXY header: length too short for its addresses or over 4096")

	ErrV1Short  = fmt.Errorf("decode PROXY v1 header: %w", io.ErrUnexpectedEOF)
	ErrV1None   = errors.New("decode PROXY v1 header: no \"PROXY \" prefix")
	ErrV1Long   = errors.New("decode PROXY v1 header: no CRLF within 107 bytes")
	ErrV1Fields = errors.New("decode PROXY v1 header: not \"PROXY <family> <source> <destination> <source port> <destination port>\"")
	ErrV1Family = errors.New("decode PROXY v1 header: family is not TCP4, TCP6, UDP4, UDP6 or UNKNOWN")
	ErrV1Addr   = errors.New("decode PROXY v1 header: address not of the family named")
	ErrV1Port   = errors.New("decode PROXY v1 header: port not a decimal number from 0 to 65535")
)

// HasV2Signature reports whether b starts with the version 2 signature.
func HasV2Signature(b []byte) bool {
	return len(b) >= sigLen && [sigLen]byte(b[:sigLen]) == sig
}

// HasV1Prefix reports whether b starts with a version 1 header's
// "PROXY ".
func HasV1Prefix(b []byte) bool {
	return len(b) >= len(v1Prefix) && string(b[:len(v1Prefix)]) == v1Prefix
}

// HasSignature reports whether b starts like a header of either version.
func HasSignature(b []byte) bool { return HasV2Signature(b) || HasV1Prefix(b) }

// MaybeHeader reports whether b, the first bytes read, could still be
// the start of a header of either version: a prefix of the version 2
// signature or of "PROXY ".
func MaybeHeader(b []byte) bool {
	n := min(len(b), sigLen)
	if bytes.Equal(b[:n], sig[:n]) {
		return true
	}
	n = min(len(b), len(v1Prefix))
	return string(b[:n]) == v1Prefix[:n]
}

// Parse decodes the header of either version that b starts with; a
// version 2 PROXY command must name t's transport.
func Parse(b []byte, t Transport) (Header, error) {
	if HasV1Prefix(b) {
		return ParseV1(b)
	}
	return ParseV2(b, t)
}

// ParseV2 decodes the version 2 header b starts with. The length field is
// checked against b before anything is read past the fixed part; nothing
// is allocated. The PROXY command is accepted only for t's transport over
// IPv4 or IPv6, LOCAL with any family the protocol defines; TLVs are
// skipped unread.
func ParseV2(b []byte, t Transport) (Header, error) {
	var h Header
	if len(b) < fixedLen {
		return h, ErrV2Short
	}
	if !HasV2Signature(b) {
		return h, ErrV2None
	}
	v4, v6 := byte(udpV4), byte(udpV6)
	if t == Stream {
		v4, v6 = tcpV4, tcpV6
	}
	cmd, fam := b[12], b[13]
	length := int(binary.BigEndian.Uint16(b[14:16]))
	switch {
	case cmd != cmdLocal && cmd != cmdProxy:
		return h, ErrV2Command
	case cmd == cmdLocal && !knownFamily(fam):
		return h, ErrV2Family
	case cmd == cmdProxy && fam != v4 && fam != v6:
		return h, ErrV2Family
	case length > maxV2Len:
		return h, ErrV2Length
	case fixedLen+length > len(b):
		return h, ErrV2Short
	}
	h.Len = fixedLen + length
	if cmd == cmdLocal {
		h.Local = true
		return h, nil
	}
	a := b[fixedLen:h.Len]
	if fam == v4 {
		if len(a) < addrLenV4 {
			return h, ErrV2Length
		}
		h.Client = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[0:4])), binary.BigEndian.Uint16(a[8:10]))
		return h, nil
	}
	if len(a) < addrLenV6 {
		return h, ErrV2Length
	}
	h.Client = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[0:16])), binary.BigEndian.Uint16(a[32:34]))
	return h, nil
}

// knownFamily reports whether fam is a family-and-transport byte the
// protocol defines: UNSPEC, or TCP or UDP over IPv4, IPv6 or a Unix
// socket.
func knownFamily(fam byte) bool {
	if fam == 0 {
		return true
	}
	f, t := fam>>famShift, fam&0x0F
	return f >= 1 && f <= 3 && (t == 1 || t == 2)
}

// ParseV1 decodes the version 1 header b starts with. Nothing past
// MaxV1Len is looked at. UNKNOWN (the proxy's own connection, or a family
// it cannot name) is reported as Local; TCP4 and UDP4 need IPv4
// addresses, TCP6 and UDP6 IPv6 ones (IPv4-mapped included). nginx names
// the family TCP4 or TCP6 whatever the transport. IPv4 headers are parsed
// without allocating.
func ParseV1(b []byte) (Header, error) {
	var h Header
	if !HasV1Prefix(b) {
		if len(b) < len(v1Prefix) && string(b) == v1Prefix[:len(b)] {
			return h, ErrV1Short
		}
		return h, ErrV1None
	}
	line := b[:min(len(b), MaxV1Len)]
	end := bytes.Index(line, []byte("\r\n"))
	if end < 0 {
		if len(b) < MaxV1Len {
			return h, ErrV1Short
		}
		return h, ErrV1Long
	}
	rest := line[len(v1Prefix):end]
	fam, rest, _ := bytes.Cut(rest, []byte(" "))
	var v6 bool
	switch string(fam) {
	case "UNKNOWN":
		// The rest of the line, if any, is to be ignored.
		h.Local, h.Len = true, end+2
		return h, nil
	case "TCP4", "UDP4":
	case "TCP6", "UDP6":
		v6 = true
	default:
		return h, ErrV1Family
	}
	var f [4][]byte
	for i := range f {
		var ok bool
		// Three fields end in a space, the last at the CRLF.
		if f[i], rest, ok = bytes.Cut(rest, []byte(" ")); ok != (i < 3) || len(f[i]) == 0 {
			return h, ErrV1Fields
		}
	}
	src, ok := parseV1Addr(f[0], v6)
	if !ok {
		return h, ErrV1Addr
	}
	if _, ok := parseV1Addr(f[1], v6); !ok {
		return h, ErrV1Addr
	}
	sport, ok := parseV1Port(f[2])
	if !ok {
		return h, ErrV1Port
	}
	if _, ok := parseV1Port(f[3]); !ok {
		return h, ErrV1Port
	}
	h.Client, h.Len = netip.AddrPortFrom(src, sport), end+2
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
