package reliability

import (
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func TestAckDelay(t *testing.T) {
	cases := []struct {
		name     string
		ackDelay time.Duration
		arrivals []time.Duration // offset at which datagram i arrives
		due      time.Duration   // when NextDeadline says the ACK is due
		want     []wire.AckRange // the ACK sent at due
	}{
		{name: "one datagram waits the delay", arrivals: []time.Duration{0}, due: DefaultAckDelay, want: []wire.AckRange{{Start: 0, End: 0}}},
		{name: "delay runs from the first", arrivals: []time.Duration{0, ms(3), ms(4.9)}, due: DefaultAckDelay, want: []wire.AckRange{{Start: 0, End: 2}}},
		{name: "configured delay", ackDelay: ms(20), arrivals: []time.Duration{ms(1), ms(2)}, due: ms(21), want: []wire.AckRange{{Start: 0, End: 1}}},
		{name: "below the threshold waits", arrivals: make([]time.Duration, ackNowThreshold-1), due: DefaultAckDelay, want: []wire.AckRange{{Start: 0, End: ackNowThreshold - 2}}},
		{name: "threshold sends at once", arrivals: make([]time.Duration, ackNowThreshold), due: 0, want: []wire.AckRange{{Start: 0, End: ackNowThreshold - 1}}},
		{name: "threshold reached later", arrivals: append(make([]time.Duration, ackNowThreshold-1), ms(2)), due: ms(2), want: []wire.AckRange{{Start: 0, End: ackNowThreshold - 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{AckDelay: tc.ackDelay})
			var last time.Duration
			for i, at := range tc.arrivals {
				mustHandle(t, b.sinkLayer, t0.Add(at), dataDatagram(uint32(i), reliableFrame(uint32(i), []byte{byte(i)})))
				last = at
				if i < len(tc.arrivals)-1 {
					if d := b.AppendDatagram(nil, t0.Add(at)); d != nil {
						t.Fatalf("after datagram %d: got % x, want no datagram", i, d)
					}
				}
			}
			if got, want := b.NextDeadline(t0.Add(last)), t0.Add(tc.due); !got.Equal(want) {
				t.Fatalf("NextDeadline: got %v, want %v", got.Sub(t0), tc.due)
			}
			if tc.due > last {
				if d := b.AppendDatagram(nil, t0.Add(tc.due-1)); d != nil {
					t.Fatalf("1ns before the ACK is due: got % x, want no datagram", d)
				}
			}
			d := b.AppendDatagram(nil, t0.Add(tc.due))
			if d == nil {
				t.Fatalf("at %v: got no datagram, want an ACK", tc.due)
			}
			a := decodeAck(t, d)
			if a.NACK || !slices.Equal(a.Ranges, tc.want) {
				t.Errorf("ACK: got NACK=%v %v, want NACK=false %v", a.NACK, a.Ranges, tc.want)
			}
			if d := b.AppendDatagram(nil, t0.Add(tc.due)); d != nil {
				t.Errorf("after the ACK: got % x, want no datagram", d)
			}
			if got := b.NextDeadline(t0.Add(tc.due)); !got.IsZero() {
				t.Errorf("NextDeadline after the ACK: got %v, want zero", got.Sub(t0))
			}
			if !idle(b.sinkLayer) {
				t.Errorf("Idle after the ACK: got false, want true")
			}
		})
	}
}

// TestAckRepeatsLastRanges checks that each acknowledged range goes out in
// two consecutive ACKs, so losing one ACK does not cost the peer a resend.
func TestAckRepeatsLastRanges(t *testing.T) {
	b := newTestPeer(t, Config{})
	now := t0
	ackOf := func(n uint32) []wire.AckRange {
		t.Helper()
		mustHandle(t, b.sinkLayer, now, dataDatagram(n, reliableFrame(n, []byte{1})))
		now = now.Add(DefaultAckDelay)
		d := b.AppendDatagram(nil, now)
		if d == nil {
			t.Fatalf("got no ACK for %d", n)
		}
		return decodeAck(t, d).Ranges
	}
	want := [][]wire.AckRange{
		{{Start: 0, End: 0}},
		{{Start: 0, End: 1}},
		{{Start: 1, End: 2}},
		{{Start: 2, End: 3}},
	}
	for n, w := range want {
		if got := ackOf(uint32(n)); !slices.Equal(got, w) {
			t.Errorf("ACK after datagram %d: got %v, want %v", n, got, w)
		}
	}
	if d := b.AppendDatagram(nil, now.Add(time.Second)); d != nil {
		t.Errorf("got % x with nothing new to acknowledge, want nothing", d)
	}
}

// A pending ACK leaves with a data datagram sent before the ACK delay is
// over, so answering a ping takes one pass of the connection, not two.
func TestAckLeavesWithData(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	if d := b.AppendDatagram(nil, t0); d != nil {
		t.Fatalf("got % x with nothing to send, want the ACK to wait", d)
	}
	if _, err := b.Send([]byte{2}, wire.Unreliable, 0); err != nil {
		t.Fatal(err)
	}
	ds := drain(b.sinkLayer, t0)
	if len(ds) != 2 {
		t.Fatalf("got %d datagrams, want the data and an ACK", len(ds))
	}
	if ds[0][0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		t.Errorf("first datagram: got % x, want the data, not held up by the ACK", ds[0])
	}
	if a := decodeAck(t, ds[1]); a.NACK || len(a.Ranges) != 1 || a.Ranges[0] != (wire.AckRange{}) {
		t.Errorf("second datagram: got %+v, want the ACK of datagram 0", a)
	}
	if !b.recv.acks.empty() {
		t.Errorf("pending ACKs: got %v, want none", b.recv.acks.iv)
	}
}

func TestReceivedTracker(t *testing.T) {
	r := newReceivedTracker(absBase, DefaultAckDelay)
	steps := []struct {
		n         wire.Uint24
		duplicate bool
	}{
		{0, false}, {2, false}, {1, false}, {2, true}, {0, true},
	}
	for i, st := range steps {
		abs := r.number(st.n)
		if got := r.duplicate(abs, t0); got != st.duplicate {
			t.Fatalf("step %d (%d): duplicate got %v, want %v", i, st.n, got, st.duplicate)
		}
		if !st.duplicate {
			r.advance(abs)
			r.accept(abs, t0)
		}
	}
	if r.high != absBase+3 || r.dups != 2 || r.count != 5 {
		t.Errorf("got high %d, %d duplicates, %d to acknowledge, want 3, 2, 5", r.high-absBase, r.dups, r.count)
	}
	if r.due(t0.Add(DefaultAckDelay-1)) || !r.due(t0.Add(DefaultAckDelay)) {
		t.Errorf("due: got %v before the delay and %v at it, want false, true", r.due(t0.Add(DefaultAckDelay-1)), r.due(t0.Add(DefaultAckDelay)))
	}
	// Far behind the window: too old to tell, dropped unacknowledged.
	r.advance(absBase + 10_000)
	if !r.duplicate(absBase+5000, t0) || r.count != 5 {
		t.Errorf("a number older than the window: got count %d, want it dropped without an ACK", r.count)
	}
	var scratch wire.Ack
	d := r.appendAck(nil, t0, testMaxDatagram, &scratch)
	var a wire.Ack
	if _, err := a.Decode(d); err != nil || len(a.Ranges) != 1 || a.Ranges[0] != (wire.AckRange{Start: 0, End: 2}) {
		t.Fatalf("ACK: got %v (%v), want 0-2", a.Ranges, err)
	}
	if r.count != 0 || !r.deadline(t0).IsZero() {
		t.Errorf("after the ACK: got count %d, deadline %v, want 0, zero", r.count, r.deadline(t0))
	}
}

// TestDuplicateNotDecoded checks that a datagram number seen before is
// acknowledged again without its frames being decoded: a duplicate costs
// no decoding, and its bytes cannot fail it.
func TestDuplicateNotDecoded(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	drain(b.sinkLayer, t0.Add(DefaultAckDelay))
	garbage := append(dataDatagram(0), 0xff, 0xff) // a frame that cannot decode
	if err := b.handleT(t0.Add(DefaultAckDelay), garbage); err != nil {
		t.Fatalf("duplicate with garbage frames: got error %v, want nil", err)
	}
	if st := b.Stats(); st.DuplicateDatagrams != 1 || st.Errors != 0 {
		t.Errorf("got %d duplicates, %d errors, want 1, 0", st.DuplicateDatagrams, st.Errors)
	}
	if !acked(b.sinkLayer, 0) {
		t.Errorf("duplicate: got not acknowledged, want acknowledged again")
	}
	// The same bytes under a new number fail.
	garbage[1] = 1
	if err := b.handleT(t0, garbage); err == nil {
		t.Errorf("garbage frames under a new number: got nil error, want one")
	}
}
