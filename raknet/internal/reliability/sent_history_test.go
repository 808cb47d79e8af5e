package reliability

import (
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func TestSentHistory(t *testing.T) {
	h := newSentHistory(absBase + 10)
	// Fill past the first ring size: slots keep their numbers as it grows.
	for i := range 3 * initialSentSlots {
		n, s := h.add()
		if want := absBase + 10 + uint64(i); n != want {
			t.Fatalf("add %d: got number %d, want %d", i, n-absBase, want-absBase)
		}
		s.inFlight, s.sentAt = true, t0.Add(time.Duration(i)*time.Millisecond)
	}
	if got, want := len(h.ring), 4*initialSentSlots; got != want {
		t.Errorf("ring: got %d slots, want %d", got, want)
	}
	for i := range 3 * initialSentSlots {
		n := absBase + 10 + uint64(i)
		if got, want := h.slot(n).sentAt, t0.Add(time.Duration(i)*time.Millisecond); !got.Equal(want) {
			t.Fatalf("slot %d after growing: got sent at %v, want %v", i, got.Sub(t0), want.Sub(t0))
		}
	}
	// Acknowledged out of order: oldest stops at the first in flight.
	h.slot(absBase + 10).inFlight = false
	h.slot(absBase + 12).inFlight = false
	h.advance()
	if got := h.oldest - absBase; got != 11 {
		t.Errorf("oldest after advance: got %d, want 11", got)
	}
	if got, want := h.span(), uint64(3*initialSentSlots-1); got != want {
		t.Errorf("span: got %d, want %d", got, want)
	}
	h.slot(absBase + 11).inFlight = false
	h.advance()
	if got := h.oldest - absBase; got != 13 {
		t.Errorf("oldest after the gap closed: got %d, want 13", got)
	}
	if s := h.firstInFlight(); s == nil || !s.sentAt.Equal(t0.Add(3*time.Millisecond)) {
		t.Errorf("firstInFlight: got %+v, want the datagram sent at 3 ms", s)
	}
	for n := h.oldest; n < h.next; n++ {
		h.slot(n).inFlight = false
	}
	h.advance()
	if h.span() != 0 || h.firstInFlight() != nil {
		t.Errorf("after every ACK: got span %d, first in flight %v, want 0, nil", h.span(), h.firstInFlight())
	}
}

// TestAckCheck checks which ACK and NACK records are taken: sorted and
// disjoint, within the numbers sent, across the 2^24 wrap.
func TestAckCheck(t *testing.T) {
	// 20 numbers sent from 10 below the wrap: wire 16777206 .. 9.
	const sent = 20
	start := absBase + uint64(wire.MaxUint24) - 9
	w := func(i int) wire.Uint24 { return u24(start + uint64(i)) } // wire number of the i-th sent
	r := func(lo, hi int) wire.AckRange { return wire.AckRange{Start: w(lo), End: w(hi)} }
	cases := []struct {
		name   string
		nack   bool
		ranges []wire.AckRange
		want   error
	}{
		{name: "none", ranges: nil},
		{name: "all", ranges: []wire.AckRange{r(0, sent-1)}},
		{name: "ascending", ranges: []wire.AckRange{r(0, 2), r(4, 4), r(6, 15)}},
		{name: "adjacent", ranges: []wire.AckRange{r(0, 2), r(3, 4)}},
		{name: "by wire number across the wrap", ranges: []wire.AckRange{r(10, 11), r(13, 19), r(0, 3), r(5, 8)}},
		{name: "wrap split in two records", ranges: []wire.AckRange{r(0, 9), r(10, 12)}},
		{name: "by wire number, the fall overlaps the first", ranges: []wire.AckRange{r(10, 12), r(5, 10)}, want: errAckOrder},
		{name: "by wire number, after the fall reaches the first", ranges: []wire.AckRange{r(10, 12), r(0, 3), r(8, 11)}, want: errAckOrder},
		{name: "falls twice", ranges: []wire.AckRange{r(15, 16), r(12, 13), r(10, 11)}, want: errAckOrder},
		{name: "descending below the wrap", ranges: []wire.AckRange{r(4, 5), r(1, 2)}, want: errAckOrder},
		{name: "descending above the wrap", ranges: []wire.AckRange{r(14, 15), r(11, 12)}, want: errAckOrder},
		{name: "overlapping", ranges: []wire.AckRange{r(0, 5), r(5, 6)}, want: errAckOrder},
		{name: "repeated", ranges: []wire.AckRange{r(3, 3), r(3, 3)}, want: errAckOrder},
		{name: "one past the last sent", ranges: []wire.AckRange{r(sent, sent)}, want: errAckSpan},
		{name: "range reaching past the last sent", ranges: []wire.AckRange{r(15, sent)}, want: errAckSpan},
		{name: "before the first sent", ranges: []wire.AckRange{r(-1, 0)}, want: errAckSpan},
		{name: "first bad, rest good", ranges: []wire.AckRange{r(sent+5, sent+5), r(0, 1)}, want: errAckSpan},
		{name: "half way round", ranges: []wire.AckRange{{Start: w(0) + 1<<23, End: w(0) + 1<<23}}, want: errAckSpan},
		{name: "NACK of the numbers a probe names", nack: true, ranges: []wire.AckRange{r(15, sent+probeSpan-1)}},
		{name: "NACK beyond a probe", nack: true, ranges: []wire.AckRange{r(15, sent+probeSpan)}, want: errAckSpan},
		{name: "NACK unsorted", nack: true, ranges: []wire.AckRange{r(5, 5), r(2, 2)}, want: errAckOrder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newSentHistory(start)
			for range sent {
				h.add()
			}
			a := wire.Ack{NACK: tc.nack, Ranges: tc.ranges}
			if err := h.check(&a); err != tc.want {
				t.Errorf("check: got %v, want %v", err, tc.want)
			}
		})
	}
	// A long history: an ACK may name only the last ackSpan numbers, a
	// NACK any number sent.
	h := newSentHistory(absBase)
	h.next += 3 * ackSpan
	for _, tc := range []struct {
		nack bool
		lo   uint64
		want error
	}{
		{false, h.next - ackSpan, nil},
		{false, h.next - ackSpan - 1, errAckSpan},
		{true, h.next - ackSpan - 1, nil},
		{true, absBase, nil},
		{true, absBase - 1, errAckSpan},
	} {
		a := wire.Ack{NACK: tc.nack, Ranges: []wire.AckRange{{Start: u24(tc.lo), End: u24(tc.lo)}, {Start: u24(h.next - 1), End: u24(h.next - 1)}}}
		if err := h.check(&a); err != tc.want {
			t.Errorf("check (NACK %v) from %d below next: got %v, want %v", tc.nack, h.next-tc.lo, err, tc.want)
		}
	}
}
