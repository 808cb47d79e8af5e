package reliability

import (
	"errors"
	"fmt"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Budget is memory shared beyond one connection (a listener's, split into
// a share per connection), charged for every byte a Layer holds for its
// peer: see Config.Budget. It must be safe for concurrent use: the Layers
// of many connections share it.
type Budget interface {
	// Reserve reports whether n more bytes may be held and, if so, counts
	// them.
	Reserve(n int) bool
	// Release gives back n bytes counted by Reserve.
	Release(n int)
}

// ErrBudget refuses a frame whose bytes Config.Budget would not take:
// backpressure, like ErrHeldFull, not a fault of the peer. The datagram is
// asked for again once the budget may have room.
var ErrBudget = errors.New("memory budget exhausted")

var errRefuseBudget = fmt.Errorf("handle datagram: %w", ErrBudget)

// charge follows what a Layer reserved from its Budget. Between calls to
// the Layer the reservation is exactly what the receiver holds (see
// receiver.holds); during one it may be more, never less: a frame's bytes
// are reserved before it is handled, at most what handling it may add,
// and what it did not use is given back after.
type charge struct {
	b        Budget // nil: nothing is charged
	reserved int
	closed   bool
	refused  uint64 // frames refused for the budget
}

// reserve takes n bytes from the budget. keep more must be free besides,
// though they are not taken: room left for the message a channel waits
// for (see receiver.keep).
func (c *charge) reserve(n, keep int) bool {
	if c.closed || !c.b.Reserve(n+keep) {
		c.refused++
		return false
	}
	if keep > 0 {
		c.b.Release(keep)
	}
	c.reserved += n
	return true
}

// fits reports whether n bytes, with keep more free, could be reserved
// now, without taking them.
func (c *charge) fits(n, keep int) bool {
	if c.closed || !c.b.Reserve(n+keep) {
		return false
	}
	c.b.Release(n + keep)
	return true
}

// trim gives back what is reserved beyond the holds bytes held.
func (c *charge) trim(holds int) {
	if c.reserved > holds {
		c.b.Release(c.reserved - holds)
		c.reserved = holds
	}
}

// close gives back everything and refuses any more.
func (c *charge) close() {
	if c.reserved > 0 {
		c.b.Release(c.reserved)
		c.reserved = 0
	}
	c.closed = true
}

// holds returns the bytes the receiver holds for the peer, as charged to
// the budget: what the messages in reassembly will hold when complete
// (each is charged its estimated size from its first fragment on, as the
// receive limits count it, so one that was let in can complete), the
// ordering queues with their ring slots, and the messages delivered
// and not yet consumed.
func (r *receiver) holds() int { return r.asm.committed + r.order.bytes + r.held.bytes }

// need returns the most that handling admitted frame f adds to holds, and
// whether its message waits behind a missing one on its channel.
func (r *receiver) need(f *wire.Frame) (n int, waits bool) {
	if f.Reliability.Reliable() && r.relWin.seen(unwrap(r.relWin.base, f.ReliableIndex)) {
		return 0, false // a duplicate
	}
	if !f.Split {
		return r.cost(f, len(f.Payload))
	}
	a := &r.asm
	m := a.find(f.SplitID)
	switch {
	case m == nil && f.SplitCount == 1:
		return r.cost(f, len(f.Payload))
	case m == nil:
		// A new message is committed its estimated size.
		rel := f.Reliability
		waits = rel.Ordered() && !rel.Sequenced() && r.order.waits(f.OrderChannel, f.OrderIndex)
		return max(a.estimate(f), int(f.SplitCount)*partOverhead+len(f.Payload)), waits
	case f.SplitCount != m.count || m.has(f.SplitIndex):
		return 0, false // refused by the assembler, or a duplicate
	case m.completedBy(f):
		// What it committed goes; the whole message comes.
		n, waits = r.cost(&m.header, m.sizeWith(f))
		return max(0, n-m.share()), waits
	}
	// Only what goes beyond the estimate.
	rel := m.header.Reliability
	waits = rel.Ordered() && !rel.Sequenced() && r.order.waits(m.header.OrderChannel, m.header.OrderIndex)
	return max(m.est, m.bytes+len(f.Payload)) - m.share(), waits
}

// cost returns what a whole message of size bytes with the ordering fields
// of h adds to holds when handled now: its size when delivered or queued,
// with the ring's growth when queued, nothing when dropped as old or
// stale; and whether it waits behind a missing one.
func (r *receiver) cost(h *wire.Frame, size int) (int, bool) {
	rel := h.Reliability
	switch {
	case rel.Sequenced():
		if _, _, newer := r.order.newer(h.OrderChannel, h.OrderIndex, h.SequenceIndex); !newer {
			return 0, false
		}
	case rel.Ordered():
		c := r.order.get(h.OrderChannel)
		abs := unwrap(c.expected, h.OrderIndex)
		switch {
		case abs < c.expected:
			return 0, false
		case abs > c.expected:
			return size + r.order.growCost(c, abs-c.expected), true
		case !r.fits(size):
			// It waits at the head of its channel for the reader.
			return size + r.order.growCost(c, 0), false
		}
	}
	return size, false
}

// keep returns how much of the budget must stay free when n bytes of a
// message that waits behind a missing one are taken: a third of what
// waits (in reassembly and the ordering queues) with them, at least a
// datagram. So the messages that wait take at most three quarters of the
// room the budget gives, the rest staying for the message their channel
// waits for, whose delivery drains them: as the receive limits keep a
// quarter of the reassembly bytes and an eighth of its slots. Without it,
// messages from ahead of a gap could take the whole share of the
// connection, and the one they wait for would be refused for good.
func (r *receiver) keep(n, maxDatagram int) int {
	return max(maxDatagram, (r.asm.committed+r.order.bytes+n)/3)
}

// close drops everything the receiver holds for the peer.
func (r *receiver) close() {
	r.asm.list, r.asm.byID, r.asm.peak = nil, nil, 0
	r.asm.bytes, r.asm.committed = 0, 0
	r.asm.oldestNext = time.Time{}
	for i := range r.order.ch {
		r.order.ch[i].ring, r.order.ch[i].queued = nil, 0
	}
	r.order.bytes = 0
	r.held.msgs, r.held.bytes = 0, 0
	clear(r.out)
	r.out, r.head = nil, 0
}
