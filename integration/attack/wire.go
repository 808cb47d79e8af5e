package attack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// The few RakNet encodings the attacks need, written here because the
// listener's own codecs are internal to raknet. Each is golden-checked
// against the bytes of PROTOCOL.md in wire_test.go.

// RakNet message IDs: the first byte of an offline message, or of a
// message inside a frame.
const (
	IDConnectedPing               byte = 0x00
	IDUnconnectedPing             byte = 0x01
	IDConnectedPong               byte = 0x03
	IDOpenConnectionRequest1      byte = 0x05
	IDOpenConnectionReply1        byte = 0x06
	IDOpenConnectionRequest2      byte = 0x07
	IDOpenConnectionReply2        byte = 0x08
	IDConnectionRequest           byte = 0x09
	IDConnectionRequestAccepted   byte = 0x10
	IDAlreadyConnected            byte = 0x12
	IDNewIncomingConnection       byte = 0x13
	IDNoFreeIncomingConnections   byte = 0x14
	IDDisconnectionNotification   byte = 0x15
	IDConnectionBanned            byte = 0x17
	IDIncompatibleProtocolVersion byte = 0x19
	IDIPRecentlyConnected         byte = 0x1a
	IDUnconnectedPong             byte = 0x1c
	IDGamePacket                  byte = 0xfe
)

// Datagram flags (the first byte of every connected datagram).
const (
	flagValid       byte = 0x80
	flagACK         byte = 0x40
	flagNACK        byte = 0x20
	flagNeedsBAndAS byte = 0x04
	// dataFlags is what senders put on data datagrams (0x84).
	dataFlags = flagValid | flagNeedsBAndAS
)

// Magic is RakNet's offline message marker.
var Magic = [16]byte{0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78}

// Sizes of the encodings, for callers that compute amplification.
const (
	// UnconnectedPingSize is 0x01, i64 time, magic, u64 GUID.
	UnconnectedPingSize = 1 + 8 + 16 + 8
	// OCR1MinSize is an OpenConnectionRequest1 without padding: 0x05,
	// magic, u8 protocol. No real client sends one this small: its padding
	// is the probed MTU less 28 bytes, and the smallest MTU is 576.
	OCR1MinSize = 1 + 16 + 1
	// ipv4Overhead is the IP + UDP header size an MTU includes.
	ipv4Overhead = 28
	// datagramHeaderSize is the flags byte and the u24 datagram number.
	datagramHeaderSize = 4
	// MaxAckRecords is the most records an ACK may carry, as RakNet and
	// the listener decode them.
	MaxAckRecords = 4096
	// maxSystemAddresses is the system address count current Bedrock
	// clients send in NewIncomingConnection.
	maxSystemAddresses = 20
)

// AppendAddr appends a RakNet address: 04, the four bytes inverted, u16 BE
// port for IPv4; 06, u16 LE family 23, u16 BE port, u32 flow info, 16
// bytes, u32 scope ID for IPv6.
func AppendAddr(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().Unmap()
	if a.Is4() {
		ip := a.As4()
		b = append(b, 4, ^ip[0], ^ip[1], ^ip[2], ^ip[3])
		return binary.BigEndian.AppendUint16(b, ap.Port())
	}
	b = append(b, 6, 23, 0)
	b = binary.BigEndian.AppendUint16(b, ap.Port())
	b = append(b, 0, 0, 0, 0)
	ip := a.As16()
	b = append(b, ip[:]...)
	return append(b, 0, 0, 0, 0)
}

// AppendPing appends an UnconnectedPing (0x01).
func AppendPing(b []byte, t, guid int64) []byte {
	b = binary.BigEndian.AppendUint64(append(b, IDUnconnectedPing), uint64(t))
	b = append(b, Magic[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(guid))
}

// AppendOCR1 appends an OpenConnectionRequest1 of size bytes in all (at
// least OCR1MinSize): a real probe of MTU m is m-28 bytes.
func AppendOCR1(b []byte, protocol byte, size int) []byte {
	b = append(append(b, IDOpenConnectionRequest1), Magic[:]...)
	b = append(b, protocol)
	for range size - OCR1MinSize {
		b = append(b, 0)
	}
	return b
}

// AppendOCR2 appends an OpenConnectionRequest2. With hasCookie it carries
// the u32 cookie and the client-security bool (0) that a client echoes
// when Reply1 announced security; without, the layout protocol-10
// clients and servers without cookies use.
func AppendOCR2(b []byte, hasCookie bool, cookie uint32, server netip.AddrPort, mtu uint16, guid int64) []byte {
	b = append(append(b, IDOpenConnectionRequest2), Magic[:]...)
	if hasCookie {
		b = append(binary.BigEndian.AppendUint32(b, cookie), 0)
	}
	b = AppendAddr(b, server)
	b = binary.BigEndian.AppendUint16(b, mtu)
	return binary.BigEndian.AppendUint64(b, uint64(guid))
}

// AppendConnectionRequest appends a ConnectionRequest (0x09) message.
func AppendConnectionRequest(b []byte, guid, t int64) []byte {
	b = binary.BigEndian.AppendUint64(append(b, IDConnectionRequest), uint64(guid))
	return append(binary.BigEndian.AppendUint64(b, uint64(t)), 0)
}

// AppendNewIncomingConnection appends a NewIncomingConnection (0x13)
// message naming server and 20 system addresses, as Bedrock clients send
// it.
func AppendNewIncomingConnection(b []byte, server netip.AddrPort, ping, pong int64) []byte {
	b = AppendAddr(append(b, IDNewIncomingConnection), server)
	for range maxSystemAddresses {
		b = AppendAddr(b, netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(ping))
	return binary.BigEndian.AppendUint64(b, uint64(pong))
}

// AppendConnectedPong appends a ConnectedPong (0x03) message.
func AppendConnectedPong(b []byte, ping, pong int64) []byte {
	b = binary.BigEndian.AppendUint64(append(b, IDConnectedPong), uint64(ping))
	return binary.BigEndian.AppendUint64(b, uint64(pong))
}

// Reliability is a frame's reliability as it goes on the wire.
type Reliability uint8

// The reliabilities the attacks send.
const (
	Unreliable      Reliability = 0
	Reliable        Reliability = 2
	ReliableOrdered Reliability = 3
)

// Frame is one frame of a data datagram. Only the fields its reliability
// carries are written: ReliableIndex for Reliable and ReliableOrdered,
// OrderIndex and OrderChannel for ReliableOrdered, the split fields when
// SplitCount is not 0.
type Frame struct {
	Reliability   Reliability
	ReliableIndex uint32
	OrderIndex    uint32
	OrderChannel  uint8
	SplitCount    uint32
	SplitID       uint16
	SplitIndex    uint32
	Payload       []byte
}

// frameHeaderSize returns the header size of a frame of reliability r.
func frameHeaderSize(r Reliability, split bool) int {
	n := 3
	if r == Reliable || r == ReliableOrdered {
		n += 3
	}
	if r == ReliableOrdered {
		n += 4
	}
	if split {
		n += 10
	}
	return n
}

// maxFramePayload is the largest payload a frame's u16 bit length holds.
const maxFramePayload = 0xffff / 8

// Append appends the frame: u8 reliability<<5 | 0x10 if split, u16 BE
// payload length in bits, [u24 LE reliable index], [u24 LE order index,
// u8 channel], [u32 BE split count, u16 BE split ID, u32 BE split index],
// payload. A payload over 8,191 bytes is cut there, since the bit length
// cannot say more.
func (f *Frame) Append(b []byte) []byte {
	p := f.Payload[:min(len(f.Payload), maxFramePayload)]
	flags := byte(f.Reliability) << 5
	if f.SplitCount != 0 {
		flags |= 0x10
	}
	b = binary.BigEndian.AppendUint16(append(b, flags), uint16(len(p)*8))
	if f.Reliability == Reliable || f.Reliability == ReliableOrdered {
		b = appendU24(b, f.ReliableIndex)
	}
	if f.Reliability == ReliableOrdered {
		b = append(appendU24(b, f.OrderIndex), f.OrderChannel)
	}
	if f.SplitCount != 0 {
		b = binary.BigEndian.AppendUint32(b, f.SplitCount)
		b = binary.BigEndian.AppendUint16(b, f.SplitID)
		b = binary.BigEndian.AppendUint32(b, f.SplitIndex)
	}
	return append(b, p...)
}

// AppendDatagram appends a data datagram (0x84, u24 LE number) holding
// frames.
func AppendDatagram(b []byte, number uint32, frames ...Frame) []byte {
	b = appendU24(append(b, dataFlags), number)
	for i := range frames {
		b = frames[i].Append(b)
	}
	return b
}

// AckRange is an inclusive range of datagram numbers.
type AckRange struct{ Start, End uint32 }

// AppendAck appends an ACK (nack false, 0xc0) or NACK (0xa0) datagram:
// u16 BE record count, then per record u8 1 and a u24 number for a single
// number, u8 0 and two u24 for a range.
func AppendAck(b []byte, nack bool, ranges ...AckRange) []byte {
	id := flagValid | flagACK
	if nack {
		id = flagValid | flagNACK
	}
	b = binary.BigEndian.AppendUint16(append(b, id), uint16(len(ranges)))
	for _, r := range ranges {
		if r.Start == r.End {
			b = appendU24(append(b, 1), r.Start)
			continue
		}
		b = appendU24(appendU24(append(b, 0), r.Start), r.End)
	}
	return b
}

func appendU24(b []byte, v uint32) []byte { return append(b, byte(v), byte(v>>8), byte(v>>16)) }

func readU24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

var errShort = errors.New("truncated")

// Reply1 is what an OpenConnectionReply1 tells a client.
type Reply1 struct {
	ServerGUID int64
	Security   bool   // a cookie follows, to be echoed in Request2
	Cookie     uint32 // valid when Security
	MTU        uint16
}

// ParseReply1 decodes an OpenConnectionReply1: 0x06, magic, u64 server
// GUID, bool security, [u32 cookie], u16 MTU.
func ParseReply1(b []byte) (Reply1, error) {
	var r Reply1
	if len(b) < 1+16+8+1+2 || b[0] != IDOpenConnectionReply1 {
		return r, fmt.Errorf("parse OPEN_CONNECTION_REPLY_1: %w", errShort)
	}
	r.ServerGUID = int64(binary.BigEndian.Uint64(b[17:]))
	r.Security = b[25] != 0
	off := 26
	if r.Security {
		if len(b) < off+4+2 {
			return r, fmt.Errorf("parse OPEN_CONNECTION_REPLY_1: %w", errShort)
		}
		r.Cookie = binary.BigEndian.Uint32(b[off:])
		off += 4
	}
	r.MTU = binary.BigEndian.Uint16(b[off:])
	return r, nil
}

// ParseReply2MTU decodes the MTU an OpenConnectionReply2 grants: 0x08,
// magic, u64 server GUID, client address, u16 MTU, bool encryption.
func ParseReply2MTU(b []byte) (uint16, error) {
	if len(b) < 1+16+8+1 || b[0] != IDOpenConnectionReply2 {
		return 0, fmt.Errorf("parse OPEN_CONNECTION_REPLY_2: %w", errShort)
	}
	off := 1 + 16 + 8
	switch b[off] {
	case 4:
		off += 7
	case 6:
		off += 29
	default:
		return 0, fmt.Errorf("parse OPEN_CONNECTION_REPLY_2: address version %d", b[off])
	}
	if len(b) < off+2 {
		return 0, fmt.Errorf("parse OPEN_CONNECTION_REPLY_2: %w", errShort)
	}
	return binary.BigEndian.Uint16(b[off:]), nil
}

// parseFrames calls f for each frame of data datagram b (header
// included). It stops at the first frame that does not decode.
func parseFrames(b []byte, f func(fr *Frame)) error {
	if len(b) < datagramHeaderSize {
		return errShort
	}
	b = b[datagramHeaderSize:]
	for len(b) > 0 {
		if len(b) < 3 {
			return errShort
		}
		var fr Frame
		fr.Reliability = Reliability(b[0] >> 5)
		split := b[0]&0x10 != 0
		n := (int(binary.BigEndian.Uint16(b[1:])) + 7) / 8
		off := 3
		switch fr.Reliability {
		case 2, 3, 4, 6, 7: // reliable: a reliable index
			off += 3
		}
		switch fr.Reliability {
		case 1, 4: // sequenced: a sequence index
			off += 3
		}
		switch fr.Reliability {
		case 1, 3, 4, 7: // ordered or sequenced: an order index and channel
			if len(b) < off+4 {
				return errShort
			}
			fr.OrderIndex = readU24(b[off:])
			fr.OrderChannel = b[off+3]
			off += 4
		}
		if split {
			if len(b) < off+10 {
				return errShort
			}
			fr.SplitCount = binary.BigEndian.Uint32(b[off:])
			fr.SplitID = binary.BigEndian.Uint16(b[off+4:])
			fr.SplitIndex = binary.BigEndian.Uint32(b[off+6:])
			off += 10
		}
		if len(b) < off+n {
			return errShort
		}
		fr.Payload = b[off : off+n]
		f(&fr)
		b = b[off+n:]
	}
	return nil
}

// countAck returns how many datagram numbers an ACK or NACK datagram b
// names, or -1 if it does not decode.
func countAck(b []byte) int {
	if len(b) < 3 {
		return -1
	}
	records := int(binary.BigEndian.Uint16(b[1:]))
	b = b[3:]
	n := 0
	for range records {
		if len(b) < 4 {
			return -1
		}
		if b[0] != 0 {
			n++
			b = b[4:]
			continue
		}
		if len(b) < 7 {
			return -1
		}
		start, end := readU24(b[1:]), readU24(b[4:])
		n += int((end-start)&0xffffff) + 1
		b = b[7:]
	}
	return n
}

// IDName names an offline message or datagram by its first byte.
func IDName(id byte) string {
	switch {
	case id&flagValid != 0 && id&flagACK != 0:
		return "ACK"
	case id&flagValid != 0 && id&flagNACK != 0:
		return "NACK"
	case id&flagValid != 0:
		return "datagram"
	}
	switch id {
	case IDUnconnectedPong:
		return "UnconnectedPong"
	case IDOpenConnectionReply1:
		return "OpenConnectionReply1"
	case IDOpenConnectionReply2:
		return "OpenConnectionReply2"
	case IDAlreadyConnected:
		return "AlreadyConnected"
	case IDNoFreeIncomingConnections:
		return "NoFreeIncomingConnections"
	case IDConnectionBanned:
		return "ConnectionBanned"
	case IDIncompatibleProtocolVersion:
		return "IncompatibleProtocolVersion"
	case IDIPRecentlyConnected:
		return "IPRecentlyConnected"
	}
	return fmt.Sprintf("%#02x", id)
}
