package reliability

import (
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// receiver takes the frames of accepted datagrams through dedup (the
// reliable index window), reassembly of split messages and the ordering
// channels to delivery. Every frame it is given was admitted first, so
// none of its structures outgrows its limit.
type receiver struct {
	relWin    seqWindow
	order     orderChannels
	asm       assembler
	out       func(msg []byte)
	delivered uint64 // messages delivered
	dupFrames uint64 // reliable frames received again
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
		out: cfg.Deliver,
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
	if f.Split {
		whole, err := r.asm.add(f, now)
		if err != nil || whole == nil {
			return err
		}
		f = whole
	}
	switch {
	case rel.Sequenced():
		if r.order.sequenced(f.OrderChannel, f.OrderIndex, f.SequenceIndex) {
			r.deliver(f.Payload)
		}
		return nil
	case rel.Ordered():
		return r.order.ordered(f.OrderChannel, f.OrderIndex, f.Payload, r.deliver)
	}
	r.deliver(f.Payload)
	return nil
}

func (r *receiver) deliver(p []byte) {
	r.delivered++
	r.out(p)
}

// waiting reports whether received data waits for something missing: a
// message in reassembly or behind a gap in an ordering queue.
func (r *receiver) waiting() bool {
	if len(r.asm.list) > 0 {
		return true
	}
	for i := range r.order.ch {
		if r.order.ch[i].queued > 0 {
			return true
		}
	}
	return false
}
