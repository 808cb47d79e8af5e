package reliability

import (
	"bytes"
	"slices"
	"testing"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// TestReceiver runs frames through the receiver alone: reliable
// duplicates are dropped, fragments reassembled, ordered messages held
// back until their turn and sequenced ones dropped when stale.
func TestReceiver(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram}
	cfg.fill()
	var got []string
	sink := func(m []byte, _ bool) bool {
		got = append(got, string(m))
		return false
	}
	r := newReceiver(&cfg, absBase)
	ord := func(rel, order uint32, p string) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(order), Payload: []byte(p)}
	}
	seq := func(order, s uint32, p string) wire.Frame {
		return wire.Frame{Reliability: wire.UnreliableSequenced, OrderIndex: wire.Uint24(order), SequenceIndex: wire.Uint24(s), OrderChannel: 1, Payload: []byte(p)}
	}
	frames := []wire.Frame{
		reliableFrame(0, []byte("a")),
		reliableFrame(0, []byte("a again")),
		splitFrame(1, 4, 2, 1, []byte("d")),
		ord(2, 1, "second"),
		splitFrame(3, 4, 2, 0, []byte("c")),
		ord(4, 0, "first"),
		seq(0, 1, "s1"),
		seq(0, 0, "s0 stale"),
		seq(0, 2, "s2"),
	}
	for i := range frames {
		if err := r.handleFrame(&frames[i], t0); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		r.deliverT(sink)
	}
	want := []string{"a", "cd", "first", "second", "s1", "s2"}
	if !slices.Equal(got, want) {
		t.Errorf("delivered: got %q, want %q", got, want)
	}
	if r.dupFrames != 1 || r.delivered != uint64(len(want)) || len(r.asm.list) != 0 || r.order.bytes != 0 {
		t.Errorf("got %d duplicates, %d delivered, %d in reassembly, %d queued bytes, want 1, %d, 0, 0", r.dupFrames, r.delivered, len(r.asm.list), r.order.bytes, len(want))
	}
}

// TestReceiverWaitsForRoom keeps what it delivers: ordered messages past
// the room wait at the head of their channel, consumed delivers them in
// order, taking turns between channels.
func TestReceiverWaitsForRoom(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram, MaxHeldMessages: 1}
	cfg.fill()
	var got [][]byte
	sink := func(m []byte, _ bool) bool {
		got = append(got, append([]byte(nil), m...))
		return true
	}
	r := newReceiver(&cfg, absBase)
	rel := uint32(0)
	for _, ch := range []uint8{0, 1} {
		for i := range uint32(3) {
			f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(i), OrderChannel: ch, Payload: []byte{ch, byte(i)}}
			rel++
			if err := r.handleFrame(&f, t0); err != nil {
				t.Fatal(err)
			}
			r.deliverT(sink)
		}
	}
	if len(got) != 1 || !r.order.get(0).ready() || !r.order.get(1).ready() {
		t.Fatalf("got %d delivered, channels ready %v %v, want 1, true, true", len(got), r.order.get(0).ready(), r.order.get(1).ready())
	}
	for range 5 {
		r.consumed(2)
		r.deliverT(sink)
	}
	want := [][]byte{{0, 0}, {0, 1}, {1, 0}, {0, 2}, {1, 1}, {1, 2}}
	if len(got) != len(want) {
		t.Fatalf("delivered: got %v, want %v", got, want)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("delivered: got %v, want %v", got, want)
		}
	}
	if r.held.msgs != 1 || r.order.bytes != 0 {
		t.Errorf("got %d held, %d queued bytes, want 1, 0", r.held.msgs, r.order.bytes)
	}
}
