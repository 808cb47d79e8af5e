package reliability

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// TestRefusedDatagramsArePulled refuses datagrams for want of room, then
// frees the room: the refused datagrams are NACKed, the one the channel
// waits for at once and the others as room allows, so the sender resends
// them now rather than at its timeout.
func TestRefusedDatagramsArePulled(t *testing.T) {
	const size = 1000
	b := newTestPeer(t, Config{MaxOrderBytes: 4*size + 8*slotSize})
	frame := func(rel, order uint32) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(order), Payload: make([]byte, size)}
	}
	// Messages 1..4 wait for message 0 and fill the queue; 5 and 6 are
	// refused.
	n := uint32(0)
	for i := uint32(1); i <= 4; i++ {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, frame(i, i)))
		n++
	}
	handleRefused(t, b.sinkLayer, t0, dataDatagram(4, frame(5, 5)), errOrderQueueFull)
	handleRefused(t, b.sinkLayer, t0, dataDatagram(5, frame(6, 6)), errOrderQueueFull)
	if len(b.adm.pulls) != 2 {
		t.Fatalf("refusals remembered: got %d, want 2", len(b.adm.pulls))
	}
	// No room: nothing is asked for again.
	now := t0.Add(pullInterval)
	for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
		if a := decodeAck(t, d); a.NACK {
			t.Fatalf("got NACK %v with no room, want none", a.Ranges)
		}
	}
	// Message 0 drains the queue: both refused datagrams are NACKed.
	mustHandle(t, b.sinkLayer, now, dataDatagram(6, frame(0, 0)))
	if len(b.got) != 5 {
		t.Fatalf("delivered: got %d, want 5", len(b.got))
	}
	now = now.Add(pullInterval)
	var named []wire.AckRange
	for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
		if a := decodeAck(t, d); a.NACK {
			named = append(named, a.Ranges...)
		}
	}
	if want := []wire.AckRange{{Start: 4, End: 5}}; !slices.Equal(named, want) {
		t.Fatalf("NACKed: got %v, want %v", named, want)
	}
	if len(b.adm.pulls) != 0 {
		t.Errorf("refusals remembered after the pull: got %d, want 0", len(b.adm.pulls))
	}
}

// TestRefusalForTheNextMessageIsPulledAtOnce refuses a fragment of the
// message its channel will wait for next while the queue has no room: it
// is NACKed as soon as the channel waits for it, room or not.
func TestRefusalForTheNextMessageIsPulledAtOnce(t *testing.T) {
	const size = 1000
	// Room for messages 2 and 3 (and the ring), one byte short of 1 too.
	b := newTestPeer(t, Config{MaxOrderBytes: 3*size + 8*slotSize - 1})
	frame := func(rel, order uint32) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(order), Payload: make([]byte, size)}
	}
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, frame(2, 2)))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(1, frame(3, 3)))
	handleRefused(t, b.sinkLayer, t0, dataDatagram(2, frame(1, 1)), errOrderQueueFull)
	// Message 0 arrives: the queue is still full (2 and 3 wait for 1), but
	// the channel now waits for 1, so its refused datagram is NACKed.
	mustHandle(t, b.sinkLayer, t0, dataDatagram(3, frame(0, 0)))
	now := t0.Add(pullInterval)
	var named []wire.AckRange
	for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
		if a := decodeAck(t, d); a.NACK {
			named = append(named, a.Ranges...)
		}
	}
	if want := []wire.AckRange{{Start: 2, End: 2}}; !slices.Equal(named, want) {
		t.Fatalf("NACKed: got %v, want %v", named, want)
	}
}

// TestRefusalsBounded refuses more datagrams than are remembered: the
// list stays within maxPulls and keeps those nearest to delivery.
func TestRefusalsBounded(t *testing.T) {
	const size, window = 1000, 100
	b := newTestPeer(t, Config{MaxOrderBytes: window * size})
	// Beyond the window for their size: refused, and remembered. The
	// nearest comes last.
	total := maxPulls + 100
	for i := range total {
		order := uint32(window + total - i)
		f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(i), OrderIndex: wire.Uint24(order), Payload: make([]byte, size)}
		if err := b.handleT(t0, dataDatagram(uint32(i), f)); !errors.Is(err, errOrderQueueFull) {
			t.Fatalf("datagram %d: got error %v, want %v", i, err, errOrderQueueFull)
		}
	}
	if len(b.adm.pulls) > maxPulls || len(b.adm.pulls) == 0 {
		t.Fatalf("refusals remembered: got %d, want 1 to %d", len(b.adm.pulls), maxPulls)
	}
	nearest := uint64(1 << 63)
	for _, r := range b.adm.pulls {
		nearest = min(nearest, r.order-absBase)
	}
	if nearest != window+1 {
		t.Errorf("nearest refusal remembered: got order %d, want %d", nearest, window+1)
	}
}

// TestPullHeldRefusals checks the refusals for the room of the messages
// held: no timer pulls them while that room is taken, Consumed makes
// them due at once, and a round pulls no more than the room takes.
func TestPullHeldRefusals(t *testing.T) {
	b := newHeldPeer(t, Config{MaxHeldMessages: 2})
	for i := range uint32(2) {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(i, reliableFrame(i, []byte{byte(i)})))
	}
	for i := uint32(2); i < 6; i++ {
		handleRefused(t, b.sinkLayer, t0, dataDatagram(i, reliableFrame(i, []byte{byte(i)})), ErrHeldFull)
	}
	if b.adm.timed != 0 || b.waiting() {
		t.Errorf("held refusals: got %d timed, waiting %v, want 0, false", b.adm.timed, b.waiting())
	}
	drain(b.sinkLayer, t0.Add(DefaultAckDelay))
	if got := b.NextDeadline(t0.Add(DefaultAckDelay)); !got.IsZero() {
		t.Fatalf("with the reader stalled: NextDeadline got %v, want zero", got.Sub(t0))
	}
	now := t0.Add(time.Second)
	b.consume(now, 1)
	if got := b.NextDeadline(now); !got.Equal(now) {
		t.Fatalf("after a read: NextDeadline got %v, want now", got.Sub(t0))
	}
	nacked := func(now time.Time) []wire.AckRange {
		var named []wire.AckRange
		for d := b.AppendDatagram(nil, now); d != nil; d = b.AppendDatagram(nil, now) {
			if a := decodeAck(t, d); a.NACK {
				named = append(named, a.Ranges...)
			}
		}
		return named
	}
	if got, want := nacked(now), []wire.AckRange{{Start: 2, End: 2}}; !slices.Equal(got, want) {
		t.Fatalf("after one read: NACKed %v, want %v", got, want)
	}
	// The room is there but went to the one pulled: the next interval
	// pulls again, as it may not come back.
	now = now.Add(pullInterval)
	if got, want := nacked(now), []wire.AckRange{{Start: 3, End: 3}}; !slices.Equal(got, want) {
		t.Fatalf("an interval later: NACKed %v, want %v", got, want)
	}
	b.consume(now, -1)
	if got, want := nacked(now), []wire.AckRange{{Start: 4, End: 5}}; !slices.Equal(got, want) {
		t.Fatalf("after reading all: NACKed %v, want %v", got, want)
	}
	if len(b.adm.pulls) != 0 {
		t.Errorf("refusals left: got %d, want 0", len(b.adm.pulls))
	}
}
