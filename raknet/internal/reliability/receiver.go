package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// receiver takes the frames of accepted datagrams through dedup (the
// reliable index window), reassembly of split messages and the ordering
// channels to delivery. Every frame it is given was admitted first, so
// none of its structures outgrows its limit, and no delivery takes the
// messages held for the application past their bound: an ordered message
// without room waits at the head of its channel until consumed makes
// room.
type receiver struct {
	relWin seqWindow
	order  orderChannels
	asm    assembler
	held   heldBudget
	// out holds the messages delivered and not yet taken (Layer.Next),
	// from head on, in delivery order.
	out       []delivery
	head      int
	next      int    // the channel drained first next time
	delivered uint64 // messages delivered
	dupFrames uint64 // reliable frames received again
}

// delivery is a message the layer delivered.
type delivery struct {
	msg []byte
	// owned reports that msg is a buffer of the layer's that it never
	// touches again (a reassembled message, or a copy that waited in an
	// ordering queue), to keep without copying. Otherwise msg points into
	// the datagram handled, and is valid only as long as that is.
	owned bool
}

func newReceiver(cfg *Config, start uint64) receiver {
	r := receiver{
		relWin: newSeqWindow(start, cfg.ReliableWindow),
		order:  orderChannels{start: start, maxQueue: cfg.MaxOrderQueue, maxBytes: cfg.MaxOrderBytes},
		asm: assembler{
			maxCount: uint32(cfg.MaxSplitCount),
			maxConc:  cfg.MaxConcurrentSplits,
			maxBytes: cfg.MaxSplitBytes,
			timeout:  cfg.SplitTimeout,
			maxPart:  cfg.MaxDatagram - wire.DatagramHeaderSize,
		},
		held: heldBudget{maxMsgs: cfg.MaxHeldMessages, maxBytes: cfg.MaxHeldBytes},
	}
	return r
}

// handleFrame runs one admitted frame through dedup, reassembly and
// ordering.
func (r *receiver) handleFrame(f *wire.Frame, now time.Time) error {
	rel := f.Reliability
	if rel.Reliable() {
		idx := unwrap(r.relWin.base, f.ReliableIndex)
		// admit checked that the window can hold idx.
		if fresh, _ := r.relWin.mark(idx); !fresh {
			r.dupFrames++
			return nil
		}
	}
	owned := false
	if f.Split {
		whole, done, err := r.asm.add(f, now)
		if err != nil || !done {
			return err
		}
		// The message takes the reliability and ordering of its first
		// fragment, whatever the completing one claims, as its cost was
		// counted. Its buffer is new and handed on as it is.
		f, rel, owned = &whole, whole.Reliability, true
	}
	switch {
	case rel.Sequenced():
		if r.order.sequenced(f.OrderChannel, f.OrderIndex, f.SequenceIndex) {
			r.deliver(f.Payload, owned)
		}
		return nil
	case rel.Ordered():
		return r.order.ordered(f.OrderChannel, f.OrderIndex, f.Payload, owned, r)
	}
	r.deliver(f.Payload, owned)
	return nil
}

// fits reports whether a message of size bytes may be delivered now.
func (r *receiver) fits(size int) bool { return r.held.fits(size) }

// deliver queues p for the application, counting it as held until it is
// given back; owned reports that p is the application's to keep without
// a copy.
func (r *receiver) deliver(p []byte, owned bool) {
	r.delivered++
	r.held.take(len(p))
	r.out = append(r.out, delivery{p, owned})
}

// take returns the next delivered message, if any.
func (r *receiver) take() (delivery, bool) {
	if r.head == len(r.out) {
		return delivery{}, false
	}
	d := r.out[r.head]
	r.out[r.head] = delivery{}
	r.head++
	if r.head == len(r.out) {
		r.out, r.head = r.out[:0], 0
	}
	return d, true
}

// consumed counts a held message of size bytes as given back by the
// application and delivers what waited for the room.
func (r *receiver) consumed(size int) {
	r.held.release(size)
	r.drain()
}

// drain delivers the messages waiting at the heads of the ordering
// channels while there is room, starting with a different channel each
// time so that none takes all the room.
func (r *receiver) drain() {
	n := len(r.order.ch)
	for i := range n {
		c := &r.order.ch[(r.next+i)%n]
		if c.ready() {
			r.order.drain(c, r)
		}
	}
	if n > 0 {
		r.next = (r.next + 1) % n
	}
}

// waiting reports whether received data waits for something missing: a
// message in reassembly or behind a gap in an ordering queue. A channel
// whose next message is there waits for the application, not the
// network.
func (r *receiver) waiting() bool {
	if len(r.asm.list) > 0 {
		return true
	}
	for i := range r.order.ch {
		if c := &r.order.ch[i]; c.queued > 0 && !c.ready() {
			return true
		}
	}
	return false
}
