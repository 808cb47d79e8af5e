package wire

import "fmt"

// Datagram header flags. The first byte of every connected datagram is a
// bit field: 0x80 marks a valid RakNet datagram, 0x40 an ACK, 0x20 a NACK;
// data datagrams may carry the other bits (senders use 0x84). Bit 0x10
// (packet pair) is obsolete: nothing here sets or reads it.
const (
	FlagValid          byte = 0x80
	FlagACK            byte = 0x40
	FlagNACK           byte = 0x20
	FlagContinuousSend byte = 0x08
	FlagNeedsBAndAS    byte = 0x04
)

// DatagramHeaderSize is the size of a data datagram header.
const DatagramHeaderSize = 4

// DatagramHeader starts every data datagram: flags and a u24 datagram
// number. Frames follow until the end of the datagram.
//
//	u8  flags (0x80 | 0x04 [| 0x08 continuous send])
//	u24 datagram number
type DatagramHeader struct {
	Flags  byte
	Number Uint24
}

// Append appends the header.
func (h *DatagramHeader) Append(b []byte) []byte {
	return AppendUint24(append(b, h.Flags), h.Number)
}

// Decode decodes a data datagram header. It fails on a datagram without the
// valid bit or with the ACK or NACK bit set.
func (h *DatagramHeader) Decode(b []byte) (int, error) {
	if len(b) < DatagramHeaderSize {
		return 0, decodeErr("datagram header", errUnexpectedEOF)
	}
	if b[0]&FlagValid == 0 || b[0]&(FlagACK|FlagNACK) != 0 {
		return 0, decodeErr("datagram header", fmt.Errorf("%w: flags %#02x", ErrInvalid, b[0]))
	}
	h.Flags = b[0]
	h.Number, _ = ReadUint24(b[1:])
	return DatagramHeaderSize, nil
}
