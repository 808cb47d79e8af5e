package reliability

import (
	"errors"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

var errOrderQueueFull = errors.New("ordering queue limit exceeded")

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
// cap on queued messages per channel and on queued bytes in total.
type orderChannels struct {
	ch       [wire.NumOrderChannels]orderChannel
	maxQueue int
	bytes    int
	maxBytes int
}

// ordered handles a reliable-ordered message: deliver is called for it and
// every queued message it unblocks, in order. Messages from the past are
// dropped. p is copied when queued.
func (o *orderChannels) ordered(channel uint8, idx wire.Uint24, p []byte, deliver func([]byte)) error {
	c := &o.ch[channel]
	abs := unwrap(c.expected, idx)
	switch {
	case abs < c.expected:
		return nil
	case abs == c.expected:
		deliver(p)
		c.expected++
		for c.queued > 0 {
			slot := &c.ring[c.expected&uint64(len(c.ring)-1)]
			if *slot == nil {
				break
			}
			m := *slot
			*slot = nil
			c.queued--
			o.bytes -= len(m)
			c.expected++
			deliver(m)
		}
		return nil
	}
	ahead := abs - c.expected
	if ahead >= uint64(o.maxQueue) || o.bytes+len(p) > o.maxBytes {
		return errOrderQueueFull
	}
	if ahead >= uint64(len(c.ring)) {
		size := max(len(c.ring), 8)
		for uint64(size) <= ahead {
			size *= 2
		}
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
	*slot = append([]byte(nil), p...)
	c.queued++
	o.bytes += len(p)
	return nil
}

// sequenced reports whether a sequenced message with the given order and
// sequence indexes is newer than the newest delivered on its channel, and
// if so records it.
func (o *orderChannels) sequenced(channel uint8, order, seq wire.Uint24) bool {
	c := &o.ch[channel]
	if !c.seqAny {
		c.seqAny = true
		c.seqOrder, c.seqIndex = unwrap(c.expected, order), absBase+uint64(seq)
		return true
	}
	ord := unwrap(c.seqOrder, order)
	sq := unwrap(c.seqIndex, seq)
	if ord < c.seqOrder || (ord == c.seqOrder && sq <= c.seqIndex) {
		return false
	}
	c.seqOrder, c.seqIndex = ord, sq
	return true
}
