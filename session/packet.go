package session

import "fmt"

// IDs of the game packets this package reads or writes. A packet ID is 10 bits
// wide: the rest of the varuint32 packet header carries sub-client ids.
const (
	// IDLogin is the client's Login packet (0x01).
	IDLogin uint32 = 0x01
	// IDPlayStatus is the server's PlayStatus packet (0x02).
	IDPlayStatus uint32 = 0x02
	// IDServerToClientHandshake is the server's encryption handshake (0x03).
	IDServerToClientHandshake uint32 = 0x03
	// IDClientToServerHandshake is the client's encryption handshake reply
	// (0x04).
	IDClientToServerHandshake uint32 = 0x04
	// IDDisconnect is the Disconnect packet (0x05).
	IDDisconnect uint32 = 0x05
	// IDClientCacheStatus is the client's ClientCacheStatus packet (0x81).
	IDClientCacheStatus uint32 = 0x81
	// IDNetworkSettings is the server's NetworkSettings packet (0x8f).
	IDNetworkSettings uint32 = 0x8f
	// IDPacketViolationWarning is the client's report of a malformed packet
	// it received (0x9c).
	IDPacketViolationWarning uint32 = 0x9c
	// IDRequestNetworkSettings is the first packet a client sends (0xc1).
	IDRequestNetworkSettings uint32 = 0xc1
)

const (
	// maxPacketID is the largest id the 10-bit field of a header holds.
	maxPacketID = 0x3ff
	// maxSubClient is the largest sender or target sub-client id (2 bits).
	maxSubClient = 3
)

// Packet is one game packet of a batch: its header fields and the bytes that
// follow the header. A Packet handed to Handler.HandlePacket aliases the
// session's read buffers: Payload is valid only until HandlePacket returns,
// so a handler that keeps it must copy it.
type Packet struct {
	// ID is the packet id, 0 to 0x3ff.
	ID uint32
	// Sender is the sub-client (split-screen player) that sent the packet,
	// 0 to 3; 0 is the main client.
	Sender uint8
	// Target is the sub-client the packet is for, 0 to 3.
	Target uint8
	// Payload holds the packet's fields, without the header.
	Payload []byte
}

// header returns the varuint32 packet header: id | sender<<10 | target<<12.
func (p Packet) header() uint32 {
	return p.ID | uint32(p.Sender)<<10 | uint32(p.Target)<<12
}

// validate reports header fields too wide for their bits.
func (p Packet) validate() error {
	if p.ID > maxPacketID {
		return fmt.Errorf("packet id %#x exceeds %#x", p.ID, maxPacketID)
	}
	if p.Sender > maxSubClient || p.Target > maxSubClient {
		return fmt.Errorf("packet %#x: sub-client ids %d/%d exceed %d",
			p.ID, p.Sender, p.Target, maxSubClient)
	}
	return nil
}

// parseHeader splits a varuint32 packet header into its fields. Bits above
// the target field are ignored, as gophertunnel does.
func parseHeader(h uint32) (id uint32, sender, target uint8) {
	return h & maxPacketID, uint8(h >> 10 & maxSubClient), uint8(h >> 12 & maxSubClient)
}
