package reliability

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Receive admission is RakNet's only flow control. The protocol has no
// window a receiver advertises: a sender keeps sending until its
// congestion window (if it has one) stops it. A receiver that has no room
// for a frame refuses it by withholding the ACK of its datagram, so the
// sender resends it later, and NACKs it once room frees up: some senders
// otherwise resend only on a timeout that grows to seconds. Every frame is
// checked against the receive limits before anything of it is recorded,
// so a refused datagram leaves no trace but its place on the pull list.
//
// The room is that of reassembly and the ordering queues, and that of the
// application's read queue: a message that would be delivered while the
// messages held for the application are at their bound is refused, unless
// it is ordered and can wait at the head of its channel. Its refusal is
// pulled when Consumed makes room, not on the pull interval, since nothing
// else frees that room.
//
// With a Config.Budget, a frame within the receive limits must also have
// its bytes reserved from the budget (see budget.go). A refusal for the
// budget is pulled on the pull interval as far as the budget would take
// it then: the budget is shared, and room frees up in other connections,
// which this layer cannot see.

// errNotConnected is returned for a datagram without the valid flag.
var errNotConnected = errors.New("handle datagram: not a connected datagram")

// Refusals from admit. They are values, not built per frame: a peer that
// ignores flow control can cause millions of them.
var (
	errRefuseReliable   = fmt.Errorf("handle datagram: reliable index: %w", errTooFarAhead)
	errRefuseSplitCount = fmt.Errorf("handle datagram: %w", errSplitCount)
	errRefuseSplitConc  = fmt.Errorf("handle datagram: %w", errSplitConc)
	errRefuseSplitBytes = fmt.Errorf("handle datagram: %w", errSplitBytes)
	errRefuseHeld       = fmt.Errorf("handle datagram: %w", ErrHeldFull)
)

// ErrHeldFull refuses a message that would be delivered while the
// messages held for the application are at their bound: backpressure on a
// reader that does not keep up, not a fault of the peer.
var ErrHeldFull = errors.New("messages held for the application at their limit")

// refusal is a datagram refused for a receive limit that frees up.
type refusal struct {
	num     uint64 // absolute datagram number
	order   uint64 // absolute order index of its refused frame, if ordered
	size    int    // the room its frame's message needs
	channel uint8
	ordered bool
	held    bool // refused for the room of the messages held
	budget  bool // refused for Config.Budget
	split   bool // its refused frame is a fragment, of message splitID
	splitID uint16
}

// admission checks frames against the receive limits and remembers the
// datagrams it refused, to pull them (NACK them) once there is room:
// those whose frame its channel waits for always, then the nearest to
// delivery, as many as the room takes.
type admission struct {
	pulls []refusal
	at    time.Time // when pulls may next be NACKed
	// timed counts the refusals retried every pullInterval: all but
	// those refused for the messages held, which only consumed frees.
	timed int
	// heldDue is set when the held refusals may be pulled at a: a
	// message was consumed, or the last round left some for which there
	// is room (the room it counted went to those it pulled, which may
	// not come back: a sender ignores a NACK of what it already resent).
	heldDue bool
	// budgeted counts the refusals for the budget, minBudget the least
	// room one of them needs. budgetWait is the interval between tries
	// while the budget has no room for any, backed off from pullInterval.
	budgeted, minBudget int
	budgetWait          time.Duration
}

// admit checks one frame against the receive limits before anything is
// recorded, against the state left by the frames handled before it.
func (a *admission) admit(r *receiver, f *wire.Frame) error {
	if f.Reliability.Reliable() {
		idx := unwrap(r.relWin.base, f.ReliableIndex)
		if !r.relWin.canHold(idx) {
			return errRefuseReliable
		}
		if r.relWin.seen(idx) {
			return nil
		}
	}
	// A message that waits behind a missing one on its ordering channel
	// is held to tighter limits than the one the channel waits for, so a
	// queue full of messages from ahead always leaves room for that one,
	// whose delivery drains the queue.
	waits := f.Reliability.Ordered() && !f.Reliability.Sequenced() && r.order.waits(f.OrderChannel, f.OrderIndex)
	asm := &r.asm
	if !f.Split {
		if waits {
			return r.order.admit(f.OrderChannel, f.OrderIndex, len(f.Payload), asm.committed)
		}
		if r.fits(len(f.Payload)) {
			return nil
		}
		return a.admitDelivery(r, f, len(f.Payload), 0)
	}
	if f.SplitCount > asm.maxCount {
		return errRefuseSplitCount
	}
	if m := asm.find(f.SplitID); m != nil {
		// A message in progress was given room to complete when its
		// first fragment came: only the hard limit applies to the rest.
		if asm.bytes+len(f.Payload) > asm.maxBytes {
			return errRefuseSplitBytes
		}
		if m.completedBy(f) {
			return a.admitDelivery(r, &m.header, m.sizeWith(f), m.share())
		}
		return nil
	}
	// A new message must have room to complete, so it is charged its
	// whole estimated size up front. Room taken by messages that cannot
	// complete would wedge the queue behind them.
	est := asm.estimate(f)
	maxConc, maxBytes := asm.maxConc, asm.maxBytes
	if waits {
		maxConc -= asm.reserveSlots()
		maxBytes -= asm.reserveBytes()
	}
	if len(asm.list) >= maxConc {
		return errRefuseSplitConc
	}
	if asm.committed+est > maxBytes {
		return errRefuseSplitBytes
	}
	if waits {
		// The whole message will need a place in the ordering queue when
		// it completes ahead of its turn.
		return r.order.admit(f.OrderChannel, f.OrderIndex, est, asm.committed)
	}
	if f.SplitCount == 1 {
		return a.admitDelivery(r, f, len(f.Payload), 0)
	}
	return nil
}

// admitDelivery checks the message of size bytes that h heads, which
// handling the frame completes: unless it is stale or waits behind a
// missing one, it is delivered now and needs room among the messages
// held, or, if it is ordered, room to wait at the head of its channel.
// share is what reassembly committed for it.
func (a *admission) admitDelivery(r *receiver, h *wire.Frame, size, share int) error {
	if r.fits(size) {
		return nil
	}
	rel := h.Reliability
	switch {
	case rel.Sequenced():
		if _, _, newer := r.order.newer(h.OrderChannel, h.OrderIndex, h.SequenceIndex); !newer {
			return nil // dropped as stale
		}
	case rel.Ordered():
		o := &r.order
		c := o.get(h.OrderChannel)
		if unwrap(c.expected, h.OrderIndex) != c.expected {
			return nil // dropped as old, or waits and was admitted so
		}
		if o.bytes+r.asm.committed-share+size+o.growCost(c, 0) <= o.maxBytes {
			return nil // it waits at the head of its channel
		}
	}
	return errRefuseHeld
}

// refuse remembers datagram abs, refused at frame f for err, to be pulled
// once there is room. A split count over the limit never fits: it is left
// to the sender.
func (a *admission) refuse(now time.Time, abs uint64, f *wire.Frame, err error, r *receiver) {
	if err == errRefuseSplitCount {
		return
	}
	if len(a.pulls) == maxPulls {
		// Keep the refusals nearest to delivery.
		a.sortPulls(r)
		a.pulls = a.pulls[:maxPulls*3/4]
		a.count()
	}
	x := refusal{num: abs, size: len(f.Payload), held: err == errRefuseHeld, budget: err == errRefuseBudget}
	if f.Split {
		x.size = r.asm.estimate(f)
		x.split, x.splitID = true, f.SplitID
	}
	if x.budget {
		// What the budget would not take: for a fragment of a message in
		// progress, only what goes beyond its estimate.
		x.size, _ = r.need(f)
	}
	if f.Reliability.Ordered() && !f.Reliability.Sequenced() {
		x.ordered, x.channel = true, f.OrderChannel
		x.order = unwrap(r.order.get(f.OrderChannel).expected, f.OrderIndex)
	}
	if !x.held {
		if a.timed == 0 && !a.heldDue {
			a.at = now.Add(pullInterval)
		}
		a.timed++
	}
	if x.budget {
		if a.budgeted == 0 || x.size < a.minBudget {
			a.minBudget = x.size
		}
		a.budgeted++
	}
	a.pulls = append(a.pulls, x)
}

// count recounts the timed refusals and those for the budget.
func (a *admission) count() {
	a.timed, a.budgeted, a.minBudget = 0, 0, 0
	for i := range a.pulls {
		x := &a.pulls[i]
		if !x.held {
			a.timed++
		}
		if x.budget {
			if a.budgeted == 0 || x.size < a.minBudget {
				a.minBudget = x.size
			}
			a.budgeted++
		}
	}
}

// consumed makes the refusals for the room of the messages held due to
// be pulled at once: a message was consumed.
func (a *admission) consumed(now time.Time) {
	if len(a.pulls) > a.timed {
		a.heldDue = true
		if a.at.IsZero() || a.at.After(now) {
			a.at = now
		}
	}
}

// room returns how many bytes of messages that wait in an ordering queue
// the receive limits can still take.
func (a *admission) room(r *receiver) int {
	return min(r.order.maxBytes-r.order.bytes-r.asm.committed, r.asm.maxBytes-r.asm.reserveBytes()-r.asm.committed)
}

// distance returns how far x's frame is from delivery: 0 for the message
// its channel waits for and for unordered frames.
func (a *admission) distance(r *receiver, x *refusal) uint64 {
	if !x.ordered {
		return 0
	}
	return x.order - min(x.order, r.order.get(x.channel).expected)
}

// sortPulls sorts the refusals nearest to delivery first.
func (a *admission) sortPulls(r *receiver) {
	slices.SortFunc(a.pulls, func(x, y refusal) int { return cmp.Compare(a.distance(r, &x), a.distance(r, &y)) })
}

// pull NACKs refused datagrams once there is room for them: those whose
// frame its channel waits for always, then the nearest to delivery, as
// many as the room takes and at most pullBatch. Those refused for the
// messages held are pulled only as far as the room of those goes, and
// those refused for the budget as far as c could reserve for them now,
// which, the budget being shared, is tried every interval.
func (a *admission) pull(now time.Time, r *receiver, nq *nackQueue, maxDatagram int, c *charge) {
	if len(a.pulls) == 0 || (a.timed == 0 && !a.heldDue) || now.Before(a.at) {
		return
	}
	a.at = now.Add(pullInterval)
	a.heldDue = false
	budgetFull := false // no budget refusal fits: none is tried
	if a.budgeted > 0 && a.minBudget > 0 && !c.fits(a.minBudget, 0) {
		if a.budgeted == len(a.pulls) {
			// Nothing can be pulled, and nothing here frees the
			// budget: try again later, less often while it stays full.
			a.budgetWait = min(max(2*a.budgetWait, 2*pullInterval), maxBudgetPullWait)
			a.at = now.Add(a.budgetWait)
			return
		}
		budgetFull = true
	} else {
		a.budgetWait = 0
	}
	held := r.held // the room left, taken by each held refusal pulled
	room := a.room(r)
	k := 0        // refusals kept
	minHeld := -1 // the smallest held refusal kept
	keep := func(x refusal) {
		a.pulls[k] = x
		k++
		if x.held && (minHeld < 0 || x.size < minHeld) {
			minHeld = x.size
		}
	}
	// The budget refusals pulled this round must fit together, with the
	// room kept for what the channels wait for beside those that wait
	// (see receiver.keep), or a budget with room for one message would
	// have a round's worth resent to be refused again. A message's
	// fragments, neighbours here, are counted once. After one that does
	// not fit, the rest wait for the next round.
	budget, lastSplit := 0, -1
	fitsBudget := func(x *refusal, dist uint64) bool {
		if !x.budget {
			return true
		}
		if budgetFull {
			return false
		}
		n := x.size
		if x.split && int(x.splitID) == lastSplit {
			n = 0
		}
		if n > 0 {
			keep := 0
			if dist > 0 {
				keep = r.keep(budget+n, maxDatagram)
			}
			if !c.fits(budget+n, keep) {
				budgetFull = true
				return false
			}
		}
		budget += n
		lastSplit = -1
		if x.split {
			lastSplit = int(x.splitID)
		}
		return true
	}
	if room < maxDatagram {
		// No room: only what the channels wait for, found without
		// sorting, which a full connection would otherwise pay for every
		// interval.
		for _, x := range a.pulls {
			if a.distance(r, &x) == 0 && (!x.held || held.claim(x.size)) && fitsBudget(&x, 0) {
				nq.pull(x.num, now)
				continue
			}
			keep(x)
		}
	} else {
		a.sortPulls(r)
		n, pulled := 0, 0
		for ; n < len(a.pulls); n++ {
			x := a.pulls[n]
			dist := a.distance(r, &x)
			if dist > 0 {
				// Fragments of one message are neighbours here: its
				// room is counted once.
				if n == 0 || !x.ordered || x.order != a.pulls[n-1].order || x.channel != a.pulls[n-1].channel {
					room -= x.size
				}
				if room < 0 || pulled >= pullBatch {
					break
				}
			}
			if (x.held && !held.claim(x.size)) || !fitsBudget(&x, dist) {
				keep(x)
				continue
			}
			nq.pull(x.num, now)
			pulled++
		}
		for _, x := range a.pulls[n:] {
			keep(x)
		}
	}
	a.pulls = a.pulls[:k]
	a.count()
	a.heldDue = minHeld >= 0 && r.held.fits(minHeld)
	if len(a.pulls) == 0 && cap(a.pulls) > maxIdlePulls {
		a.pulls = nil
	}
}

// close forgets every refusal.
func (a *admission) close() {
	a.pulls, a.timed, a.heldDue = nil, 0, false
	a.budgeted, a.minBudget, a.budgetWait = 0, 0, 0
}

// waiting reports whether refused datagrams wait to be pulled when room
// frees up in reassembly or the ordering queues.
func (a *admission) waiting() bool { return a.timed > 0 }

// deadline adds when refusals may next be pulled to d.
func (a *admission) deadline(d *deadline) {
	if a.timed > 0 || (a.heldDue && len(a.pulls) > 0) {
		d.add(a.at)
	}
}
