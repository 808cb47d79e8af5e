package reliability

import (
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// chunks splits [lo, hi] into ranges of at most n numbers.
func chunks(lo, hi, n uint32) []wire.AckRange {
	var out []wire.AckRange
	for ; lo <= hi; lo += n {
		out = append(out, wire.AckRange{Start: wire.Uint24(lo), End: wire.Uint24(min(hi, lo+n-1))})
	}
	return out
}

func TestNACKForGap(t *testing.T) {
	cases := []struct {
		name     string
		numbers  []uint32 // datagram numbers, in arrival order, all at t0
		nack     []wire.AckRange
		ack      []wire.AckRange
		start    uint32 // InitialRecv
		nackSent uint64
	}{
		{name: "no gap", numbers: []uint32{0, 1, 2}, ack: []wire.AckRange{{Start: 0, End: 2}}},
		{name: "gap", numbers: []uint32{0, 3}, nack: []wire.AckRange{{Start: 1, End: 2}}, ack: []wire.AckRange{{Start: 0, End: 0}, {Start: 3, End: 3}}, nackSent: 1},
		{name: "gap at the start", numbers: []uint32{2}, nack: []wire.AckRange{{Start: 0, End: 1}}, ack: []wire.AckRange{{Start: 2, End: 2}}, nackSent: 1},
		{name: "two gaps", numbers: []uint32{0, 2, 5}, nack: []wire.AckRange{{Start: 1, End: 1}, {Start: 3, End: 4}}, ack: []wire.AckRange{{Start: 0, End: 0}, {Start: 2, End: 2}, {Start: 5, End: 5}}, nackSent: 1},
		{name: "late arrival leaves the NACK", numbers: []uint32{0, 3, 1}, nack: []wire.AckRange{{Start: 2, End: 2}}, ack: []wire.AckRange{{Start: 0, End: 1}, {Start: 3, End: 3}}, nackSent: 1},
		{name: "gap filled", numbers: []uint32{0, 2, 1}, ack: []wire.AckRange{{Start: 0, End: 2}}},
		{name: "duplicate is acked again", numbers: []uint32{0, 0}, ack: []wire.AckRange{{Start: 0, End: 0}}},
		{name: "gap across the wrap", start: uint32(wire.MaxUint24) - 1, numbers: []uint32{uint32(wire.MaxUint24) - 1, 1}, nack: []wire.AckRange{{Start: wire.MaxUint24, End: 0}}, ack: []wire.AckRange{{Start: wire.MaxUint24 - 1, End: wire.MaxUint24 - 1}, {Start: 1, End: 1}}, nackSent: 1},
		// Larger gaps are left to the sender's timeout.
		{name: "gap too large", numbers: []uint32{0, maxNACKGap + 2}, ack: []wire.AckRange{{Start: 0, End: 0}, {Start: maxNACKGap + 2, End: maxNACKGap + 2}}},
		// One NACK names at most maxAckNumbersSent numbers.
		{name: "largest gap", numbers: []uint32{0, maxNACKGap + 1}, nack: chunks(1, maxNACKGap, maxAckNumbersSent), ack: []wire.AckRange{{Start: 0, End: 0}, {Start: maxNACKGap + 1, End: maxNACKGap + 1}}, nackSent: maxNACKGap / maxAckNumbersSent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{InitialRecv: tc.start})
			for i, n := range tc.numbers {
				mustHandle(t, b.sinkLayer, t0, dataDatagram(n, reliableFrame(tc.start+uint32(i), []byte{1})))
			}
			nackAt := t0.Add(minNACKDelay)
			if tc.nack != nil {
				if got := b.NextDeadline(t0); !got.Equal(nackAt) {
					t.Fatalf("NextDeadline with a NACK pending: got %v, want %v", got.Sub(t0), minNACKDelay)
				}
				if d := b.AppendDatagram(nil, t0); d != nil {
					t.Fatalf("got % x before the NACK delay, want nothing", d)
				}
				var got []wire.AckRange
				for range tc.nackSent {
					d := b.AppendDatagram(nil, nackAt)
					if d == nil {
						t.Fatalf("got no datagram, want a NACK after %v", minNACKDelay)
					}
					a := decodeAck(t, d)
					if !a.NACK {
						t.Fatalf("got an ACK %v, want a NACK", a.Ranges)
					}
					got = append(got, a.Ranges...)
				}
				if !slices.Equal(got, tc.nack) {
					t.Errorf("NACK: got %v, want %v", got, tc.nack)
				}
			}
			// Only the delayed ACK is left.
			if d := b.AppendDatagram(nil, nackAt); d != nil {
				t.Fatalf("got % x, want nothing before the ACK delay", d)
			}
			d := b.AppendDatagram(nil, t0.Add(DefaultAckDelay))
			if d == nil {
				t.Fatalf("got no datagram, want an ACK")
			}
			if a := decodeAck(t, d); a.NACK || !slices.Equal(a.Ranges, tc.ack) {
				t.Errorf("ACK: got NACK=%v %v, want NACK=false %v", a.NACK, a.Ranges, tc.ack)
			}
			if got := b.Stats().NacksSent; got != tc.nackSent {
				t.Errorf("NacksSent: got %v, want %v", got, tc.nackSent)
			}
		})
	}
}

// TestNACKRepeated checks that a gap is NACKed again renackDelay, then
// twice and four times that, after the first NACK, and then no more: a
// lost NACK does not leave the gap to the sender's timeout.
func TestNACKRepeated(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(3, reliableFrame(1, []byte{1})))
	want := []wire.AckRange{{Start: 1, End: 2}}
	at := t0.Add(minNACKDelay)
	nacks := []time.Duration{0, renackDelay, renackDelay * 2, renackDelay * 4}
	for i, wait := range nacks {
		at = at.Add(wait)
		if got := b.NextDeadline(at.Add(-time.Microsecond)); i > 0 && !got.Equal(at) && !got.Before(at) {
			t.Fatalf("NACK %d: NextDeadline got %v, want %v", i, got.Sub(t0), at.Sub(t0))
		}
		var nack *wire.Ack
		for d := b.AppendDatagram(nil, at); d != nil; d = b.AppendDatagram(nil, at) {
			if a := decodeAck(t, d); a.NACK {
				nack = &a
			}
		}
		if nack == nil || !slices.Equal(nack.Ranges, want) {
			t.Fatalf("NACK %d at %v: got %v, want %v", i, at.Sub(t0), nack, want)
		}
	}
	for d := b.AppendDatagram(nil, at.Add(time.Second)); d != nil; d = b.AppendDatagram(nil, at.Add(time.Second)) {
		if a := decodeAck(t, d); a.NACK {
			t.Fatalf("after %d NACKs: got another %v", len(nacks), a.Ranges)
		}
	}
	if got := b.Stats().NacksSent; got != uint64(len(nacks)) {
		t.Errorf("NacksSent: got %d, want %d", got, len(nacks))
	}
}

// TestNACKNotRepeatedAfterArrival checks that a datagram that arrives
// after it was NACKed is not NACKed again: the repeat would make the
// sender resend it, and report an unreliable receipt as lost.
func TestNACKNotRepeatedAfterArrival(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(3, reliableFrame(1, []byte{1})))
	at := t0.Add(minNACKDelay)
	for d := b.AppendDatagram(nil, at); d != nil; d = b.AppendDatagram(nil, at) {
	}
	mustHandle(t, b.sinkLayer, at, dataDatagram(1, reliableFrame(2, []byte{1})))
	want := []wire.AckRange{{Start: 2, End: 2}}
	for _, wait := range []time.Duration{renackDelay, renackDelay * 2, renackDelay * 4} {
		at = at.Add(wait)
		for d := b.AppendDatagram(nil, at); d != nil; d = b.AppendDatagram(nil, at) {
			if a := decodeAck(t, d); a.NACK && !slices.Equal(a.Ranges, want) {
				t.Fatalf("repeat at %v: got NACK %v, want %v", at.Sub(t0), a.Ranges, want)
			}
		}
	}
}

func TestNackQueue(t *testing.T) {
	q := newNackQueue()
	const delay = 10 * time.Millisecond
	q.gap(absBase, absBase+4, t0, delay) // 0-3 missing
	q.gap(absBase+5, absBase+5, t0, delay)
	q.arrived(absBase + 2)
	var scratch wire.Ack
	nackOf := func(now time.Time) []wire.AckRange {
		t.Helper()
		d, ok := q.appendDue(nil, now, testMaxDatagram, &scratch)
		if !ok {
			return nil
		}
		var a wire.Ack
		if _, err := a.Decode(d); err != nil || !a.NACK {
			t.Fatalf("at %v: got % x, want a NACK", now.Sub(t0), d)
		}
		return a.Ranges
	}
	var dl deadline
	q.deadline(&dl)
	if !dl.t.Equal(t0.Add(delay)) {
		t.Errorf("deadline: got %v, want %v", dl.t.Sub(t0), delay)
	}
	if got := nackOf(t0.Add(delay - 1)); got != nil {
		t.Errorf("before the delay: got %v, want nothing", got)
	}
	want := []wire.AckRange{{Start: 0, End: 1}, {Start: 3, End: 3}}
	if got := nackOf(t0.Add(delay)); !slices.Equal(got, want) {
		t.Fatalf("NACK: got %v, want %v", got, want)
	}
	// 3 arrives: the repeats leave it out.
	q.arrived(absBase + 3)
	at := t0.Add(delay)
	for i := range nackRepeats {
		at = at.Add(renackDelay << i)
		if got, want := nackOf(at), []wire.AckRange{{Start: 0, End: 1}}; !slices.Equal(got, want) {
			t.Fatalf("repeat %d at %v: got %v, want %v", i, at.Sub(t0), got, want)
		}
	}
	if got := nackOf(at.Add(time.Hour)); got != nil {
		t.Errorf("after %d repeats: got %v, want nothing", nackRepeats, got)
	}
	// A pulled number leaves at once; a gap too large is not NACKed.
	q.gap(absBase+10, absBase+10+maxNACKGap+1, at, delay)
	q.pull(absBase+7, at)
	if got, want := nackOf(at), []wire.AckRange{{Start: 7, End: 7}}; !slices.Equal(got, want) {
		t.Errorf("pull: got %v, want %v", got, want)
	}
	if q.sent != 1+nackRepeats+1 {
		t.Errorf("NACKs sent: got %d, want %d", q.sent, 1+nackRepeats+1)
	}
}
