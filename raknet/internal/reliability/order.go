package reliability

import (
	"errors"
	"fmt"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

var (
	errOrderQueueFull = errors.New("ordering queue limit exceeded")
	// errOrderFarAhead refuses a message too far ahead for its size: it
	// could not be delivered before the queue filled.
	errOrderFarAhead   = fmt.Errorf("%w: too far ahead for its size", errOrderQueueFull)
	errRefuseOrderFull = fmt.Errorf("handle datagram: %w", errOrderQueueFull)
	errRefuseFarAhead  = fmt.Errorf("handle datagram: %w", errOrderFarAhead)
)

// orderChannel is one of the 32 ordering channels on the receive side.
type orderChannel struct {
	expected uint64   // absolute order index delivered next
	ring     [][]byte // out-of-order messages; slot = index & (len-1)
	queued   int
	// Sequenced messages: the newest (order, sequence) pair delivered.
	seqOrder, seqIndex uint64
	seqAny             bool
}

// orderChannels holds the receive side of every ordering channel with a
// cap on queued messages per channel and on queued bytes in total. Channels
// are created on first use: Bedrock uses channel 0 only, and an idle
// connection should not carry 32 of them.
type orderChannels struct {
	ch       []orderChannel
	start    uint64 // the first order index of every channel
	maxQueue int
	bytes    int
	maxBytes int
}

// get returns channel, creating it (and those below it) on first use.
func (o *orderChannels) get(channel uint8) *orderChannel {
	for len(o.ch) <= int(channel) {
		o.ch = append(o.ch, orderChannel{expected: o.start})
	}
	return &o.ch[channel]
}

// sink takes delivered messages while it has room for them.
type sink interface {
	fits(size int) bool
	// deliver takes msg; owned reports that it is the caller's to keep,
	// else it is valid only during the call.
	deliver(msg []byte, owned bool)
}

// ordered handles a reliable-ordered message: it is delivered to s, then
// every queued message it unblocks, in order, while s has room; the rest
// wait in the queue, the one the channel delivers next included, until
// drain is called. Messages from the past are dropped. p is copied when
// queued unless owned is set: it is then the layer's own buffer (a
// reassembled message), kept as it is and handed on as owned.
//
// The byte cap is enforced by admit, before a frame is acknowledged, not
// here: a split message admitted fragment by fragment completes into the
// queue even when the queue filled meanwhile, because its fragments were
// acknowledged and the sender will never send it again. admit counts the
// bytes held for reassembly, so the queue still stays within its cap.
func (o *orderChannels) ordered(channel uint8, idx wire.Uint24, p []byte, owned bool, s sink) error {
	c := o.get(channel)
	abs := unwrap(c.expected, idx)
	switch {
	case abs < c.expected:
		return nil
	case abs == c.expected && s.fits(len(p)):
		c.expected++
		s.deliver(p, owned)
		if c.queued > 0 {
			o.drain(c, s)
		}
		return nil
	}
	ahead := abs - c.expected
	if ahead >= uint64(o.maxQueue) {
		// admit refused it already; expected only moves forward.
		return errOrderQueueFull
	}
	if ahead >= uint64(len(c.ring)) {
		size := ringSize(len(c.ring), ahead)
		o.bytes += (size - len(c.ring)) * slotSize
		ring := make([][]byte, size)
		for i := range uint64(len(c.ring)) {
			if m := c.ring[(c.expected+i)&uint64(len(c.ring)-1)]; m != nil {
				ring[(c.expected+i)&uint64(size-1)] = m
			}
		}
		c.ring = ring
	}
	slot := &c.ring[abs&uint64(len(c.ring)-1)]
	if *slot != nil {
		return nil
	}
	if !owned {
		p = append([]byte(nil), p...)
	}
	*slot = p
	c.queued++
	o.bytes += len(p)
	return nil
}

// drain delivers to s the messages queued at the head of c, in order,
// while s has room.
func (o *orderChannels) drain(c *orderChannel, s sink) {
	for c.queued > 0 {
		slot := &c.ring[c.expected&uint64(len(c.ring)-1)]
		if *slot == nil || !s.fits(len(*slot)) {
			break
		}
		m := *slot
		*slot = nil
		c.queued--
		o.bytes -= len(m)
		c.expected++
		// The queue's copy, or a reassembled message: the sink keeps it
		// without copying it again.
		s.deliver(m, true)
	}
	if c.queued == 0 && len(c.ring) > 0 {
		// Give the ring back once nothing waits: a burst of reordering
		// does not pin its memory.
		o.bytes -= len(c.ring) * slotSize
		c.ring = nil
	}
}

// ready reports whether c's next message is queued: it waits for room to
// be delivered, not for a missing datagram.
func (c *orderChannel) ready() bool {
	return c.queued > 0 && c.ring[c.expected&uint64(len(c.ring)-1)] != nil
}

// ringSize returns the ring size that holds index ahead.
func ringSize(cur int, ahead uint64) int {
	size := max(cur, minOrderRing)
	for uint64(size) <= ahead {
		size *= 2
	}
	return size
}

// growCost returns the bytes growing c's ring to hold index ahead costs.
func (o *orderChannels) growCost(c *orderChannel, ahead uint64) int {
	if ahead < uint64(len(c.ring)) {
		return 0
	}
	return (ringSize(len(c.ring), ahead) - len(c.ring)) * slotSize
}

// waits reports whether a message with order index idx on channel would
// have to wait in the queue: it is ahead of the one delivered next.
func (o *orderChannels) waits(channel uint8, idx wire.Uint24) bool {
	c := o.get(channel)
	return unwrap(c.expected, idx) > c.expected
}

// admit reports whether size bytes (a message with order index idx on
// channel, plus others admitted alongside it) fit the queue caps if the
// message has to wait. held is what reassembly holds: messages completed
// from it enter the queue unchecked, so it counts against the cap too.
func (o *orderChannels) admit(channel uint8, idx wire.Uint24, size, held int) error {
	c := o.get(channel)
	abs := unwrap(c.expected, idx)
	if abs <= c.expected {
		return nil
	}
	ahead := abs - c.expected
	// ahead*size: were every message before it as large, could the queue
	// hold them all? A message too far ahead for its size is refused even
	// while there is room, so room stays for those nearer the front,
	// which are delivered sooner and free what they hold.
	if ahead >= uint64(o.maxQueue) || ahead*uint64(max(size, 1)) > uint64(o.maxBytes) {
		return errRefuseFarAhead
	}
	if o.bytes+held+size+o.growCost(c, ahead) > o.maxBytes {
		return errRefuseOrderFull
	}
	return nil
}

// sequenced reports whether a sequenced message with the given order and
// sequence indexes is newer than the newest delivered on its channel, and
// if so records it.
func (o *orderChannels) sequenced(channel uint8, order, seq wire.Uint24) bool {
	ord, sq, newer := o.newer(channel, order, seq)
	if newer {
		c := &o.ch[channel]
		c.seqAny, c.seqOrder, c.seqIndex = true, ord, sq
	}
	return newer
}

// newer reports whether a sequenced message with the given order and
// sequence indexes is newer than the newest delivered on its channel, and
// returns its absolute indexes.
func (o *orderChannels) newer(channel uint8, order, seq wire.Uint24) (ord, sq uint64, ok bool) {
	c := o.get(channel)
	if !c.seqAny {
		return unwrap(c.expected, order), absBase + uint64(seq), true
	}
	ord = unwrap(c.seqOrder, order)
	sq = unwrap(c.seqIndex, seq)
	return ord, sq, ord > c.seqOrder || (ord == c.seqOrder && sq > c.seqIndex)
}
