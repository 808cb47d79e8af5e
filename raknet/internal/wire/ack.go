package wire

import (
	"fmt"
)

// ACK/NACK limits, checked on input.
const (
	// MaxAckRecords is the largest record count one ACK or NACK may carry.
	// A full 1492-byte datagram of range records holds 212; the cap leaves
	// room for peers that send larger datagrams.
	MaxAckRecords = 4096
	// MaxAckNumbers is the largest count of datagram numbers one ACK or NACK
	// may name in total. It is far above any send window, so a legitimate
	// peer never reaches it, and it stops one record from naming millions.
	MaxAckNumbers = 1 << 16
	// ackHeaderSize is the id byte and the u16 record count.
	ackHeaderSize   = 3
	ackRecordSingle = 4 // u8 1, u24 number
	ackRecordRange  = 7 // u8 0, u24 start, u24 end
)

// AckRange is an inclusive run of datagram numbers from Start forward to
// End. A range may cross the 2^24 wrap (Start > End numerically).
type AckRange struct {
	Start, End Uint24
}

// Len returns the count of numbers r names.
func (r AckRange) Len() uint32 { return r.Start.Distance(r.End) + 1 }

// Ack is an ACK (0xc0) or NACK (0xa0) datagram: a u16 BE record count, then
// records of u8 single(1)/range(0), u24 start, [u24 end].
type Ack struct {
	NACK   bool
	Ranges []AckRange
}

// id returns the first byte of a.
func (a *Ack) id() byte {
	if a.NACK {
		return FlagValid | FlagNACK
	}
	return FlagValid | FlagACK
}

// recordsSize returns the bytes r takes, counting the split at the wrap.
func recordsSize(r AckRange) int {
	switch {
	case r.Start == r.End:
		return ackRecordSingle
	case r.End < r.Start:
		// Split into [Start, MaxUint24] and [0, End].
		n := ackRecordRange
		if r.Start == MaxUint24 {
			n = ackRecordSingle
		}
		if r.End == 0 {
			return n + ackRecordSingle
		}
		return n + ackRecordRange
	}
	return ackRecordRange
}

// Append appends all of a's ranges as one datagram.
func (a *Ack) Append(b []byte) []byte {
	b, _ = a.AppendLimit(b, 0)
	return b
}

// AppendLimit appends as many of a's ranges as fit in limit bytes (0 means
// no limit), MaxAckRecords records and MaxAckNumbers numbers, so Decode
// takes what it writes, and returns the buffer and the count of ranges
// written. A range that crosses the 2^24 wrap is written as two records.
// At least one range is always written, so a limit below 17 bytes may be
// exceeded.
func (a *Ack) AppendLimit(b []byte, limit int) ([]byte, int) {
	start := len(b)
	b = append(b, a.id(), 0, 0)
	size, records, n, numbers := ackHeaderSize, 0, 0, 0
	for _, r := range a.Ranges {
		rs, rc := recordsSize(r), 1
		if r.End < r.Start {
			rc = 2
		}
		count := int(r.Len())
		if n > 0 && ((limit > 0 && size+rs > limit) || records+rc > MaxAckRecords || numbers+count > MaxAckNumbers) {
			break
		}
		size += rs
		numbers += count
		n++
		if r.End < r.Start {
			b = appendRecord(b, r.Start, MaxUint24)
			b = appendRecord(b, 0, r.End)
			records += 2
			continue
		}
		b = appendRecord(b, r.Start, r.End)
		records++
	}
	b[start+1], b[start+2] = byte(records>>8), byte(records)
	return b, n
}

func appendRecord(b []byte, start, end Uint24) []byte {
	if start == end {
		return AppendUint24(append(b, 1), start)
	}
	return AppendUint24(AppendUint24(append(b, 0), start), end)
}

// Decode decodes an ACK or NACK datagram into a, reusing a.Ranges. It fails
// when the record count exceeds MaxAckRecords, when the records name more
// than MaxAckNumbers numbers in total, or on a range record whose end is
// below its start: RakNet rejects those too (DS_RangeList.h), and a range
// that crosses the 2^24 wrap comes as two records, which Decode joins. So
// re-encoding a decoded Ack never takes more records or bytes than it came
// in.
func (a *Ack) Decode(b []byte) (int, error) {
	if len(b) < 1 {
		return 0, decodeErr("ACK", errUnexpectedEOF)
	}
	switch b[0] & (FlagValid | FlagACK | FlagNACK) {
	case FlagValid | FlagACK:
		a.NACK = false
	case FlagValid | FlagNACK:
		a.NACK = true
	default:
		return 0, decodeErr("ACK", fmt.Errorf("%w: flags %#02x", ErrInvalid, b[0]))
	}
	r := reader{b: b, off: 1}
	count := int(r.u16())
	if r.err != nil {
		return 0, decodeErr("ACK", r.err)
	}
	if count > MaxAckRecords {
		return 0, decodeErr("ACK", fmt.Errorf("%w: %d records", ErrTooMany, count))
	}
	// The smallest record is 4 bytes: refuse counts the input cannot hold
	// before growing anything.
	if count*ackRecordSingle > r.remaining() {
		return 0, decodeErr("ACK", errUnexpectedEOF)
	}
	a.Ranges = a.Ranges[:0]
	var total uint32
	for range count {
		single := r.bool()
		start := r.u24()
		end := start
		if !single {
			end = r.u24()
		}
		if r.err != nil {
			return 0, decodeErr("ACK", r.err)
		}
		if end < start {
			return 0, decodeErr("ACK", fmt.Errorf("%w: range end %d before start %d", ErrInvalid, end, start))
		}
		ar := AckRange{Start: start, End: end}
		l := ar.Len()
		if l > MaxAckNumbers || total+l > MaxAckNumbers {
			return 0, decodeErr("ACK", fmt.Errorf("%w: more than %d numbers", ErrTooMany, MaxAckNumbers))
		}
		total += l
		// Join the halves of a range that was split at the wrap.
		if n := len(a.Ranges); n > 0 && a.Ranges[n-1].End == MaxUint24 && start == 0 {
			a.Ranges[n-1].End = end
			continue
		}
		a.Ranges = append(a.Ranges, ar)
	}
	return r.off, nil
}
