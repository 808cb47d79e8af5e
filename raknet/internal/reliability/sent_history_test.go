package reliability

import (
	"testing"
	"time"
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
