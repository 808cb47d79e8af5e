package reliability

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func TestSendErrors(t *testing.T) {
	cases := []struct {
		name string
		size int
		r    wire.Reliability
		ch   uint8
		want error
	}{
		{name: "too large", size: 1001, r: wire.ReliableOrdered, want: ErrMessageTooLarge},
		{name: "largest", size: 1000, r: wire.ReliableOrdered},
		{name: "empty", size: 0, r: wire.Reliable, want: ErrEmptyMessage},
		{name: "reliability 8", size: 10, r: 8, want: ErrReliability},
		{name: "reliability 255", size: 10, r: 255, want: ErrReliability},
		{name: "channel 32", size: 10, r: wire.ReliableOrdered, ch: 32, want: ErrInvalidChannel},
		{name: "channel 255", size: 10, r: wire.Unreliable, ch: 255, want: ErrInvalidChannel},
		{name: "channel 31", size: 10, r: wire.ReliableSequenced, ch: 31},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestPeer(t, Config{MaxMessageSize: 1000})
			_, err := a.Send(make([]byte, tc.size), tc.r, tc.ch)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Send: got error %v, want %v", err, tc.want)
			}
			wantBuf := 0
			if tc.want == nil {
				wantBuf = tc.size
			}
			if a.Buffered() != wantBuf || (a.q.pending.len() == 0) != (tc.want != nil) {
				t.Errorf("after Send: got Buffered %v, %d pending, want %v", a.Buffered(), a.q.pending.len(), wantBuf)
			}
			if tc.want != nil && a.Stats().MessagesSent != 0 {
				t.Errorf("MessagesSent: got %v, want 0", a.Stats().MessagesSent)
			}
		})
	}
	// The default limit is DefaultMaxMessageSize.
	a := newTestPeer(t, Config{})
	if _, err := a.Send(make([]byte, DefaultMaxMessageSize+1), wire.Reliable, 0); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("Send above the default limit: got error %v, want %v", err, ErrMessageTooLarge)
	}
}

func TestSendBufferFull(t *testing.T) {
	const limit = 10_000
	a := newTestPeer(t, Config{MaxSendBuffer: limit})
	for i := range limit / 1000 {
		mustSend(t, a.sinkLayer, t0, msg(i, 1000), wire.ReliableOrdered, 0)
	}
	if _, err := a.Send([]byte{1}, wire.ReliableOrdered, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Fatalf("Send into a full buffer: got error %v, want %v", err, ErrSendBufferFull)
	}
	if a.Buffered() != limit || a.q.pending.len() != limit/1000 {
		t.Errorf("after a refused Send: got Buffered %v, %d pending, want %v, %v", a.Buffered(), a.q.pending.len(), limit, limit/1000)
	}
	// Sending does not free the buffer; the ACK does.
	ds := drain(a.sinkLayer, t0)
	if a.Buffered() != limit {
		t.Errorf("Buffered while in flight: got %v, want %v", a.Buffered(), limit)
	}
	if _, err := a.Send([]byte{1}, wire.ReliableOrdered, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Fatalf("Send while in flight: got error %v, want %v", err, ErrSendBufferFull)
	}
	mustHandle(t, a.sinkLayer, t0.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: 0, End: wire.Uint24(len(ds) - 1)}))
	if a.Buffered() != 0 {
		t.Errorf("Buffered after the ACK: got %v, want 0", a.Buffered())
	}
	mustSend(t, a.sinkLayer, t0.Add(ms(10)), msg(99, 1000), wire.ReliableOrdered, 0)
	// One message larger than the whole buffer is accepted when it is empty.
	b := newTestPeer(t, Config{MaxSendBuffer: limit})
	mustSend(t, b.sinkLayer, t0, make([]byte, 3*limit), wire.Reliable, 0)
	if _, err := b.Send([]byte{1}, wire.Reliable, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Errorf("Send after an oversized message: got error %v, want %v", err, ErrSendBufferFull)
	}
}

func TestReceiptIDs(t *testing.T) {
	a := newTestPeer(t, Config{})
	var ids []uint32
	for _, r := range []wire.Reliability{wire.ReliableWithAckReceipt, wire.Reliable, wire.UnreliableWithAckReceipt, wire.ReliableOrderedWithAckReceipt, wire.Unreliable} {
		ids = append(ids, mustSend(t, a.sinkLayer, t0, []byte{1}, r, 0))
	}
	if want := []uint32{1, 0, 2, 3, 0}; !slices.Equal(ids, want) {
		t.Errorf("receipt ids: got %v, want %v", ids, want)
	}
}

// Frames recycled after a burst are let go once the connection has been
// quiet for idleTrimAfter, and kept while it is busy.
func TestIdleTrimsFreeFrames(t *testing.T) {
	a := newTestPeer(t, Config{})
	b := newTestPeer(t, Config{})
	for i := range 20 {
		if _, err := a.Send([]byte{0xfe, byte(i)}, wire.ReliableOrdered, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range drain(a.sinkLayer, t0) {
		mustHandle(t, b.sinkLayer, t0, d)
	}
	for _, d := range drain(b.sinkLayer, t0.Add(DefaultAckDelay)) {
		mustHandle(t, a.sinkLayer, t0.Add(DefaultAckDelay), d)
	}
	if a.Buffered() != 0 || len(a.q.free) < 20 {
		t.Fatalf("after the burst: got %d buffered, %d free frames, want 0, >= 20", a.Buffered(), len(a.q.free))
	}
	drain(a.sinkLayer, t0.Add(idleTrimAfter/2))
	if len(a.q.free) < 20 {
		t.Fatalf("free frames before the idle time: got %d, want >= 20", len(a.q.free))
	}
	drain(a.sinkLayer, t0.Add(DefaultAckDelay+idleTrimAfter))
	if len(a.q.free) != idleFreeFrames {
		t.Errorf("free frames after the idle time: got %d, want %d", len(a.q.free), idleFreeFrames)
	}
}

func TestSendQueueSplit(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram}
	cfg.fill()
	unsplit := testMaxDatagram - wire.DatagramHeaderSize - wire.FrameHeaderSize(wire.Reliable, true)
	cases := []struct {
		name   string
		size   int
		r      wire.Reliability
		frames int
		wire   wire.Reliability // reliability of every frame
	}{
		{name: "fits one frame", size: 100, r: wire.Unreliable, frames: 1, wire: wire.Unreliable},
		{name: "split", size: 2*unsplit + 1, r: wire.ReliableOrdered, frames: 3, wire: wire.ReliableOrdered},
		{name: "exactly two fragments", size: 2 * unsplit, r: wire.Reliable, frames: 2, wire: wire.Reliable},
		{name: "unreliable split travels reliably", size: 5000, r: wire.Unreliable, frames: 4, wire: wire.Reliable},
		{name: "unreliable sequenced split travels reliably", size: 5000, r: wire.UnreliableSequenced, frames: 4, wire: wire.ReliableSequenced},
		{name: "receipt variant on the wire", size: 100, r: wire.ReliableOrderedWithAckReceipt, frames: 1, wire: wire.ReliableOrdered},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := newSendQueue(&cfg, absBase)
			p := msg(1, tc.size)
			if _, err := q.push(p, tc.r, 3); err != nil {
				t.Fatalf("push: %v", err)
			}
			if q.pending.len() != tc.frames || q.buffered != tc.size {
				t.Fatalf("got %d frames, %d bytes buffered, want %d, %d", q.pending.len(), q.buffered, tc.frames, tc.size)
			}
			var joined []byte
			for i := range tc.frames {
				ref, _ := q.pending.peek()
				q.pending.pop()
				f := &ref.f.frame
				if f.Reliability != tc.wire || f.Split != (tc.frames > 1) || (f.Split && (f.SplitCount != uint32(tc.frames) || f.SplitIndex != uint32(i))) {
					t.Fatalf("frame %d: got %v split %v %d/%d, want %v", i, f.Reliability, f.Split, f.SplitIndex, f.SplitCount, tc.wire)
				}
				if f.Size() > testMaxDatagram-wire.DatagramHeaderSize {
					t.Fatalf("frame %d: got %d bytes, want a datagram's worth at most", i, f.Size())
				}
				joined = append(joined, f.Payload...)
			}
			if !bytes.Equal(joined, p) {
				t.Errorf("fragments: got %d bytes joined, want the message", len(joined))
			}
		})
	}
}

// TestSendQueueWindows checks that a new reliable frame waits for room in
// the reliable window, and a split message's first fragment for room
// among the splits partly sent.
func TestSendQueueWindows(t *testing.T) {
	cfg := Config{MaxDatagram: testMaxDatagram}
	cfg.fill()
	q := newSendQueue(&cfg, absBase)
	if _, err := q.push([]byte{1}, wire.Reliable, 0); err != nil {
		t.Fatal(err)
	}
	q.relNext = q.relAcked.base + sendReliableWindow
	if q.canSendNew() {
		t.Errorf("reliable window full: got canSendNew true, want false")
	}
	q.relNext--
	if !q.canSendNew() {
		t.Errorf("one index left: got canSendNew false, want true")
	}
	q = newSendQueue(&cfg, absBase)
	if _, err := q.push(make([]byte, 3000), wire.Reliable, 0); err != nil {
		t.Fatal(err)
	}
	q.splitsActive = maxSendSplits
	if q.canSendNew() {
		t.Errorf("splits at their limit: got canSendNew true for a new split, want false")
	}
	q.splitsActive--
	ref, _ := q.pending.peek()
	q.pending.pop()
	q.take(ref.f)
	if q.splitsActive != maxSendSplits || !q.canSendNew() {
		t.Errorf("after its first fragment: got %d splits active, canSendNew %v, want %d, true (the rest of a started split)", q.splitsActive, q.canSendNew(), maxSendSplits)
	}
}

// TestResendQueue checks that frames leave the resend queue lowest
// reliable index first, and that an entry keeps the index it was queued
// with when its frame is recycled and renumbered.
func TestResendQueue(t *testing.T) {
	var q resendQueue
	frames := map[uint64]*outFrame{}
	for _, rel := range []uint64{40, 7, 99, 3, 12, 12 + 1, 0, 64, 5, 31, 2, 77} {
		f := &outFrame{relIndex: rel}
		frames[rel] = f
		q.push(frameRef{f, f.gen})
	}
	// 64 is acknowledged late and its frame reused for index 1: the stale
	// entry still sorts as 64 and is dead.
	stale := frames[64]
	stale.gen++
	stale.relIndex = 1
	var got []uint64
	var dead []bool
	for q.len() > 0 {
		ref, _ := q.peek()
		got = append(got, q.h[0].rel)
		dead = append(dead, !ref.live())
		q.pop()
	}
	want := []uint64{0, 2, 3, 5, 7, 12, 13, 31, 40, 64, 77, 99}
	if !slices.Equal(got, want) {
		t.Errorf("popped: got %v, want %v", got, want)
	}
	if i := slices.Index(dead, true); i != slices.Index(want, 64) || slices.Index(dead[i+1:], true) >= 0 {
		t.Errorf("dead entries: got %v, want only the one queued as 64", dead)
	}
	if _, ok := q.peek(); ok {
		t.Error("peek of an empty queue: got a frame")
	}
}

// Frames are resent lowest reliable index first, not in the order they
// were deemed lost: those a receiver waits for leave first.
func TestResendLowestIndexFirst(t *testing.T) {
	p := newTestPeer(t, Config{})
	ds := sendFull(t, p, t0, 10, wire.Reliable)
	num := func(i int) wire.Uint24 { n, _ := decodeData(t, ds[i]); return n }
	now := t0.Add(ms(5))
	// The newer half is lost first, then the older.
	mustHandle(t, p.sinkLayer, now, ackDatagram(true, wire.AckRange{Start: num(5), End: num(9)}))
	mustHandle(t, p.sinkLayer, now, ackDatagram(true, wire.AckRange{Start: num(0), End: num(4)}))
	var got []uint32
	// The pacer lets some leave now, the rest a little later.
	for _, d := range append(drain(p.sinkLayer, now), drain(p.sinkLayer, now.Add(ms(50)))...) {
		_, frames := decodeData(t, d)
		for _, f := range frames {
			got = append(got, uint32(f.ReliableIndex))
		}
	}
	if want := []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("resent reliable indexes: got %v, want %v", got, want)
	}
}
