package reliability

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// sendFull queues n messages that each fill a datagram and sends them at
// now, returning the datagrams.
func sendFull(t *testing.T, a *testPeer, now time.Time, n int, r wire.Reliability) [][]byte {
	t.Helper()
	for i := range n {
		p := bytes.Repeat([]byte{byte(i + 1)}, a.MaxUnsplit(r))
		mustSend(t, a.sinkLayer, now, p, r, 0)
	}
	ds := drain(a.sinkLayer, now)
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
			mustHandle(t, a.sinkLayer, now, ackDatagram(false, wire.AckRange{Start: wire.Uint24(tc.acked), End: wire.Uint24(tc.acked)}))
			if rto := a.sent.rtt.rto(); tc.ackAt >= rto {
				t.Fatalf("test needs the ACK before the RTO (%v)", rto)
			}
			var resent []uint32
			for _, d := range drain(a.sinkLayer, now) {
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
			mustSend(t, a.sinkLayer, t0, m0, wire.ReliableOrdered, 3)
			ds := drain(a.sinkLayer, t0)
			mustSend(t, a.sinkLayer, t0, m1, wire.ReliableOrdered, 3)
			ds = append(ds, drain(a.sinkLayer, t0)...)
			if len(ds) != 2 {
				t.Fatalf("sent %d datagrams, want 2", len(ds))
			}
			mustHandle(t, b.sinkLayer, t0.Add(ms(1)), ds[1]) // 0 is lost
			if len(b.got) != 0 {
				t.Fatalf("delivered %d messages before message 0, want 0", len(b.got))
			}
			now := t0.Add(tc.loseAt)
			if tc.nack {
				mustHandle(t, a.sinkLayer, now, ackDatagram(true, wire.AckRange{Start: 0, End: 0}))
			} else if d := a.AppendDatagram(nil, now.Add(-time.Nanosecond)); d != nil {
				t.Fatalf("1ns before the RTO: got % x, want no datagram", d)
			}
			resends := drain(a.sinkLayer, now)
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
				mustHandle(t, b.sinkLayer, now, d)
			}
			if tc.late {
				mustHandle(t, b.sinkLayer, now.Add(ms(1)), ds[0])
			}
			if len(b.got) != 2 || !bytes.Equal(b.got[0], m0) || !bytes.Equal(b.got[1], m1) {
				t.Fatalf("delivered %d messages, want messages 0 and 1 once, in order", len(b.got))
			}
			if got := a.Stats().DatagramsLost; got != tc.wantLost {
				t.Errorf("DatagramsLost: got %v, want %v", got, tc.wantLost)
			}
			// B acks everything; A ends with nothing buffered.
			for _, d := range drain(b.sinkLayer, now.Add(time.Second)) {
				mustHandle(t, a.sinkLayer, now.Add(time.Second), d)
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
	mustSend(t, a.sinkLayer, t0, payload, wire.ReliableOrdered, 0)
	var last time.Duration
	for i, st := range steps {
		now := t0.Add(st.at)
		ds := drain(a.sinkLayer, now)
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
	mustHandle(t, a.sinkLayer, now, ackDatagram(false, wire.AckRange{Start: 5, End: 5}))
	st := a.Stats()
	if st.RTO != InitialRTO {
		t.Errorf("RTO after the ACK: got %v, want %v", st.RTO, InitialRTO)
	}
	if st.SRTT != 0 {
		t.Errorf("SRTT after acking a resend: got %v, want 0", st.SRTT)
	}
	if !idle(a.sinkLayer) || a.Buffered() != 0 {
		t.Errorf("after the ACK: got Idle %v Buffered %v, want true 0", idle(a.sinkLayer), a.Buffered())
	}
	if got := a.NextDeadline(now); !got.IsZero() {
		t.Errorf("NextDeadline after the ACK: got %v, want zero", got.Sub(t0))
	}
}

// TestRTOAfterSample checks that the timeout follows the measured RTT and
// that the window collapses on a timeout.
func TestRTOAfterSample(t *testing.T) {
	a := newTestPeer(t, Config{})
	mustSend(t, a.sinkLayer, t0, []byte("ping"), wire.Reliable, 0)
	drain(a.sinkLayer, t0)
	mustHandle(t, a.sinkLayer, t0.Add(ms(100)), ackDatagram(false, wire.AckRange{Start: 0, End: 0}))
	// SRTT 100 ms, RTTVAR 50 ms: RTO 300 ms.
	if got, want := a.Stats().RTO, ms(300); got != want {
		t.Fatalf("RTO: got %v, want %v", got, want)
	}
	before := a.Stats().Window
	sendAt := t0.Add(ms(200))
	mustSend(t, a.sinkLayer, sendAt, []byte("pong"), wire.Reliable, 0)
	drain(a.sinkLayer, sendAt)
	if got, want := a.NextDeadline(sendAt), sendAt.Add(ms(300)); !got.Equal(want) {
		t.Errorf("NextDeadline: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if ds := drain(a.sinkLayer, sendAt.Add(ms(300))); len(ds) != 1 {
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

// Receipts reports each fate once, in the order learned: what one call
// returned the next does not return again, and an unreliable message lost
// by its timeout is reported by the AppendDatagram that ran the timeout.
func TestReceiptsTaken(t *testing.T) {
	a := newTestPeer(t, Config{})
	id1 := mustSend(t, a.sinkLayer, t0, msg(1, 100), wire.ReliableWithAckReceipt, 0)
	if d := drain(a.sinkLayer, t0); len(d) != 1 {
		t.Fatalf("sent %d datagrams, want 1", len(d))
	}
	id2 := mustSend(t, a.sinkLayer, t0, msg(2, 100), wire.UnreliableWithAckReceipt, 0)
	if d := drain(a.sinkLayer, t0); len(d) != 1 {
		t.Fatalf("sent %d datagrams, want 1", len(d))
	}
	if r := a.Receipts(); len(r) != 0 {
		t.Fatalf("receipts before any ACK: got %v, want none", r)
	}
	mustHandle(t, a.sinkLayer, t0.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: 0, End: 0}))
	if r := a.Receipts(); !slices.Equal(r, []Receipt{{ID: id1, Acked: true}}) {
		t.Fatalf("receipts after the ACK: got %v, want [{%d true}]", r, id1)
	}
	if r := a.Receipts(); len(r) != 0 {
		t.Fatalf("receipts taken again: got %v, want none", r)
	}
	drain(a.sinkLayer, t0.Add(MaxRTO))
	if r := a.Receipts(); !slices.Equal(r, []Receipt{{ID: id2}}) {
		t.Fatalf("receipts after the timeout: got %v, want [{%d false}]", r, id2)
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
			id := mustSend(t, a.sinkLayer, t0, msg(1, tc.size), tc.r, 0)
			if id == 0 {
				t.Fatalf("receipt id: got 0, want non-zero")
			}
			ds := drain(a.sinkLayer, t0)
			all := wire.AckRange{Start: 0, End: wire.Uint24(len(ds) - 1)}
			now := t0.Add(ms(10))
			switch tc.fate {
			case "ack":
				mustHandle(t, a.sinkLayer, now, ackDatagram(false, all))
			case "dup ack":
				mustHandle(t, a.sinkLayer, now, ackDatagram(false, all))
				mustHandle(t, a.sinkLayer, now, ackDatagram(false, all))
			case "nack":
				mustHandle(t, a.sinkLayer, now, ackDatagram(true, all))
			case "nack then ack":
				mustHandle(t, a.sinkLayer, now, ackDatagram(true, all))
				mustHandle(t, a.sinkLayer, now, ackDatagram(false, all))
			case "ack then nack":
				mustHandle(t, a.sinkLayer, now, ackDatagram(false, all))
				mustHandle(t, a.sinkLayer, now, ackDatagram(true, all))
			case "timeout":
				now = t0.Add(InitialRTO)
			}
			resent := drain(a.sinkLayer, now)
			if tc.resend != (len(resent) > 0) {
				t.Fatalf("resent %d datagrams, want resend %v", len(resent), tc.resend)
			}
			if tc.resend {
				if r := a.receipts(); len(r) != 0 {
					t.Fatalf("receipts before the resend is acked: got %v, want none", r)
				}
				first := wire.Uint24(len(ds))
				mustHandle(t, a.sinkLayer, now.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: first, End: first + wire.Uint24(len(resent)-1)}))
			}
			var got []bool
			for _, r := range a.receipts() {
				if r.ID != id {
					t.Errorf("receipt id: got %v, want %v", r.ID, id)
				}
				got = append(got, r.Acked)
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

// TestSentHandler drives the handler directly: one ACK gives one RTT
// sample and releases its frames, a NACK queues reliable frames for
// resend and reports an unreliable receipt as lost, and the RTO takes
// what is left.
func TestSentHandler(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram}
	cfg.fill()
	q := newSendQueue(&cfg, absBase)
	h := sentHandler{hist: newSentHistory(absBase), cc: newCongestion(cfg.MaxDatagram, MaxInFlight)}
	p := packer{maxDatagram: cfg.MaxDatagram}
	send := func(r wire.Reliability, now time.Time) uint32 {
		t.Helper()
		id, err := q.push(make([]byte, q.maxUnsplit(r)), r, 0)
		if err != nil {
			t.Fatal(err)
		}
		n, s := h.hist.add()
		d := p.pack(nil, now, n, s, &q)
		h.sent(s, len(d), now)
		return id
	}
	send(wire.Reliable, t0)                       // 0
	send(wire.Reliable, t0.Add(time.Millisecond)) // 1
	id := send(wire.UnreliableWithAckReceipt, t0) // 2
	send(wire.Reliable, t0)                       // 3
	ack := func(nack bool, now time.Time, lo, hi wire.Uint24) {
		a := wire.Ack{NACK: nack, Ranges: []wire.AckRange{{Start: lo, End: hi}}}
		h.onAck(now, &a, &q)
	}
	ack(false, t0.Add(50*time.Millisecond), 0, 1)
	if h.rtt.srtt != 49*time.Millisecond {
		t.Errorf("SRTT: got %v, want 49ms (one sample, from the newest)", h.rtt.srtt)
	}
	if h.hist.oldest != absBase+2 || len(q.free) != 2 {
		t.Errorf("after the ACK: got oldest %d, %d frames freed, want 2, 2", h.hist.oldest-absBase, len(q.free))
	}
	ack(true, t0.Add(60*time.Millisecond), 2, 2)
	if q.resend.len() != 0 || !slices.Equal(q.receipts, []Receipt{{ID: id}}) || h.lost != 1 {
		t.Errorf("after the NACK of the unreliable one: got %d to resend, receipts %v, %d lost, want 0, [{%d false}], 1", q.resend.len(), q.receipts, h.lost, id)
	}
	if d := h.rtoDeadline(); !d.Equal(t0.Add(h.rtt.rto())) {
		t.Errorf("RTO deadline: got %v, want %v", d.Sub(t0), h.rtt.rto())
	}
	h.onTimers(t0.Add(h.rtt.rto()), &q)
	if q.resend.len() != 1 || h.lost != 2 || h.rtt.backoff != 1 || h.cc.inFlight != 0 {
		t.Errorf("after the RTO: got %d to resend, %d lost, backoff %d, %d in flight, want 1, 2, 1, 0", q.resend.len(), h.lost, h.rtt.backoff, h.cc.inFlight)
	}
}

// A datagram deemed lost by its timeout that is acknowledged after all
// acknowledges its frames, though they were resent in another datagram:
// a spurious timeout costs no second round trip.
func TestLateAckOfTimedOutDatagram(t *testing.T) {
	for _, tc := range []struct {
		name   string
		resend bool // the resend left before the late ACK
	}{
		{"resent", true},
		{"queued for resend", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPeer(t, Config{})
			mustSend(t, p.sinkLayer, t0, []byte("last"), wire.ReliableOrdered, 0)
			first := drain(p.sinkLayer, t0)
			if len(first) != 1 {
				t.Fatalf("got %d datagrams, want 1", len(first))
			}
			n0, _ := decodeData(t, first[0])
			later := p.NextDeadline(t0)
			if !tc.resend {
				p.onTimers(later)
			} else if again := drain(p.sinkLayer, later); len(again) != 1 {
				t.Fatalf("after the RTO: got %d datagrams, want the resend", len(again))
			}
			if p.Buffered() == 0 {
				t.Fatal("nothing buffered after the timeout")
			}
			mustHandle(t, p.sinkLayer, later.Add(ms(1)), ackDatagram(false, wire.AckRange{Start: n0, End: n0}))
			if b := p.Buffered(); b != 0 {
				t.Errorf("after the late ACK: %d bytes buffered, want 0", b)
			}
			if d := drain(p.sinkLayer, later.Add(ms(2))); len(d) != 0 {
				t.Errorf("after the late ACK: %d datagrams sent, want none (nothing to resend)", len(d))
			}
		})
	}
}

// A NACKed datagram's frames are not acknowledged by a later ACK of its
// number: the peer said it did not arrive.
func TestNackedDatagramNotAckedLate(t *testing.T) {
	p := newTestPeer(t, Config{})
	mustSend(t, p.sinkLayer, t0, []byte("x"), wire.ReliableOrdered, 0)
	d := drain(p.sinkLayer, t0)
	n0, _ := decodeData(t, d[0])
	mustHandle(t, p.sinkLayer, t0.Add(ms(5)), ackDatagram(true, wire.AckRange{Start: n0, End: n0}))
	mustHandle(t, p.sinkLayer, t0.Add(ms(6)), ackDatagram(false, wire.AckRange{Start: n0, End: n0}))
	if p.Buffered() == 0 {
		t.Error("a NACKed datagram's ACK acknowledged its frame")
	}
}

func TestNackBudget(t *testing.T) {
	steps := []struct {
		at         time.Duration
		take       int
		wantTaken  int
		wantTokens int
	}{
		{at: 0, take: nackBurst + 10, wantTaken: nackBurst, wantTokens: 0},
		{at: nackToken - 1, take: 1, wantTaken: 0, wantTokens: 0},
		{at: nackToken, take: 1, wantTaken: 1, wantTokens: 0},
		// The fraction earned before a refill is kept: 1.5 tokens, then
		// half a token later 2.
		{at: 2*nackToken + nackToken/2, take: 0, wantTokens: 1},
		{at: 3 * nackToken, take: 0, wantTokens: 2},
		{at: 3*nackToken + 100*nackToken, take: 50, wantTaken: 50, wantTokens: 52},
		// Full after a second; idle time beyond that is not banked.
		{at: 10 * time.Second, take: 0, wantTokens: nackBurst},
		{at: 10*time.Second + nackToken/2, take: nackBurst, wantTaken: nackBurst, wantTokens: 0},
		{at: 10*time.Second + nackToken, take: 2, wantTaken: 0, wantTokens: 0},
		{at: 10*time.Second + nackToken/2 + nackToken, take: 2, wantTaken: 1, wantTokens: 0},
	}
	b := newNackBudget(t0)
	for i, s := range steps {
		b.refill(t0.Add(s.at))
		taken := 0
		for range s.take {
			if b.take() {
				taken++
			}
		}
		if taken != s.wantTaken || b.tokens != s.wantTokens {
			t.Fatalf("step %d at %v: took %v of %v, %v left, want %v, %v left", i, s.at, taken, s.take, b.tokens, s.wantTaken, s.wantTokens)
		}
	}
}

// NACKs make us resend at most the NACK budget; the datagrams NACKed
// beyond it stay in flight until their RTO.
func TestNackBudgetIgnoresNacks(t *testing.T) {
	p := newTestPeer(t, Config{})
	ds := sendFull(t, p, t0, 10, wire.Reliable)
	first, _ := decodeData(t, ds[0])
	last, _ := decodeData(t, ds[len(ds)-1])
	now := t0.Add(ms(5))
	p.sent.nacks.tokens, p.sent.nacks.last = 3, now
	mustHandle(t, p.sinkLayer, now, ackDatagram(true, wire.AckRange{Start: first, End: last}))
	st := p.Stats()
	if st.DatagramsLost != 3 || st.NacksIgnored != 7 {
		t.Errorf("after a NACK of 10 with 3 tokens: got %v lost, %v ignored, want 3, 7", st.DatagramsLost, st.NacksIgnored)
	}
	if got := len(drain(p.sinkLayer, now)); got != 3 {
		t.Errorf("resent %d datagrams, want 3", got)
	}
	// One token later, the same NACK resends one more; the three resent
	// are no longer in flight under their old numbers and cost nothing.
	now = now.Add(nackToken)
	mustHandle(t, p.sinkLayer, now, ackDatagram(true, wire.AckRange{Start: first, End: last}))
	if st := p.Stats(); st.DatagramsLost != 4 || st.NacksIgnored != 13 {
		t.Errorf("a token later: got %v lost, %v ignored, want 4, 13", st.DatagramsLost, st.NacksIgnored)
	}
	// The RTO resends those the budget left in flight.
	rto := p.sent.rtoDeadline()
	if !rto.Equal(t0.Add(InitialRTO)) {
		t.Fatalf("RTO deadline: got %v, want %v", rto.Sub(t0), InitialRTO)
	}
	if got := len(drain(p.sinkLayer, rto)); got != 6+1 {
		t.Errorf("at the RTO: resent %d datagrams, want the 6 NACKed beyond the budget and the one NACK resent", got)
	}
}

// A refused ACK changes nothing, however many records it has.
func TestBadAckChangesNothing(t *testing.T) {
	p := newTestPeer(t, Config{})
	ds := sendFull(t, p, t0, 4, wire.Reliable)
	first, _ := decodeData(t, ds[0])
	// Every record names what was sent, but they overlap: nothing is
	// acknowledged, not even by the first record.
	ranges := make([]wire.AckRange, wire.MaxAckRecords)
	for i := range ranges {
		ranges[i] = wire.AckRange{Start: first, End: first + 3}
	}
	before := p.Stats()
	if err := p.handleT(t0.Add(ms(5)), ackDatagram(false, ranges...)); !errors.Is(err, errAckOrder) {
		t.Fatalf("HandleDatagram: got error %v, want %v", err, errAckOrder)
	}
	after := p.Stats()
	if after.Buffered != before.Buffered || after.InFlight != before.InFlight || after.SRTT != 0 {
		t.Errorf("after a refused ACK: got buffered %v, in flight %v, SRTT %v, want %v, %v, 0", after.Buffered, after.InFlight, after.SRTT, before.Buffered, before.InFlight)
	}
	if after.BadAcks != 1 || after.Errors != 1 {
		t.Errorf("Stats: got BadAcks %v, Errors %v, want 1, 1", after.BadAcks, after.Errors)
	}
}

// BenchmarkAck measures handling one ACK datagram. hostile: 4096 records
// naming numbers never sent, all naming what is in flight, or naming
// each of the last 4096 numbers sent; valid: an ACK of 16 datagrams in
// flight, and its repeat, as our receiver sends every range twice.
func BenchmarkAck(b *testing.B) {
	many := func(r wire.AckRange) []byte {
		ranges := make([]wire.AckRange, wire.MaxAckRecords)
		for i := range ranges {
			ranges[i] = r
		}
		return ackDatagram(false, ranges...)
	}
	// A sender with 16 datagrams in flight (a pacing burst).
	setup := func(b *testing.B) (*sinkLayer, wire.AckRange) {
		p := newTestPeer(b, Config{})
		for range pacingBurst {
			mustSend(b, p.sinkLayer, t0, make([]byte, p.MaxUnsplit(wire.Reliable)), wire.Reliable, 0)
		}
		if got := len(drain(p.sinkLayer, t0)); got != pacingBurst {
			b.Fatalf("sent %d datagrams, want %d", got, pacingBurst)
		}
		return p.sinkLayer, wire.AckRange{Start: 0, End: pacingBurst - 1}
	}
	for _, bc := range []struct {
		name string
		d    func(in wire.AckRange) []byte
	}{
		{"hostile/never sent", func(wire.AckRange) []byte { return many(wire.AckRange{Start: 1 << 23, End: 1<<23 + 15}) }},
		{"hostile/overlapping", many},
		{"valid/repeat", func(in wire.AckRange) []byte { return ackDatagram(false, in) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, in := setup(b)
			d := bc.d(in)
			if bc.name == "valid/repeat" {
				mustHandle(b, l, t0.Add(ms(5)), d)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = l.handleT(t0.Add(ms(5)), d)
			}
		})
	}
	b.Run("hostile/accepted", func(b *testing.B) {
		// 4096 adjacent single records up to the last number sent, after
		// a history longer than that: sorted, disjoint and within the
		// numbers sent, so handled, each number visited once.
		p := newTestPeer(b, Config{})
		m := make([]byte, p.MaxUnsplit(wire.Reliable))
		now := t0
		var a wire.Ack
		for p.sent.hist.next-p.sent.hist.start < 2*wire.MaxAckRecords {
			first := p.sent.hist.next
			for range pacingBurst {
				mustSend(b, p.sinkLayer, now, m, wire.Reliable, 0)
			}
			drain(p.sinkLayer, now)
			now = now.Add(ms(1))
			mustHandle(b, p.sinkLayer, now, ackDatagram(false, wire.AckRange{Start: u24(first), End: u24(p.sent.hist.next - 1)}))
		}
		for range pacingBurst {
			mustSend(b, p.sinkLayer, now, m, wire.Reliable, 0)
		}
		drain(p.sinkLayer, now)
		for n := p.sent.hist.next - wire.MaxAckRecords; n < p.sent.hist.next; n++ {
			a.Ranges = append(a.Ranges, wire.AckRange{Start: u24(n), End: u24(n)})
		}
		d := a.Append(nil)
		mustHandle(b, p.sinkLayer, now.Add(ms(1)), d)
		b.ReportAllocs()
		for b.Loop() {
			_ = p.handleT(now.Add(ms(1)), d)
		}
	})
	b.Run("valid/fresh", func(b *testing.B) {
		// Each op sends 16 datagrams and handles their ACK.
		p := newTestPeer(b, Config{})
		m := make([]byte, p.MaxUnsplit(wire.Reliable))
		var buf []byte
		var a wire.Ack
		now := t0
		b.ReportAllocs()
		for b.Loop() {
			first := p.sent.hist.next
			for range pacingBurst {
				_, _ = p.Send(m, wire.Reliable, 0)
			}
			for d := p.AppendDatagram(buf[:0], now); d != nil; d = p.AppendDatagram(buf[:0], now) {
				buf = d
			}
			a.Ranges = append(a.Ranges[:0], wire.AckRange{Start: u24(first), End: u24(p.sent.hist.next - 1)})
			buf = a.Append(buf[:0])
			now = now.Add(ms(1))
			if err := p.handleT(now, buf); err != nil {
				b.Fatal(err)
			}
		}
		if p.Buffered() != 0 {
			b.Fatalf("buffered %d bytes, want 0", p.Buffered())
		}
	})
}

// A datagram of unreliable frames alone arms no RTO: nothing waits for
// its ACK, so an idle connection whose peer acknowledges on a slow tick
// does not wake for its pongs. Left unacknowledged past the RTO, it
// leaves the window on the next pass without a congestion event or
// backoff, and its late ACK is still taken; a reliable datagram keeps its
// RTO.
func TestUnreliableDatagramArmsNoRTO(t *testing.T) {
	p := newTestPeer(t, Config{})
	mustSend(t, p.sinkLayer, t0, []byte{0x03, 1, 2, 3}, wire.Unreliable, 0)
	if got := len(drain(p.sinkLayer, t0)); got != 1 {
		t.Fatalf("got %d datagrams, want 1", got)
	}
	if d := p.NextDeadline(t0); !d.IsZero() {
		t.Fatalf("deadline after an unreliable datagram: got %v, want none", d.Sub(t0))
	}
	window := p.Stats().Window
	later := t0.Add(10 * InitialRTO)
	drain(p.sinkLayer, later)
	st := p.Stats()
	if st.InFlight != 0 || st.Window != window || st.DatagramsLost != 0 || p.sent.rtt.backoff != 0 {
		t.Errorf("after its RTO: got %d in flight, window %d, %d lost, backoff %d, want 0, %d, 0, 0", st.InFlight, st.Window, st.DatagramsLost, p.sent.rtt.backoff, window)
	}
	// Its ACK, late, is taken without complaint.
	ack := wire.Ack{Ranges: []wire.AckRange{{Start: 0, End: 0}}}
	mustHandle(t, p.sinkLayer, later, ack.Append(nil))

	mustSend(t, p.sinkLayer, later, []byte{0xfe, 1}, wire.Reliable, 0)
	drain(p.sinkLayer, later)
	if d := p.NextDeadline(later); d.IsZero() || d.Sub(later) != p.sent.rtt.rto() {
		t.Errorf("deadline after a reliable datagram: got %v, want the RTO %v", d.Sub(later), p.sent.rtt.rto())
	}
	if p.sent.waiting != 1 {
		t.Errorf("got %d datagrams waited for, want 1", p.sent.waiting)
	}
	drain(p.sinkLayer, later.Add(p.sent.rtt.rto()))
	if p.sent.waiting != 1 || p.Stats().DatagramsLost != 1 {
		t.Errorf("after the reliable one's RTO: got %d waited for, %d lost, want 1 (its resend), 1", p.sent.waiting, p.Stats().DatagramsLost)
	}
}
