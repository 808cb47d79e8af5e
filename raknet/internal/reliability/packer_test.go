package reliability

import (
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// TestPackerContinuousSend checks the continuous-send flag: set on the
// datagrams after the first of a burst that leaves in one pass, not on a
// datagram that starts a new pass.
func TestPackerContinuousSend(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram}
	cfg.fill()
	q := newSendQueue(&cfg, absBase)
	p := packer{maxDatagram: cfg.MaxDatagram}
	h := newSentHistory(absBase)
	for i := range 3 {
		if _, err := q.push(make([]byte, q.maxUnsplit(wire.Reliable)), wire.Reliable, 0); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	pack := func(now time.Time) byte {
		t.Helper()
		n, s := h.add()
		d := p.pack(nil, now, n, s, &q)
		if len(d) > cfg.MaxDatagram || len(s.frames) != 1 {
			t.Fatalf("datagram %d: got %d bytes, %d frames, want <= %d, 1", n-absBase, len(d), len(s.frames), cfg.MaxDatagram)
		}
		return d[0]
	}
	for i, want := range []byte{0x84, 0x8c, 0x8c} {
		if got := pack(t0); got != want {
			t.Errorf("datagram %d flags: got %#02x, want %#02x", i, got, want)
		}
	}
	if q.hasData() {
		t.Fatalf("frames left after three datagrams")
	}
	// A resend packed later starts a new pass, and goes before new frames.
	if _, err := q.push([]byte{1}, wire.Reliable, 0); err != nil {
		t.Fatal(err)
	}
	q.lost(h.slot(absBase).frames[0])
	later := t0.Add(time.Millisecond)
	n, s := h.add()
	if d := p.pack(nil, later, n, s, &q); d[0] != 0x84 {
		t.Errorf("later datagram flags: got %#02x, want 0x84", d[0])
	}
	if len(s.frames) != 1 || !s.retrans || s.frames[0].f.relIndex != absBase || p.resent != 1 {
		t.Errorf("resend: got %d frames (retrans %v, first index %d), %d resent, want the resent frame 0 alone", len(s.frames), s.retrans, s.frames[0].f.relIndex-absBase, p.resent)
	}
	n, s = h.add()
	if d := p.pack(nil, later, n, s, &q); d[0] != 0x8c || len(s.frames) != 1 || s.retrans || s.frames[0].f.relIndex != absBase+3 {
		t.Errorf("after the resend: got flags %#02x, %d frames (retrans %v), want 0x8c and the new frame 3", d[0], len(s.frames), s.retrans)
	}
}
