package reliability

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// testMaxDatagram is the UDP payload of a 1400-byte MTU over IPv4.
const testMaxDatagram = 1400 - 28

// testPeer is a Layer with its deliveries and receipts recorded.
type testPeer struct {
	*Layer
	got      [][]byte
	receipts []receiptEvent
}

func newTestPeer(t testing.TB, cfg Config) *testPeer {
	t.Helper()
	p := &testPeer{}
	if cfg.MaxDatagram == 0 {
		cfg.MaxDatagram = testMaxDatagram
	}
	cfg.Deliver = func(m []byte) bool {
		p.got = append(p.got, append([]byte(nil), m...))
		return false
	}
	cfg.Receipt = func(id uint32, acked bool) { p.receipts = append(p.receipts, receiptEvent{id, acked}) }
	p.Layer = New(cfg, t0)
	return p
}

// drain returns every datagram l has to send at now.
func drain(l *Layer, now time.Time) [][]byte {
	var out [][]byte
	for {
		d := l.AppendDatagram(nil, now)
		if d == nil {
			return out
		}
		out = append(out, d)
	}
}

// mustSend queues p and fails the test on an error.
func mustSend(t testing.TB, l *Layer, now time.Time, p []byte, r wire.Reliability, ch uint8) uint32 {
	t.Helper()
	id, err := l.Send(now, p, r, ch)
	if err != nil {
		t.Fatalf("Send(%d bytes, %v, %d): got error %v, want nil", len(p), r, ch, err)
	}
	return id
}

// mustHandle feeds d to l and fails the test on an error.
func mustHandle(t testing.TB, l *Layer, now time.Time, d []byte) {
	t.Helper()
	if err := l.HandleDatagram(now, d); err != nil {
		t.Fatalf("HandleDatagram(% x): got error %v, want nil", d[:min(len(d), 24)], err)
	}
}

// dataDatagram encodes a data datagram numbered n carrying frames.
func dataDatagram(n uint32, frames ...wire.Frame) []byte {
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(n)}
	b := h.Append(nil)
	for i := range frames {
		b = frames[i].Append(b)
	}
	return b
}

// ackDatagram encodes an ACK or NACK of the given ranges.
func ackDatagram(nack bool, ranges ...wire.AckRange) []byte {
	a := wire.Ack{NACK: nack, Ranges: ranges}
	return a.Append(nil)
}

// reliableFrame is a Reliable frame with reliable index idx.
func reliableFrame(idx uint32, p []byte) wire.Frame {
	return wire.Frame{Reliability: wire.Reliable, ReliableIndex: wire.Uint24(idx), Payload: p}
}

// decodeData decodes a data datagram, failing the test on ACKs and errors.
func decodeData(t testing.TB, d []byte) (wire.Uint24, []wire.Frame) {
	t.Helper()
	var h wire.DatagramHeader
	n, err := h.Decode(d)
	if err != nil {
		t.Fatalf("decode data datagram % x: %v", d[:min(len(d), 16)], err)
	}
	var frames []wire.Frame
	for rest := d[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			t.Fatalf("decode frame: %v", err)
		}
		frames = append(frames, f)
		rest = rest[k:]
	}
	return h.Number, frames
}

// decodeAck decodes an ACK or NACK datagram, failing the test otherwise.
func decodeAck(t testing.TB, d []byte) wire.Ack {
	t.Helper()
	var a wire.Ack
	if len(d) == 0 || d[0]&(wire.FlagACK|wire.FlagNACK) == 0 {
		t.Fatalf("datagram % x: got data, want ACK or NACK", d[:min(len(d), 16)])
	}
	if _, err := a.Decode(d); err != nil {
		t.Fatalf("decode ACK % x: %v", d, err)
	}
	return a
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

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
				mustHandle(t, b.Layer, t0.Add(at), dataDatagram(uint32(i), reliableFrame(uint32(i), []byte{byte(i)})))
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
			if !b.Idle() {
				t.Errorf("Idle after the ACK: got false, want true")
			}
		})
	}
}

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
				mustHandle(t, b.Layer, t0, dataDatagram(n, reliableFrame(tc.start+uint32(i), []byte{1})))
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

// sendFull queues n messages that each fill a datagram and sends them at
// now, returning the datagrams.
func sendFull(t *testing.T, a *testPeer, now time.Time, n int, r wire.Reliability) [][]byte {
	t.Helper()
	for i := range n {
		p := bytes.Repeat([]byte{byte(i + 1)}, a.MaxUnsplit(r))
		mustSend(t, a.Layer, now, p, r, 0)
	}
	ds := drain(a.Layer, now)
	if len(ds) != n {
		t.Fatalf("sent %d datagrams, want %d", len(ds), n)
	}
	return ds
}

func TestFastResend(t *testing.T) {
	cases := []struct {
		name     string
		sentAt   []time.Duration // when datagram i is sent
		acked    uint32
		ackAt    time.Duration
		resent   []uint32 // reliable indexes resent at once
		stillOut int      // datagrams still in flight afterwards
	}{
		// A burst sent at once and acked out of order is reordering, not
		// loss: nothing is resent before the time threshold
		// (max(9/8 SRTT, SRTT + 2 RTTVAR); the first sample of 10 ms gives
		// 20 ms).
		{name: "burst reordered", sentAt: []time.Duration{0, 0, 0, 0}, acked: 3, ackAt: ms(10), stillOut: 3},
		{name: "two sent well before", sentAt: []time.Duration{0, ms(1), ms(25)}, acked: 2, ackAt: ms(35), resent: []uint32{0, 1}, stillOut: 0},
		{name: "recent one waits", sentAt: []time.Duration{0, ms(18), ms(25)}, acked: 2, ackAt: ms(35), resent: []uint32{0}, stillOut: 1},
		{name: "sent well before", sentAt: []time.Duration{0, ms(20)}, acked: 1, ackAt: ms(30), resent: []uint32{0}, stillOut: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestPeer(t, Config{})
			var ds [][]byte
			for i, at := range tc.sentAt {
				ds = append(ds, sendFull(t, a, t0.Add(at), 1, wire.Reliable)...)
				if n, _ := decodeData(t, ds[i]); n != wire.Uint24(i) {
					t.Fatalf("datagram %d number: got %v, want %v", i, n, i)
				}
			}
			now := t0.Add(tc.ackAt)
			mustHandle(t, a.Layer, now, ackDatagram(false, wire.AckRange{Start: wire.Uint24(tc.acked), End: wire.Uint24(tc.acked)}))
			if rto := a.sent.rtt.rto(); tc.ackAt >= rto {
				t.Fatalf("test needs the ACK before the RTO (%v)", rto)
			}
			var resent []uint32
			for _, d := range drain(a.Layer, now) {
				n, frames := decodeData(t, d)
				if n <= wire.Uint24(len(tc.sentAt)-1) {
					t.Errorf("resend reused datagram number %d", n)
				}
				for _, f := range frames {
					resent = append(resent, uint32(f.ReliableIndex))
					_, orig := decodeData(t, ds[f.ReliableIndex])
					if !bytes.Equal(f.Payload, orig[0].Payload) {
						t.Errorf("resent frame %d: payload differs from the original", f.ReliableIndex)
					}
				}
			}
			if !slices.Equal(resent, tc.resent) {
				t.Errorf("resent reliable indexes: got %v, want %v", resent, tc.resent)
			}
			st := a.Stats()
			if st.FramesResent != uint64(len(tc.resent)) {
				t.Errorf("FramesResent: got %v, want %v", st.FramesResent, len(tc.resent))
			}
			var inFlight int
			for n := a.sent.hist.oldest; n < a.sent.hist.next; n++ {
				if s := a.sent.hist.slot(n); s.inFlight && len(s.frames) > 0 && !s.retrans {
					inFlight++
				}
			}
			if inFlight != tc.stillOut {
				t.Errorf("original datagrams still in flight: got %v, want %v", inFlight, tc.stillOut)
			}
		})
	}
}

// TestResendSurvives sends two ordered messages, loses the first (by NACK
// or by timeout) and checks that the receiver gets both, in order and once,
// from the resend in a new datagram, even when the original turns up late.
func TestResendSurvives(t *testing.T) {
	cases := []struct {
		name     string
		loseAt   time.Duration
		nack     bool
		late     bool // the original datagram arrives after the resend
		wantLost uint64
	}{
		{name: "NACK", loseAt: ms(1), nack: true, wantLost: 1},
		{name: "NACK then original arrives", loseAt: ms(1), nack: true, late: true, wantLost: 1},
		{name: "timeout", loseAt: InitialRTO, wantLost: 2}, // both time out and are resent together
		{name: "timeout then original arrives", loseAt: InitialRTO, late: true, wantLost: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestPeer(t, Config{})
			b := newTestPeer(t, Config{})
			m0, m1 := msg(0, 500), msg(1, 600)
			mustSend(t, a.Layer, t0, m0, wire.ReliableOrdered, 3)
			ds := drain(a.Layer, t0)
			mustSend(t, a.Layer, t0, m1, wire.ReliableOrdered, 3)
			ds = append(ds, drain(a.Layer, t0)...)
			if len(ds) != 2 {
				t.Fatalf("sent %d datagrams, want 2", len(ds))
			}
			mustHandle(t, b.Layer, t0.Add(ms(1)), ds[1]) // 0 is lost
			if len(b.got) != 0 {
				t.Fatalf("delivered %d messages before message 0, want 0", len(b.got))
			}
			now := t0.Add(tc.loseAt)
			if tc.nack {
				mustHandle(t, a.Layer, now, ackDatagram(true, wire.AckRange{Start: 0, End: 0}))
			} else if d := a.AppendDatagram(nil, now.Add(-time.Nanosecond)); d != nil {
				t.Fatalf("1ns before the RTO: got % x, want no datagram", d)
			}
			resends := drain(a.Layer, now)
			if len(resends) == 0 {
				t.Fatalf("got no resend at %v", tc.loseAt)
			}
			n, frames := decodeData(t, resends[0])
			if n != 2 {
				t.Errorf("resend datagram number: got %v, want %v", n, 2)
			}
			if frames[0].ReliableIndex != 0 || frames[0].OrderIndex != 0 || frames[0].OrderChannel != 3 || !bytes.Equal(frames[0].Payload, m0) {
				t.Errorf("resent frame: got index %d order %d channel %d, want 0 0 3 and the same payload", frames[0].ReliableIndex, frames[0].OrderIndex, frames[0].OrderChannel)
			}
			for _, d := range resends {
				mustHandle(t, b.Layer, now, d)
			}
			if tc.late {
				mustHandle(t, b.Layer, now.Add(ms(1)), ds[0])
			}
			if len(b.got) != 2 || !bytes.Equal(b.got[0], m0) || !bytes.Equal(b.got[1], m1) {
				t.Fatalf("delivered %d messages, want messages 0 and 1 once, in order", len(b.got))
			}
			if got := a.Stats().DatagramsLost; got != tc.wantLost {
				t.Errorf("DatagramsLost: got %v, want %v", got, tc.wantLost)
			}
			// B acks everything; A ends with nothing buffered.
			for _, d := range drain(b.Layer, now.Add(time.Second)) {
				mustHandle(t, a.Layer, now.Add(time.Second), d)
			}
			if a.Buffered() != 0 {
				t.Errorf("Buffered after the ACK: got %v, want 0", a.Buffered())
			}
		})
	}
}

// TestRTOBackoff sends one message that is never acknowledged until the
// third resend: each resend waits twice as long, and the ACK of a resend
// ends the backoff without giving an RTT sample.
func TestRTOBackoff(t *testing.T) {
	steps := []struct {
		at       time.Duration // when AppendDatagram is called
		number   int           // datagram number expected, -1 for none
		deadline time.Duration // NextDeadline afterwards
	}{
		{0, 0, InitialRTO},
		{InitialRTO - 1, -1, InitialRTO},
		{InitialRTO, 1, InitialRTO + 2*InitialRTO},
		{3*InitialRTO - 1, -1, 3 * InitialRTO},
		{3 * InitialRTO, 2, 3*InitialRTO + 4*InitialRTO},
		{7 * InitialRTO, 3, 7*InitialRTO + 8*InitialRTO},
		// 16·300 ms is above MaxRTO: the backoff stops at the ceiling.
		{15 * InitialRTO, 4, 15*InitialRTO + MaxRTO},
		{15*InitialRTO + MaxRTO, 5, 15*InitialRTO + 2*MaxRTO},
	}
	a := newTestPeer(t, Config{})
	payload := msg(7, 300)
	mustSend(t, a.Layer, t0, payload, wire.ReliableOrdered, 0)
	var last time.Duration
	for i, st := range steps {
		now := t0.Add(st.at)
		ds := drain(a.Layer, now)
		switch {
		case st.number < 0 && len(ds) != 0:
			t.Fatalf("step %d at %v: got %d datagrams, want none", i, st.at, len(ds))
		case st.number >= 0 && len(ds) != 1:
			t.Fatalf("step %d at %v: got %d datagrams, want 1", i, st.at, len(ds))
		case st.number >= 0:
			n, frames := decodeData(t, ds[0])
			if n != wire.Uint24(st.number) {
				t.Errorf("step %d: datagram number: got %v, want %v", i, n, st.number)
			}
			if len(frames) != 1 || frames[0].ReliableIndex != 0 || !bytes.Equal(frames[0].Payload, payload) {
				t.Errorf("step %d: got %d frames, want the original frame with reliable index 0", i, len(frames))
			}
			last = st.at
		}
		if got := a.NextDeadline(now); !got.Equal(t0.Add(st.deadline)) {
			t.Errorf("step %d: NextDeadline: got %v, want %v", i, got.Sub(t0), st.deadline)
		}
	}
	if got, want := a.Stats().DatagramsLost, uint64(5); got != want {
		t.Errorf("DatagramsLost: got %v, want %v", got, want)
	}
	// The ACK of the last resend ends the backoff; Karn's rule keeps the
	// RTT unsampled.
	now := t0.Add(last + ms(50))
	mustHandle(t, a.Layer, now, ackDatagram(false, wire.AckRange{Start: 5, End: 5}))
	st := a.Stats()
	if st.RTO != InitialRTO {
		t.Errorf("RTO after the ACK: got %v, want %v", st.RTO, InitialRTO)
	}
	if st.SRTT != 0 {
		t.Errorf("SRTT after acking a resend: got %v, want 0", st.SRTT)
	}
	if !a.Idle() || a.Buffered() != 0 {
		t.Errorf("after the ACK: got Idle %v Buffered %v, want true 0", a.Idle(), a.Buffered())
	}
	if got := a.NextDeadline(now); !got.IsZero() {
		t.Errorf("NextDeadline after the ACK: got %v, want zero", got.Sub(t0))
	}
}

// TestRTOAfterSample checks that the timeout follows the measured RTT and
// that the window collapses on a timeout.
func TestRTOAfterSample(t *testing.T) {
	a := newTestPeer(t, Config{})
	mustSend(t, a.Layer, t0, []byte("ping"), wire.Reliable, 0)
	drain(a.Layer, t0)
	mustHandle(t, a.Layer, t0.Add(ms(100)), ackDatagram(false, wire.AckRange{Start: 0, End: 0}))
	// SRTT 100 ms, RTTVAR 50 ms: RTO 300 ms.
	if got, want := a.Stats().RTO, ms(300); got != want {
		t.Fatalf("RTO: got %v, want %v", got, want)
	}
	before := a.Stats().Window
	sendAt := t0.Add(ms(200))
	mustSend(t, a.Layer, sendAt, []byte("pong"), wire.Reliable, 0)
	drain(a.Layer, sendAt)
	if got, want := a.NextDeadline(sendAt), sendAt.Add(ms(300)); !got.Equal(want) {
		t.Errorf("NextDeadline: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if ds := drain(a.Layer, sendAt.Add(ms(300))); len(ds) != 1 {
		t.Fatalf("at the RTO: got %d datagrams, want 1", len(ds))
	}
	st := a.Stats()
	if want := max(before/2, minWindow*testMaxDatagram); st.Window != want {
		t.Errorf("window after a timeout: got %v, want %v", st.Window, want)
	}
	if st.RTO != ms(600) {
		t.Errorf("RTO after a timeout: got %v, want %v", st.RTO, ms(600))
	}
}

func TestReceipts(t *testing.T) {
	cases := []struct {
		name   string
		r      wire.Reliability
		size   int
		fate   string // "ack", "nack", "nack then ack", "ack then nack", "timeout", "dup ack"
		want   []bool // receipt values, in order
		resend bool   // the message is resent after the loss
	}{
		{name: "reliable acked", r: wire.ReliableWithAckReceipt, size: 100, fate: "ack", want: []bool{true}},
		{name: "reliable acked twice", r: wire.ReliableWithAckReceipt, size: 100, fate: "dup ack", want: []bool{true}},
		{name: "reliable NACKed then acked", r: wire.ReliableWithAckReceipt, size: 100, fate: "nack", want: []bool{true}, resend: true},
		{name: "ordered timeout then acked", r: wire.ReliableOrderedWithAckReceipt, size: 100, fate: "timeout", want: []bool{true}, resend: true},
		{name: "split acked", r: wire.ReliableWithAckReceipt, size: 5000, fate: "ack", want: []bool{true}},
		{name: "unreliable acked", r: wire.UnreliableWithAckReceipt, size: 100, fate: "ack", want: []bool{true}},
		{name: "unreliable NACKed", r: wire.UnreliableWithAckReceipt, size: 100, fate: "nack", want: []bool{false}},
		{name: "unreliable NACKed then acked", r: wire.UnreliableWithAckReceipt, size: 100, fate: "nack then ack", want: []bool{false}},
		{name: "unreliable acked then NACKed", r: wire.UnreliableWithAckReceipt, size: 100, fate: "ack then nack", want: []bool{true}},
		{name: "unreliable timeout", r: wire.UnreliableWithAckReceipt, size: 100, fate: "timeout", want: []bool{false}},
		// A split unreliable message travels reliably.
		{name: "unreliable split NACKed", r: wire.UnreliableWithAckReceipt, size: 5000, fate: "nack", want: []bool{true}, resend: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestPeer(t, Config{})
			id := mustSend(t, a.Layer, t0, msg(1, tc.size), tc.r, 0)
			if id == 0 {
				t.Fatalf("receipt id: got 0, want non-zero")
			}
			ds := drain(a.Layer, t0)
			all := wire.AckRange{Start: 0, End: wire.Uint24(len(ds) - 1)}
			now := t0.Add(ms(10))
			switch tc.fate {
			case "ack":
				mustHandle(t, a.Layer, now, ackDatagram(false, all))
			case "dup ack":
				mustHandle(t, a.Layer, now, ackDatagram(false, all))
				mustHandle(t, a.Layer, now, ackDatagram(false, all))
			case "nack":
				mustHandle(t, a.Layer, now, ackDatagram(true, all))
			case "nack then ack":
				mustHandle(t, a.Layer, now, ackDatagram(true, all))
				mustHandle(t, a.Layer, now, ackDatagram(false, all))
			case "ack then nack":
				mustHandle(t, a.Layer, now, ackDatagram(false, all))
				mustHandle(t, a.Layer, now, ackDatagram(true, all))
			case "timeout":
				now = t0.Add(InitialRTO)
			}
			resent := drain(a.Layer, now)
			if tc.resend != (len(resent) > 0) {
				t.Fatalf("resent %d datagrams, want resend %v", len(resent), tc.resend)
			}
			if tc.resend {
				if len(a.receipts) != 0 {
					t.Fatalf("receipts before the resend is acked: got %v, want none", a.receipts)
				}
				first := wire.Uint24(len(ds))
				mustHandle(t, a.Layer, now.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: first, End: first + wire.Uint24(len(resent)-1)}))
			}
			var got []bool
			for _, r := range a.receipts {
				if r.id != id {
					t.Errorf("receipt id: got %v, want %v", r.id, id)
				}
				got = append(got, r.acked)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("receipts: got %v, want %v", got, tc.want)
			}
			if a.Buffered() != 0 {
				t.Errorf("Buffered: got %v, want 0", a.Buffered())
			}
		})
	}
}

func TestReceiptIDs(t *testing.T) {
	a := newTestPeer(t, Config{})
	var ids []uint32
	for _, r := range []wire.Reliability{wire.ReliableWithAckReceipt, wire.Reliable, wire.UnreliableWithAckReceipt, wire.ReliableOrderedWithAckReceipt, wire.Unreliable} {
		ids = append(ids, mustSend(t, a.Layer, t0, []byte{1}, r, 0))
	}
	if want := []uint32{1, 0, 2, 3, 0}; !slices.Equal(ids, want) {
		t.Errorf("receipt ids: got %v, want %v", ids, want)
	}
}

// cleanPath returns one step of the clean path between two layers (msgs
// messages sent, packed, received and acknowledged), warmed up so that
// rings, free lists and windows are at their steady size, and the
// counters it keeps.
func cleanPath(tb testing.TB, msgs int) (op func(), datagrams *int, r *Layer) {
	deliver := func([]byte) bool { return false }
	a := New(Config{MaxDatagram: testMaxDatagram, Deliver: deliver}, t0)
	r = New(Config{MaxDatagram: testMaxDatagram, Deliver: deliver}, t0)
	p := make([]byte, 100)
	buf := make([]byte, 0, testMaxDatagram)
	now := t0
	datagrams = new(int)
	op = func() {
		now = now.Add(100 * time.Microsecond)
		for range msgs {
			if _, err := a.Send(now, p, wire.ReliableOrdered, 0); err != nil {
				tb.Fatalf("Send: %v", err)
			}
		}
		for d := a.AppendDatagram(buf[:0], now); d != nil; d = a.AppendDatagram(buf[:0], now) {
			*datagrams++
			if err := r.HandleDatagram(now, d); err != nil {
				tb.Fatalf("HandleDatagram: %v", err)
			}
		}
		for d := r.AppendDatagram(buf[:0], now); d != nil; d = r.AppendDatagram(buf[:0], now) {
			if err := a.HandleDatagram(now, d); err != nil {
				tb.Fatalf("HandleDatagram: %v", err)
			}
		}
	}
	for range 10_000 {
		op()
	}
	*datagrams = 0
	return op, datagrams, r
}

// TestCleanPathAllocs holds the clean path to zero allocations per step,
// one message or ten.
func TestCleanPathAllocs(t *testing.T) {
	for _, msgs := range []int{1, 10} {
		op, _, _ := cleanPath(t, msgs)
		if n := testing.AllocsPerRun(1000, op); n != 0 {
			t.Errorf("msgs=%d: got %v allocations per step, want 0", msgs, n)
		}
	}
}

// BenchmarkCleanPath measures one sender and one receiver on a lossless
// path: each op sends msgs 100-byte messages that go out in one datagram,
// which the receiver handles; its ACKs (every AckDelay or 32 datagrams) go
// back to the sender. allocs/op is allocations per data datagram.
func BenchmarkCleanPath(b *testing.B) {
	for _, msgs := range []int{1, 10} {
		b.Run(fmt.Sprintf("msgs=%d", msgs), func(b *testing.B) {
			op, datagrams, r := cleanPath(b, msgs)
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
			if *datagrams != b.N {
				b.Fatalf("sent %d datagrams in %d ops, want one per op", *datagrams, b.N)
			}
			if got := r.Stats().MessagesDelivered; got != uint64(msgs*(b.N+10_000)) {
				b.Fatalf("delivered %d messages, want %d", got, msgs*(b.N+10_000))
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
		mustHandle(t, b.Layer, now, dataDatagram(n, reliableFrame(n, []byte{1})))
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
	mustHandle(t, b.Layer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	if d := b.AppendDatagram(nil, t0); d != nil {
		t.Fatalf("got % x with nothing to send, want the ACK to wait", d)
	}
	if _, err := b.Send(t0, []byte{2}, wire.Unreliable, 0); err != nil {
		t.Fatal(err)
	}
	ds := drain(b.Layer, t0)
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

// Frames recycled after a burst are let go once the connection has been
// quiet for idleTrimAfter, and kept while it is busy.
func TestIdleTrimsFreeFrames(t *testing.T) {
	a := newTestPeer(t, Config{})
	b := newTestPeer(t, Config{})
	for i := range 20 {
		if _, err := a.Send(t0, []byte{0xfe, byte(i)}, wire.ReliableOrdered, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range drain(a.Layer, t0) {
		mustHandle(t, b.Layer, t0, d)
	}
	for _, d := range drain(b.Layer, t0.Add(DefaultAckDelay)) {
		mustHandle(t, a.Layer, t0.Add(DefaultAckDelay), d)
	}
	if a.Buffered() != 0 || len(a.q.free) < 20 {
		t.Fatalf("after the burst: got %d buffered, %d free frames, want 0, >= 20", a.Buffered(), len(a.q.free))
	}
	drain(a.Layer, t0.Add(idleTrimAfter/2))
	if len(a.q.free) < 20 {
		t.Fatalf("free frames before the idle time: got %d, want >= 20", len(a.q.free))
	}
	drain(a.Layer, t0.Add(DefaultAckDelay+idleTrimAfter))
	if len(a.q.free) != idleFreeFrames {
		t.Errorf("free frames after the idle time: got %d, want %d", len(a.q.free), idleFreeFrames)
	}
}

// TestNACKRepeated checks that a gap is NACKed again renackDelay, then
// twice and four times that, after the first NACK, and then no more: a
// lost NACK does not leave the gap to the sender's timeout.
func TestNACKRepeated(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.Layer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	mustHandle(t, b.Layer, t0, dataDatagram(3, reliableFrame(1, []byte{1})))
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
		mustHandle(t, b.Layer, t0, dataDatagram(n, frame(i, i)))
		n++
	}
	handleRefused(t, b.Layer, t0, dataDatagram(4, frame(5, 5)), errOrderQueueFull)
	handleRefused(t, b.Layer, t0, dataDatagram(5, frame(6, 6)), errOrderQueueFull)
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
	mustHandle(t, b.Layer, now, dataDatagram(6, frame(0, 0)))
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
	mustHandle(t, b.Layer, t0, dataDatagram(0, frame(2, 2)))
	mustHandle(t, b.Layer, t0, dataDatagram(1, frame(3, 3)))
	handleRefused(t, b.Layer, t0, dataDatagram(2, frame(1, 1)), errOrderQueueFull)
	// Message 0 arrives: the queue is still full (2 and 3 wait for 1), but
	// the channel now waits for 1, so its refused datagram is NACKed.
	mustHandle(t, b.Layer, t0, dataDatagram(3, frame(0, 0)))
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
		if err := b.HandleDatagram(t0, dataDatagram(uint32(i), f)); !errors.Is(err, errOrderQueueFull) {
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

// TestNACKNotRepeatedAfterArrival checks that a datagram that arrives
// after it was NACKed is not NACKed again: the repeat would make the
// sender resend it, and report an unreliable receipt as lost.
func TestNACKNotRepeatedAfterArrival(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.Layer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	mustHandle(t, b.Layer, t0, dataDatagram(3, reliableFrame(1, []byte{1})))
	at := t0.Add(minNACKDelay)
	for d := b.AppendDatagram(nil, at); d != nil; d = b.AppendDatagram(nil, at) {
	}
	mustHandle(t, b.Layer, at, dataDatagram(1, reliableFrame(2, []byte{1})))
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

// TestProbeAfterSilence loses the last fragment of a message with nothing
// after it, so no gap shows: after twice the RTT (at least 50 ms) of
// silence a NACK names the numbers the peer uses next, then again after
// doubling waits. A connection that waits for nothing never probes.
func TestProbeAfterSilence(t *testing.T) {
	idle := newTestPeer(t, Config{})
	mustHandle(t, idle.Layer, t0, dataDatagram(0, reliableFrame(0, []byte{1})))
	drain(idle.Layer, t0.Add(DefaultAckDelay))
	if got := idle.NextDeadline(t0.Add(DefaultAckDelay)); !got.IsZero() {
		t.Fatalf("idle: NextDeadline got %v, want zero", got.Sub(t0))
	}

	b := newTestPeer(t, Config{})
	mustHandle(t, b.Layer, t0, dataDatagram(0, splitFrame(0, 1, 2, 0, []byte{1})))
	drain(b.Layer, t0.Add(DefaultAckDelay))
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
	mustHandle(t, b.Layer, at, dataDatagram(1, splitFrame(1, 1, 2, 1, []byte{2})))
	drain(b.Layer, at.Add(DefaultAckDelay))
	if len(b.got) != 1 {
		t.Fatalf("delivered: got %d, want 1", len(b.got))
	}
	if got := b.NextDeadline(at.Add(DefaultAckDelay)); !got.IsZero() && got.Before(at.Add(time.Second)) {
		t.Errorf("after the message: NextDeadline got %v, want nothing soon", got.Sub(at))
	}
}
