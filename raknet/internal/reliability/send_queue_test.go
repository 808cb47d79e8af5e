package reliability

import (
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
			_, err := a.Send(t0, make([]byte, tc.size), tc.r, tc.ch)
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
	if _, err := a.Send(t0, make([]byte, DefaultMaxMessageSize+1), wire.Reliable, 0); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("Send above the default limit: got error %v, want %v", err, ErrMessageTooLarge)
	}
}

func TestSendBufferFull(t *testing.T) {
	const limit = 10_000
	a := newTestPeer(t, Config{MaxSendBuffer: limit})
	for i := range limit / 1000 {
		mustSend(t, a.Layer, t0, msg(i, 1000), wire.ReliableOrdered, 0)
	}
	if _, err := a.Send(t0, []byte{1}, wire.ReliableOrdered, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Fatalf("Send into a full buffer: got error %v, want %v", err, ErrSendBufferFull)
	}
	if a.Buffered() != limit || a.q.pending.len() != limit/1000 {
		t.Errorf("after a refused Send: got Buffered %v, %d pending, want %v, %v", a.Buffered(), a.q.pending.len(), limit, limit/1000)
	}
	// Sending does not free the buffer; the ACK does.
	ds := drain(a.Layer, t0)
	if a.Buffered() != limit {
		t.Errorf("Buffered while in flight: got %v, want %v", a.Buffered(), limit)
	}
	if _, err := a.Send(t0, []byte{1}, wire.ReliableOrdered, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Fatalf("Send while in flight: got error %v, want %v", err, ErrSendBufferFull)
	}
	mustHandle(t, a.Layer, t0.Add(ms(10)), ackDatagram(false, wire.AckRange{Start: 0, End: wire.Uint24(len(ds) - 1)}))
	if a.Buffered() != 0 {
		t.Errorf("Buffered after the ACK: got %v, want 0", a.Buffered())
	}
	mustSend(t, a.Layer, t0.Add(ms(10)), msg(99, 1000), wire.ReliableOrdered, 0)
	// One message larger than the whole buffer is accepted when it is empty.
	b := newTestPeer(t, Config{MaxSendBuffer: limit})
	mustSend(t, b.Layer, t0, make([]byte, 3*limit), wire.Reliable, 0)
	if _, err := b.Send(t0, []byte{1}, wire.Reliable, 0); !errors.Is(err, ErrSendBufferFull) {
		t.Errorf("Send after an oversized message: got error %v, want %v", err, ErrSendBufferFull)
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
