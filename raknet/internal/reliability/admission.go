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

// errNotConnected is returned for a datagram without the valid flag.
var errNotConnected = errors.New("handle datagram: not a connected datagram")

// Refusals from admit. They are values, not built per frame: a peer that
// ignores flow control can cause millions of them.
var (
	errRefuseReliable   = fmt.Errorf("handle datagram: reliable index: %w", errTooFarAhead)
	errRefuseSplitCount = fmt.Errorf("handle datagram: %w", errSplitCount)
	errRefuseSplitConc  = fmt.Errorf("handle datagram: %w", errSplitConc)
	errRefuseSplitBytes = fmt.Errorf("handle datagram: %w", errSplitBytes)
)

// refusal is a datagram refused for a receive limit that frees up.
type refusal struct {
	num     uint64 // absolute datagram number
	order   uint64 // absolute order index of its refused frame, if ordered
	size    int    // the room its frame's message needs
	channel uint8
	ordered bool
}

// admission checks frames against the receive limits and remembers the
// datagrams it refused, to pull them (NACK them) once there is room:
// those whose frame its channel waits for always, then the nearest to
// delivery, as many as the room takes.
type admission struct {
	pulls []refusal
	at    time.Time // when pulls may next be NACKed
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
		return nil
	}
	if f.SplitCount > asm.maxCount {
		return errRefuseSplitCount
	}
	if asm.find(f.SplitID) != nil {
		// A message in progress was given room to complete when its
		// first fragment came: only the hard limit applies to the rest.
		if asm.bytes+len(f.Payload) > asm.maxBytes {
			return errRefuseSplitBytes
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
	return nil
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
	}
	x := refusal{num: abs, size: len(f.Payload)}
	if f.Split {
		x.size = r.asm.estimate(f)
	}
	if f.Reliability.Ordered() && !f.Reliability.Sequenced() {
		x.ordered, x.channel = true, f.OrderChannel
		x.order = unwrap(r.order.get(f.OrderChannel).expected, f.OrderIndex)
	}
	if len(a.pulls) == 0 {
		a.at = now.Add(pullInterval)
	}
	a.pulls = append(a.pulls, x)
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
// many as the room takes and at most pullBatch.
func (a *admission) pull(now time.Time, r *receiver, nq *nackQueue, maxDatagram int) {
	if len(a.pulls) == 0 || now.Before(a.at) {
		return
	}
	a.at = now.Add(pullInterval)
	room := a.room(r)
	if room < maxDatagram {
		// No room: only what the channels wait for, found without
		// sorting, which a full connection would otherwise pay for every
		// interval.
		k := 0
		for _, x := range a.pulls {
			if a.distance(r, &x) == 0 {
				nq.pull(x.num, now)
				continue
			}
			a.pulls[k] = x
			k++
		}
		a.pulls = a.pulls[:k]
	} else {
		a.sortPulls(r)
		n := 0
		for ; n < len(a.pulls); n++ {
			x := &a.pulls[n]
			if a.distance(r, x) > 0 {
				// Fragments of one message are neighbours here: its
				// room is counted once.
				if n == 0 || !x.ordered || x.order != a.pulls[n-1].order || x.channel != a.pulls[n-1].channel {
					room -= x.size
				}
				if room < 0 || n >= pullBatch {
					break
				}
			}
			nq.pull(x.num, now)
		}
		a.pulls = a.pulls[:copy(a.pulls, a.pulls[n:])]
	}
	if len(a.pulls) == 0 && cap(a.pulls) > maxIdlePulls {
		a.pulls = nil
	}
}

// waiting reports whether refused datagrams wait to be pulled.
func (a *admission) waiting() bool { return len(a.pulls) > 0 }

// deadline adds when refusals may next be pulled to d.
func (a *admission) deadline(d *deadline) {
	if len(a.pulls) > 0 {
		d.add(a.at)
	}
}
