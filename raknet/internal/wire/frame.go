package wire

import (
	"fmt"
)

// Reliability is the delivery guarantee of a frame. Values 5-7 are local
// variants that report acknowledgement to the sender; on the wire they are
// sent as 0, 2 and 3.
type Reliability uint8

// The eight reliabilities RakNet defines.
const (
	Unreliable Reliability = iota
	UnreliableSequenced
	Reliable
	ReliableOrdered
	ReliableSequenced
	UnreliableWithAckReceipt
	ReliableWithAckReceipt
	ReliableOrderedWithAckReceipt
)

var reliabilityNames = [...]string{
	"Unreliable", "UnreliableSequenced", "Reliable", "ReliableOrdered",
	"ReliableSequenced", "UnreliableWithAckReceipt", "ReliableWithAckReceipt",
	"ReliableOrderedWithAckReceipt",
}

// String returns the RakNet name of r.
func (r Reliability) String() string {
	if int(r) < len(reliabilityNames) {
		return reliabilityNames[r]
	}
	return fmt.Sprintf("Reliability(%d)", uint8(r))
}

// Valid reports whether r is one of the eight defined reliabilities.
func (r Reliability) Valid() bool { return r <= ReliableOrderedWithAckReceipt }

// Wire returns the reliability r is sent as: 5, 6 and 7 map to 0, 2 and 3.
func (r Reliability) Wire() Reliability {
	switch r {
	case UnreliableWithAckReceipt:
		return Unreliable
	case ReliableWithAckReceipt:
		return Reliable
	case ReliableOrderedWithAckReceipt:
		return ReliableOrdered
	}
	return r
}

// Reliable reports whether frames of r carry a reliable index and are
// resent until acknowledged.
func (r Reliability) Reliable() bool {
	switch r.Wire() {
	case Reliable, ReliableOrdered, ReliableSequenced:
		return true
	}
	return false
}

// Sequenced reports whether frames of r carry a sequence index.
func (r Reliability) Sequenced() bool {
	w := r.Wire()
	return w == UnreliableSequenced || w == ReliableSequenced
}

// Ordered reports whether frames of r carry an order index and channel
// (true for the sequenced kinds too, which share the channel's order index).
func (r Reliability) Ordered() bool {
	switch r.Wire() {
	case UnreliableSequenced, ReliableOrdered, ReliableSequenced:
		return true
	}
	return false
}

// AckReceipt reports whether r is one of the WithAckReceipt variants.
func (r Reliability) AckReceipt() bool { return r >= UnreliableWithAckReceipt && r.Valid() }

// Frame limits.
const (
	// NumOrderChannels is the number of ordering channels RakNet has.
	NumOrderChannels = 32
	// MaxFrameHeaderSize is the largest frame header: flags, bit length,
	// reliable, sequence and order indexes, channel and split metadata.
	MaxFrameHeaderSize = 1 + 2 + 3 + 3 + 3 + 1 + 4 + 2 + 4
	// MaxFramePayload is the largest payload a frame's 16-bit bit-length
	// field can describe.
	MaxFramePayload = 0xffff / 8
)

// The frame errors a peer can cause most often are values, not built per
// frame; the others are wrapped once.
var (
	errFrameTruncated = decodeErr("frame", errUnexpectedEOF)
	errFrameEmpty     = decodeErr("frame", fmt.Errorf("%w: empty payload", ErrInvalid))
)

const (
	frameSplitFlag    = 0x10
	frameReliableBits = 5
)

// Frame is one message (or one fragment of a split message) inside a data
// datagram. After Decode, Payload aliases the decoded buffer.
//
//	u8     reliability<<5 | 0x10 if split
//	u16 BE payload length in bits
//	u24    reliable index            if reliable (2, 3, 4)
//	u24    sequence index            if sequenced (1, 4)
//	u24    order index + u8 channel  if ordered or sequenced (1, 3, 4)
//	u32 BE split count, u16 BE split id, u32 BE split index   if split
//	payload
type Frame struct {
	Reliability   Reliability
	ReliableIndex Uint24
	SequenceIndex Uint24
	OrderIndex    Uint24
	OrderChannel  uint8
	Split         bool
	SplitCount    uint32
	SplitID       uint16
	SplitIndex    uint32
	Payload       []byte
}

// HeaderSize returns the size of the header f encodes with.
func (f *Frame) HeaderSize() int { return FrameHeaderSize(f.Reliability, f.Split) }

// FrameHeaderSize returns the header size of a frame with reliability r,
// split or not.
func FrameHeaderSize(r Reliability, split bool) int {
	n := 3
	if r.Reliable() {
		n += 3
	}
	if r.Sequenced() {
		n += 3
	}
	if r.Ordered() {
		n += 4
	}
	if split {
		n += 10
	}
	return n
}

// Size returns the encoded size of f.
func (f *Frame) Size() int { return f.HeaderSize() + len(f.Payload) }

// Append appends the encoding of f. The reliability is written in its wire
// form. Payloads above MaxFramePayload do not fit the bit-length field and
// are a programmer error: callers split messages before framing them.
func (f *Frame) Append(b []byte) []byte {
	if len(f.Payload) > MaxFramePayload {
		panic(fmt.Sprintf("wire: frame payload of %d bytes exceeds %d", len(f.Payload), MaxFramePayload))
	}
	r := f.Reliability.Wire()
	flags := byte(r) << frameReliableBits
	if f.Split {
		flags |= frameSplitFlag
	}
	b = append(b, flags)
	b = appendU16(b, uint16(len(f.Payload)*8))
	if r.Reliable() {
		b = AppendUint24(b, f.ReliableIndex)
	}
	if r.Sequenced() {
		b = AppendUint24(b, f.SequenceIndex)
	}
	if r.Ordered() {
		b = AppendUint24(b, f.OrderIndex)
		b = append(b, f.OrderChannel)
	}
	if f.Split {
		b = appendU32(b, f.SplitCount)
		b = appendU16(b, f.SplitID)
		b = appendU32(b, f.SplitIndex)
	}
	return append(b, f.Payload...)
}

// Decode decodes one frame from the start of b and returns the bytes
// consumed. Fields a reliability does not carry are zeroed. Reliabilities
// 5-7 on the wire are read as 0, 2 and 3. A zero-length payload, a bit
// length that rounds up past MaxFramePayload bytes, an order channel of 32
// or more, a split count of 0 and a split index outside the count are
// errors.
func (f *Frame) Decode(b []byte) (int, error) {
	r := reader{b: b}
	flags := r.u8()
	bits := r.u16()
	if r.err != nil {
		return 0, errFrameTruncated
	}
	rel := Reliability(flags >> frameReliableBits).Wire()
	*f = Frame{Reliability: rel, Split: flags&frameSplitFlag != 0}
	if rel.Reliable() {
		f.ReliableIndex = r.u24()
	}
	if rel.Sequenced() {
		f.SequenceIndex = r.u24()
	}
	if rel.Ordered() {
		f.OrderIndex = r.u24()
		f.OrderChannel = r.u8()
	}
	if f.Split {
		f.SplitCount = r.u32()
		f.SplitID = r.u16()
		f.SplitIndex = r.u32()
	}
	n := (int(bits) + 7) / 8
	f.Payload = r.bytes(n)
	switch {
	case r.err != nil:
		return 0, errFrameTruncated
	case n == 0:
		return 0, errFrameEmpty
	case n > MaxFramePayload:
		// 65529-65535 bits round up to 8192 bytes, which no bit length
		// describes exactly: no peer writes that, and Append could not.
		return 0, fmt.Errorf("decode frame: %w: bit length %d", ErrInvalid, bits)
	case f.OrderChannel >= NumOrderChannels:
		return 0, fmt.Errorf("decode frame: %w: order channel %d", ErrInvalid, f.OrderChannel)
	case f.Split && (f.SplitCount == 0 || f.SplitIndex >= f.SplitCount):
		return 0, fmt.Errorf("decode frame: %w: split index %d of %d", ErrInvalid, f.SplitIndex, f.SplitCount)
	}
	return r.off, nil
}
