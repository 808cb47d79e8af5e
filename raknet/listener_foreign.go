package raknet

import (
	"encoding/binary"
	"net/netip"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// stunCookie is the magic cookie of every STUN message (RFC 5389), at
// bytes 4-7.
const stunCookie = 0x2112A442

// IsForeign reports whether datagram b is not RakNet's but STUN or DTLS,
// which WebRTC's ICE sends on a socket it shares with RakNet (RFC 7983
// tells them apart by the first byte). A RakNet peer sends a server
// offline messages 0x01, 0x02, 0x05, 0x07 (and 0xFE 0xFD queries) or
// datagrams with bit 0x80 set, so:
//   - STUN starts 0x00-0x03, and 0x01 and 0x02 are also RakNet pings: a
//     STUN message must also carry the cookie at bytes 4-7, a length at
//     bytes 2-3 that is a multiple of 4 and exactly what follows its
//     20-byte header, and not RakNet's offline magic where a ping has
//     it. A RakNet ping is 33 bytes (13 after 20: no multiple of 4), and
//     its magic is checked besides, so a ping whose timestamp happens to
//     hold the cookie stays RakNet's.
//   - DTLS records start 20-63 (content types) and carry version major
//     0xFE next; nothing RakNet starts 20-63.
//
// Anything else, junk included, is left to RakNet, which drops it.
func IsForeign(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c <= 3:
		return isSTUN(b)
	case c >= 20 && c <= 63:
		return len(b) >= 13 && b[1] == 0xfe
	}
	return false
}

// isSTUN reports whether b is a STUN message and not a RakNet ping.
func isSTUN(b []byte) bool {
	if len(b) < 20 || binary.BigEndian.Uint32(b[4:8]) != stunCookie {
		return false
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if n%4 != 0 || n != len(b)-20 {
		return false
	}
	// An offline message (ping) has the magic after its id and 8-byte
	// timestamp.
	if len(b) >= 25 && [16]byte(b[9:25]) == wire.Magic {
		return false
	}
	return true
}

// WriteForeign sends datagram b, of the protocol ListenConfig.Foreign
// receives, to addr from the listener's socket.
func (l *Listener) WriteForeign(b []byte, to netip.AddrPort) error {
	return l.ep.write(b, to)
}
