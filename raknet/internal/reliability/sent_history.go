package reliability

import (
	"errors"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// sentDatagram is a slot of the in-flight ring.
type sentDatagram struct {
	num      uint64 // the datagram number the slot holds
	inFlight bool
	retrans  bool // carries resent frames: no RTT sample (Karn's rule)
	// late is set once the datagram was deemed lost by a timeout or a
	// later ACK and its frames queued for resend: they stay listed, so an
	// ACK of this datagram arriving after all (the loss was spurious)
	// still acknowledges them wherever they are now.
	late   bool
	size   int
	sentAt time.Time
	frames []frameRef // frames that wait for its acknowledgement
}

// sentHistory is the ring of data datagrams sent, indexed by absolute
// datagram number, from the oldest that may be in flight to the next to
// send. Datagram numbers are never reused: a resend gets a new one.
type sentHistory struct {
	ring         []sentDatagram // power-of-two size
	oldest, next uint64
	start        uint64 // the first number sent
}

func newSentHistory(start uint64) sentHistory {
	return sentHistory{ring: make([]sentDatagram, initialSentSlots), oldest: start, next: start, start: start}
}

// slot returns the ring slot of absolute datagram number n.
func (h *sentHistory) slot(n uint64) *sentDatagram { return &h.ring[n&uint64(len(h.ring)-1)] }

// span returns how many numbers lie between the oldest that may be in
// flight and the next.
func (h *sentHistory) span() uint64 { return h.next - h.oldest }

// add returns the number and slot of the next datagram, growing the ring
// if it is full.
func (h *sentHistory) add() (uint64, *sentDatagram) {
	if h.span() >= uint64(len(h.ring)) {
		h.grow()
	}
	n := h.next
	h.next++
	s := h.slot(n)
	s.num, s.late = n, false
	return n, s
}

// lateFloor returns the oldest number whose slot may still hold a late
// datagram: older slots are reused by newer numbers.
func (h *sentHistory) lateFloor() uint64 {
	if n := uint64(len(h.ring)); h.next > n {
		return h.next - n
	}
	return 0
}

// grow doubles the ring, keeping slots at their numbers.
func (h *sentHistory) grow() {
	ring := make([]sentDatagram, len(h.ring)*2)
	for n := h.oldest; n < h.next; n++ {
		ring[n&uint64(len(ring)-1)] = *h.slot(n)
	}
	h.ring = ring
}

// advance moves oldest past the datagrams no longer in flight.
func (h *sentHistory) advance() {
	for h.oldest < h.next && !h.slot(h.oldest).inFlight {
		h.oldest++
	}
}

// firstInFlight returns the oldest datagram in flight, or nil.
func (h *sentHistory) firstInFlight() *sentDatagram {
	for n := h.oldest; n < h.next; n++ {
		if s := h.slot(n); s.inFlight {
			return s
		}
	}
	return nil
}

// ACKs and NACKs refused whole by check.
var (
	errAckSpan  = errors.New("handle datagram: ACK names datagrams outside those sent")
	errAckOrder = errors.New("handle datagram: ACK records unsorted or overlapping")
)

// check reports whether the records of a lie within the numbers sent and
// are sorted and disjoint, so that handling them visits each number of
// the history once at most, whatever the peer wrote: a hostile ACK of
// 4096 records, each naming the whole history, would otherwise cost
// millions of steps. It stops at the first bad record.
//
// The numbers sent are the last ackSpan up to the next to send, the
// already acknowledged among them included, since a peer names those
// again. A NACK may reach further back, to the first number sent: a
// receiver asks for the datagrams it refused for as long as it remembers
// them, and senders that keep a datagram until it is acknowledged or
// resent (go-raknet) still act on it; we have forgotten it, and it costs
// nothing. A NACK may also reach probeSpan past the last one sent: a
// receiver's silence probe names the numbers a sender uses next, and
// RakNet senders ignore what they have not used.
//
// Records are sorted by wire number, as RakNet's RangeList and go-raknet
// write them, or by their place in the sequence, as ours are; the two
// differ only across the 2^24 wrap. So the records may fall once to a
// lower place where their wire number rises, and all after the fall must
// lie below the first.
func (h *sentHistory) check(a *wire.Ack) error {
	lowest := max(h.next-min(h.next, ackSpan), h.start)
	highest := h.next // exclusive
	if a.NACK {
		lowest, highest = h.start, highest+probeSpan
	}
	ref := h.next - 1
	var first, prevHi uint64
	var prevEnd wire.Uint24
	fell := false
	for i, r := range a.Ranges {
		lo := unwrap(ref, r.Start)
		hi := lo + uint64(r.Len()) - 1
		if lo < lowest || hi >= highest {
			return errAckSpan
		}
		switch {
		case i == 0:
			first = lo
		case lo > prevHi && (!fell || hi < first):
		case !fell && r.Start > prevEnd && hi < first:
			fell = true
		default:
			return errAckOrder
		}
		prevHi, prevEnd = hi, r.End
	}
	return nil
}
