package reliability

import (
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// TestProbeAfterSilence loses the last fragment of a message with nothing
// after it, so no gap shows: after twice the RTT (at least 50 ms) of
// silence a NACK names the numbers the peer uses next, then again after
// doubling waits. A connection that waits for nothing never probes.
func TestProbeAfterSilence(t *testing.T) {
	idle := newTestPeer(t, Config{})
	mustHandle(t, idle.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	drain(idle.sinkLayer, t0.Add(DefaultAckDelay))
	if got := idle.NextDeadline(t0.Add(DefaultAckDelay)); !got.IsZero() {
		t.Fatalf("idle: NextDeadline got %v, want zero", got.Sub(t0))
	}

	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, splitFrame(0, 1, 2, 0, []byte{1})))
	drain(b.sinkLayer, t0.Add(DefaultAckDelay))
	at := t0.Add(b.probe.delay(b.sent.rtt.smoothed()))
	want := []wire.AckRange{{Start: 1, End: probeSpan}}
	for i, wait := range []time.Duration{0, 2 * b.probe.delay(b.sent.rtt.smoothed()), 4 * b.probe.delay(b.sent.rtt.smoothed())} {
		at = at.Add(wait)
		if got := b.NextDeadline(at.Add(-time.Millisecond)); !got.Equal(at) {
			t.Fatalf("probe %d: NextDeadline got %v, want %v", i, got.Sub(t0), at.Sub(t0))
		}
		d := b.AppendDatagram(nil, at)
		if d == nil {
			t.Fatalf("probe %d at %v: got nothing, want a NACK", i, at.Sub(t0))
		}
		if a := decodeAck(t, d); !a.NACK || !slices.Equal(a.Ranges, want) {
			t.Fatalf("probe %d: got NACK=%v %v, want NACK %v", i, a.NACK, a.Ranges, want)
		}
		if d := b.AppendDatagram(nil, at); d != nil {
			t.Fatalf("probe %d: got a second datagram % x", i, d)
		}
	}
	// The missing fragment arrives: nothing waits, no more probes.
	mustHandle(t, b.sinkLayer, at, dataDatagram(1, splitFrame(1, 1, 2, 1, []byte{2})))
	drain(b.sinkLayer, at.Add(DefaultAckDelay))
	if len(b.got) != 1 {
		t.Fatalf("delivered: got %d, want 1", len(b.got))
	}
	if got := b.NextDeadline(at.Add(DefaultAckDelay)); !got.IsZero() && got.Before(at.Add(time.Second)) {
		t.Errorf("after the message: NextDeadline got %v, want nothing soon", got.Sub(at))
	}
}

func TestProberBackoff(t *testing.T) {
	p := newProber()
	const srtt = 40 * time.Millisecond // delay 2·SRTT = 80 ms
	p.check(t0, true, srtt, absBase)
	if !p.set.empty() {
		t.Fatalf("before any arrival: got a probe, want none")
	}
	p.arrived(t0)
	p.check(t0.Add(time.Hour), false, srtt, absBase)
	if !p.set.empty() {
		t.Fatalf("with nothing waiting: got a probe, want none")
	}
	at := t0
	for i, wait := range []time.Duration{80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond, maxProbeWait, maxProbeWait} {
		var d deadline
		p.deadline(&d, srtt)
		if want := at.Add(wait); !d.t.Equal(want) {
			t.Fatalf("probe %d: deadline got %v, want %v", i, d.t.Sub(t0), want.Sub(t0))
		}
		p.check(d.t.Add(-1), true, srtt, absBase+5)
		if !p.set.empty() {
			t.Fatalf("probe %d: got it 1ns early", i)
		}
		at = d.t
		p.check(at, true, srtt, absBase+5)
		if len(p.set.iv) != 1 || p.set.iv[0] != (interval{absBase + 5, absBase + 5 + probeSpan - 1}) {
			t.Fatalf("probe %d: got %v, want the %d numbers from 5", i, p.set.iv, probeSpan)
		}
		p.set.iv = p.set.iv[:0]
	}
	// An arrival ends the backoff.
	p.arrived(at)
	if got := p.delay(srtt); got != 80*time.Millisecond {
		t.Errorf("delay after an arrival: got %v, want 80ms", got)
	}
	if got := p.delay(time.Millisecond); got != minProbeDelay {
		t.Errorf("delay on a fast path: got %v, want %v", got, minProbeDelay)
	}
}
