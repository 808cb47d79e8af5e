package reliability

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// The tests in this file feed a receiver what a hostile peer could send
// and check that every cap holds: the error, and that the state stays
// bounded and the refused datagram is not acknowledged.

// splitFrame is a reliable fragment.
func splitFrame(rel uint32, id uint16, count, index uint32, p []byte) wire.Frame {
	return wire.Frame{Reliability: wire.Reliable, ReliableIndex: wire.Uint24(rel), Split: true, SplitID: id, SplitCount: count, SplitIndex: index, Payload: p}
}

// acked reports whether datagram number n (relative to InitialRecv 0) is
// pending acknowledgement.
func acked(l *sinkLayer, n uint32) bool {
	abs := absBase + uint64(n)
	for _, v := range l.recv.acks.iv {
		if v.lo <= abs && abs <= v.hi {
			return true
		}
	}
	return false
}

// handleRefused feeds d and checks it is refused with want and not acked.
func handleRefused(t *testing.T, l *sinkLayer, now time.Time, d []byte, want error) {
	t.Helper()
	var h wire.DatagramHeader
	_, _ = h.Decode(d)
	errs := l.stats.Errors
	err := l.handleT(now, d)
	if !matchErr(err, want) {
		t.Fatalf("HandleDatagram: got error %v, want %v", err, want)
	}
	if acked(l, uint32(h.Number)) {
		t.Errorf("refused datagram %d: got acked, want not acked", h.Number)
	}
	if l.stats.Errors != errs+1 {
		t.Errorf("Stats.Errors: got %v, want %v", l.stats.Errors, errs+1)
	}
}

func TestHostileSplitCount(t *testing.T) {
	cases := []struct {
		name      string
		count     uint32
		maxCount  int
		want      error
		wantList  int
		wantBytes int
	}{
		{name: "2^32-1", count: 1<<32 - 1, want: errSplitCount},
		{name: "one above the limit", count: DefaultMaxSplitCount + 1, want: errSplitCount},
		{name: "configured limit", count: 65, maxCount: 64, want: errSplitCount},
		{name: "at the limit", count: DefaultMaxSplitCount, wantList: 1, wantBytes: DefaultMaxSplitCount*partOverhead + 10},
		{name: "at a configured limit", count: 64, maxCount: 64, wantList: 1, wantBytes: 64*partOverhead + 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{MaxSplitCount: tc.maxCount})
			d := dataDatagram(0, splitFrame(0, 1, tc.count, 0, make([]byte, 10)))
			if tc.want != nil {
				handleRefused(t, b.sinkLayer, t0, d, tc.want)
			} else {
				mustHandle(t, b.sinkLayer, t0, d)
			}
			if len(b.rcv.asm.list) != tc.wantList || b.rcv.asm.bytes != tc.wantBytes {
				t.Errorf("assembler: got %d messages, %d bytes, want %d, %d", len(b.rcv.asm.list), b.rcv.asm.bytes, tc.wantList, tc.wantBytes)
			}
		})
	}
}

func TestHostileConcurrentSplits(t *testing.T) {
	b := newTestPeer(t, Config{})
	n := uint32(0)
	for id := range DefaultMaxConcurrentSplits {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, splitFrame(n, uint16(id), 2, 0, []byte{byte(id)})))
		n++
	}
	handleRefused(t, b.sinkLayer, t0, dataDatagram(n, splitFrame(n, 9999, 2, 0, []byte{1})), errSplitConc)
	if got := len(b.rcv.asm.list); got != DefaultMaxConcurrentSplits {
		t.Fatalf("messages in progress: got %v, want %v", got, DefaultMaxConcurrentSplits)
	}
	// A datagram whose first frame would open one more is not
	// acknowledged; its second frame, completing a message in progress, is
	// kept, and its resend then takes what was refused.
	mixed := dataDatagram(n, splitFrame(n+1, 10000, 2, 0, []byte{1}), splitFrame(n, 3, 2, 1, []byte{3}))
	handleRefused(t, b.sinkLayer, t0, mixed, errSplitConc)
	if len(b.got) != 1 || !bytes.Equal(b.got[0], []byte{3, 3}) || len(b.rcv.asm.list) != DefaultMaxConcurrentSplits-1 {
		t.Fatalf("after a refused datagram: got %v delivered, %d in progress, want [[3 3]], %d", b.got, len(b.rcv.asm.list), DefaultMaxConcurrentSplits-1)
	}
	n++
	resend := dataDatagram(n, splitFrame(n, 10000, 2, 0, []byte{1}), splitFrame(n-1, 3, 2, 1, []byte{3}))
	mustHandle(t, b.sinkLayer, t0, resend)
	if !acked(b.sinkLayer, n) || len(b.got) != 1 || len(b.rcv.asm.list) != DefaultMaxConcurrentSplits {
		t.Fatalf("after the resend: acked %v, %d delivered, %d in progress, want true, 1, %d", acked(b.sinkLayer, n), len(b.got), len(b.rcv.asm.list), DefaultMaxConcurrentSplits)
	}
	n++
	// Still full: another new id is refused.
	handleRefused(t, b.sinkLayer, t0, dataDatagram(n, splitFrame(n+1, 9999, 2, 0, []byte{1})), errSplitConc)
	if got := len(b.rcv.asm.list); got != DefaultMaxConcurrentSplits {
		t.Errorf("messages in progress: got %v, want %v", got, DefaultMaxConcurrentSplits)
	}
	// Many new ids in one datagram: those that fit are kept, the datagram
	// is not acknowledged, and the cap holds.
	c := newTestPeer(t, Config{MaxConcurrentSplits: 4})
	var frames []wire.Frame
	for i := range 5 {
		frames = append(frames, splitFrame(uint32(i), uint16(i), 2, 0, []byte{1}))
	}
	handleRefused(t, c.sinkLayer, t0, dataDatagram(0, frames...), errSplitConc)
	if len(c.rcv.asm.list) != 4 {
		t.Errorf("assembler: got %d messages, want 4", len(c.rcv.asm.list))
	}
}

func TestHostileSplitBytes(t *testing.T) {
	const limit = 10_000
	cases := []struct {
		name   string
		count  uint32
		size   int
		accept int // fragments accepted before the refusal
	}{
		// A message is charged its whole size at its first fragment:
		// 100·(1000+24) could never complete within the limit.
		{name: "message larger than the limit", count: 100, size: 1000, accept: 0},
		// 8192·24 announced bytes alone exceed the limit.
		{name: "announced count exceeds the limit", count: 8192, size: 10, accept: 0},
		// Messages of 2·(1300+24) each: three fit, a fourth would not.
		{name: "messages fill the limit", count: 2, size: 1300, accept: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{MaxSplitBytes: limit})
			for i := range tc.accept + 1 {
				id, index := uint16(1), uint32(i)
				if tc.count == 2 {
					id, index = uint16(i), 0 // a new message per fragment
				}
				d := dataDatagram(uint32(i), splitFrame(uint32(i), id, tc.count, index, make([]byte, tc.size)))
				if i < tc.accept {
					mustHandle(t, b.sinkLayer, t0, d)
					continue
				}
				handleRefused(t, b.sinkLayer, t0, d, errSplitBytes)
			}
			if b.rcv.asm.bytes > limit || b.rcv.asm.committed > limit {
				t.Errorf("assembler bytes: got %v held, %v committed, want <= %v", b.rcv.asm.bytes, b.rcv.asm.committed, limit)
			}
			sum := 0
			for _, m := range b.rcv.asm.list {
				sum += m.bytes
			}
			if sum != b.rcv.asm.bytes {
				t.Errorf("assembler bytes: got %v, want the sum of its messages %v", b.rcv.asm.bytes, sum)
			}
		})
	}
}

func TestHostileReliableIndex(t *testing.T) {
	const window = 256
	cases := []struct {
		name    string
		first   uint32 // indexes 0..first-1 arrive first
		index   uint32
		want    error
		deliver bool // delivered once the gap before it is filled
	}{
		{name: "2^23 ahead reads as old", index: 1 << 23},
		{name: "2^23 ahead of a moved base", first: 10, index: 10 + 1<<23},
		{name: "window ahead", index: window, want: errTooFarAhead},
		{name: "far ahead", index: 1<<23 - 1, want: errTooFarAhead},
		{name: "last in the window", index: window - 1, deliver: true},
		{name: "window ahead of a moved base", first: 10, index: 10 + window, want: errTooFarAhead},
		// From base 10 the four words reach 255: a span of 246, not 256.
		// Refusing 265 unacknowledged is fine (the sender resends it once
		// the base moves); acknowledging and then dropping it is not.
		{name: "window ahead of a moved base, unaligned", first: 10, index: 10 + window - 1, want: errTooFarAhead},
		{name: "last word of a moved base", first: 10, index: 255, deliver: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{ReliableWindow: window})
			dn := uint32(0)
			for i := range tc.first {
				mustHandle(t, b.sinkLayer, t0, dataDatagram(dn, reliableFrame(i, []byte{byte(i)})))
				dn++
			}
			base := b.rcv.relWin.base
			n := len(b.got)
			d := dataDatagram(dn, reliableFrame(tc.index, []byte("far")))
			if tc.want != nil {
				handleRefused(t, b.sinkLayer, t0, d, tc.want)
			} else {
				err := b.handleT(t0, d)
				if err != nil && acked(b.sinkLayer, dn) {
					// Acknowledged but not kept: the sender would never
					// resend it, so the message would be lost.
					t.Fatalf("HandleDatagram: got error %v for a datagram it acknowledged", err)
				}
				if err != nil {
					t.Fatalf("HandleDatagram: got error %v, want nil", err)
				}
			}
			dn++
			if b.rcv.relWin.base != base {
				t.Errorf("reliable window base: got %v, want %v", b.rcv.relWin.base-absBase, base-absBase)
			}
			if len(b.rcv.relWin.ring) > b.rcv.relWin.maxWords {
				t.Errorf("reliable window: got %d words, want <= %d", len(b.rcv.relWin.ring), b.rcv.relWin.maxWords)
			}
			for i := tc.first; i < tc.index && tc.deliver; i++ {
				mustHandle(t, b.sinkLayer, t0, dataDatagram(dn, reliableFrame(i, []byte{byte(i)})))
				dn++
			}
			delivered := false
			for _, m := range b.got[n:] {
				delivered = delivered || string(m) == "far"
			}
			if delivered != tc.deliver {
				t.Errorf("message at index %d delivered: got %v, want %v", tc.index, delivered, tc.deliver)
			}
		})
	}
}

func TestHostileDatagramNumber(t *testing.T) {
	cases := []struct {
		name      string
		number    uint32
		want      error
		accepted  bool
		nack      bool
		duplicate bool
	}{
		// Any jump short of 2^23 is taken: refusing it would wedge a
		// connection whose peer lost a long run of datagrams.
		{name: "far jump", number: 1 << 20, accepted: true},
		{name: "2^23 ahead reads as old", number: 1 + 1<<23, duplicate: true},
		{name: "2^23-1 ahead", number: 1<<23 - 1, accepted: true},
		{name: "beyond the NACK range", number: maxNACKGap + 2, accepted: true},
		{name: "NACK range", number: maxNACKGap + 1, accepted: true, nack: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{})
			mustHandle(t, b.sinkLayer, t0, dataDatagram(0, reliableFrame(0, []byte{0})))
			high := b.recv.high
			d := dataDatagram(tc.number, reliableFrame(1, []byte{1}))
			err := b.handleT(t0, d)
			switch {
			case tc.want != nil:
				if !matchErr(err, tc.want) {
					t.Fatalf("HandleDatagram: got error %v, want %v", err, tc.want)
				}
				if acked(b.sinkLayer, tc.number) || b.recv.high != high || !b.nacks.set.empty() {
					t.Errorf("refused datagram changed the state: acked %v, high %v, NACKs %v", acked(b.sinkLayer, tc.number), b.recv.high-absBase, b.nacks.set.iv)
				}
				if b.stats.Errors != 1 {
					t.Errorf("Stats.Errors: got %v, want 1", b.stats.Errors)
				}
			case err != nil:
				t.Fatalf("HandleDatagram: got error %v, want nil", err)
			}
			if got := acked(b.sinkLayer, tc.number); got != tc.accepted {
				t.Errorf("acked: got %v, want %v", got, tc.accepted)
			}
			if got := !b.nacks.set.empty(); got != tc.nack {
				t.Errorf("NACK pending: got %v, want %v", got, tc.nack)
			}
			if got := b.Stats().DuplicateDatagrams == 1; got != tc.duplicate {
				t.Errorf("counted as duplicate: got %v, want %v", got, tc.duplicate)
			}
			if got := len(b.got) == 2; got != tc.accepted {
				t.Errorf("frame delivered: got %v, want %v", got, tc.accepted)
			}
			if len(b.recv.win.ring) > datagramWindowSpan/64 {
				t.Errorf("datagram window: got %d words, want <= %d", len(b.recv.win.ring), datagramWindowSpan/64)
			}
			if len(b.recv.acks.iv) > maxAckIntervals || len(b.nacks.set.iv) > maxAckIntervals {
				t.Errorf("ACK sets: got %d and %d intervals, want <= %d", len(b.recv.acks.iv), len(b.nacks.set.iv), maxAckIntervals)
			}
		})
	}
}

// errAny marks a case that wants an error without a sentinel to match.
var errAny = errors.New("any error")

// matchErr reports whether err is want, or any error for errAny.
func matchErr(err, want error) bool {
	if want == errAny {
		return err != nil
	}
	return errors.Is(err, want)
}

// TestHostileDatagramStorm sends datagrams with scattered numbers, each
// leaving a gap, and checks that the ACK and NACK sets and the window stay
// within their caps.
func TestHostileDatagramStorm(t *testing.T) {
	b := newTestPeer(t, Config{})
	n := uint32(0)
	for i := range 5000 {
		n += 2 + uint32(i%3)
		_ = b.handleT(t0, dataDatagram(n&uint32(wire.MaxUint24), wire.Frame{Reliability: wire.Unreliable, Payload: []byte{1}}))
		if len(b.recv.acks.iv) > maxAckIntervals || len(b.nacks.set.iv) > maxAckIntervals {
			t.Fatalf("after %d datagrams: ACK sets hold %d and %d intervals, want <= %d", i, len(b.recv.acks.iv), len(b.nacks.set.iv), maxAckIntervals)
		}
	}
	if len(b.recv.win.ring) > datagramWindowSpan/64 {
		t.Errorf("datagram window: got %d words, want <= %d", len(b.recv.win.ring), datagramWindowSpan/64)
	}
	// Flushing sends datagrams no larger than MaxDatagram.
	for _, d := range drain(b.sinkLayer, t0.Add(time.Second)) {
		if len(d) > testMaxDatagram {
			t.Errorf("ACK datagram: got %d bytes, want <= %d", len(d), testMaxDatagram)
		}
		decodeAck(t, d)
	}
	if !b.recv.acks.empty() || !b.nacks.set.empty() {
		t.Errorf("after flushing: got %d ACK and %d NACK intervals, want none", len(b.recv.acks.iv), len(b.nacks.set.iv))
	}
}

func TestHostileAck(t *testing.T) {
	// rawAck writes records as given, bypassing the encoder.
	rawAck := func(id byte, count int, records ...[]byte) []byte {
		b := []byte{id, byte(count >> 8), byte(count)}
		for _, r := range records {
			b = append(b, r...)
		}
		return b
	}
	rangeRec := func(lo, hi wire.Uint24) []byte {
		return wire.AppendUint24(wire.AppendUint24([]byte{0}, lo), hi)
	}
	var many [][]byte
	for i := range wire.MaxAckRecords + 1 {
		many = append(many, []byte{1, byte(i), byte(i >> 8), 0})
	}
	cases := []struct {
		name string
		d    []byte
		want error // nil: accepted and harmless
	}{
		{name: "millions of numbers", d: rawAck(0xc0, 1, rangeRec(0, wire.MaxUint24-1)), want: wire.ErrTooMany},
		{name: "millions of numbers NACKed", d: rawAck(0xa0, 1, rangeRec(0, wire.MaxUint24-1)), want: wire.ErrTooMany},
		{name: "many ranges adding up", d: rawAck(0xc0, 3, rangeRec(0, 40000), rangeRec(40001, 65535), rangeRec(70000, 80000)), want: wire.ErrTooMany},
		{name: "too many records", d: rawAck(0xc0, len(many), many...), want: wire.ErrTooMany},
		{name: "reversed range", d: rawAck(0xc0, 1, rangeRec(10, 5)), want: wire.ErrInvalid},
		{name: "count beyond the bytes", d: rawAck(0xc0, 1000, rangeRec(0, 1)), want: io.ErrUnexpectedEOF},
		{name: "never sent, ahead", d: ackDatagram(false, wire.AckRange{Start: 100, End: 60000}), want: errAckSpan},
		{name: "never sent, behind", d: ackDatagram(false, wire.AckRange{Start: wire.MaxUint24 - 50000, End: wire.MaxUint24}), want: errAckSpan},
		{name: "never sent, half way round", d: ackDatagram(false, wire.AckRange{Start: 1 << 23, End: 1<<23 + 60000}), want: errAckSpan},
		{name: "NACK never sent", d: ackDatagram(true, wire.AckRange{Start: 100, End: 60000}), want: errAckSpan},
		{name: "one sent, one not", d: ackDatagram(false, wire.AckRange{Start: 0, End: 0}, wire.AckRange{Start: 3, End: 3}), want: errAckSpan},
		{name: "overlapping", d: ackDatagram(false, wire.AckRange{Start: 0, End: 1}, wire.AckRange{Start: 1, End: 2}), want: errAckOrder},
		{name: "descending", d: ackDatagram(false, wire.AckRange{Start: 2, End: 2}, wire.AckRange{Start: 0, End: 0}), want: errAckOrder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestPeer(t, Config{})
			for i := range 3 {
				mustSend(t, a.sinkLayer, t0, msg(i, 1000), wire.ReliableWithAckReceipt, 0)
			}
			mustSend(t, a.sinkLayer, t0, msg(3, 100), wire.UnreliableWithAckReceipt, 0)
			if got := len(drain(a.sinkLayer, t0)); got != 3 {
				t.Fatalf("sent %d datagrams, want 3", got)
			}
			before := a.Stats()
			deadline := a.NextDeadline(t0)
			if err := a.handleT(t0.Add(ms(10)), tc.d); !matchErr(err, tc.want) {
				t.Fatalf("HandleDatagram: got error %v, want %v", err, tc.want)
			}
			after := a.Stats()
			if after.InFlight != before.InFlight || after.Buffered != before.Buffered || after.Window != before.Window || after.DatagramsLost != 0 || after.SRTT != 0 {
				t.Errorf("state changed: got %+v, want as before %+v", after, before)
			}
			if r := a.receipts(); len(r) != 0 {
				t.Errorf("receipts: got %v, want none", r)
			}
			if got := a.NextDeadline(t0.Add(ms(10))); !got.Equal(deadline) {
				t.Errorf("NextDeadline: got %v, want %v", got.Sub(t0), deadline.Sub(t0))
			}
			if ds := drain(a.sinkLayer, t0.Add(ms(10))); len(ds) != 0 {
				t.Errorf("sent %d datagrams, want none", len(ds))
			}
		})
	}
	// An ACK before anything was sent is refused too.
	a := newTestPeer(t, Config{})
	for _, nack := range []bool{false, true} {
		if err := a.handleT(t0, ackDatagram(nack, wire.AckRange{Start: 0, End: 1000})); !errors.Is(err, errAckSpan) {
			t.Errorf("ACK (NACK %v) before anything was sent: got error %v, want %v", nack, err, errAckSpan)
		}
	}
	if st := a.Stats(); st.BadAcks != 2 || st.Errors != 2 {
		t.Errorf("Stats: got BadAcks %v, Errors %v, want 2, 2", st.BadAcks, st.Errors)
	}
	if !idle(a.sinkLayer) || !a.NextDeadline(t0).IsZero() {
		t.Errorf("after a stray ACK: got Idle %v, NextDeadline %v, want true, zero", idle(a.sinkLayer), a.NextDeadline(t0))
	}
}

func TestHostileOrderQueue(t *testing.T) {
	// The byte limit counts queued messages and the ring's slots: 5000
	// bytes of messages plus the smallest ring (8 slots).
	const queue, limit = 1024, 5000 + 8*slotSize
	cases := []struct {
		name       string
		limit      int      // MaxOrderBytes if not the default above
		indexes    []uint32 // order indexes on channel 7, in arrival order
		refused    int      // position of the refused one, -1 for none
		wantBytes  int      // queued bytes before the gap is filled
		maxRing    int
		delivered  int // delivered after index 0 arrives
		afterBytes int // queued bytes then
	}{
		{name: "queue limit", indexes: []uint32{queue}, refused: 0, delivered: 1},
		{name: "far ahead", indexes: []uint32{1<<23 - 1}, refused: 0, delivered: 1},
		{name: "last in the queue", limit: queue*1000 + queue*slotSize, indexes: []uint32{queue - 1}, refused: -1, wantBytes: 1000 + queue*slotSize, maxRing: queue, delivered: 1, afterBytes: 1000 + queue*slotSize},
		// Room for it and its ring, but not for the messages before it
		// were they as large.
		{name: "too far ahead for its size", limit: 1000 + queue*slotSize, indexes: []uint32{queue - 1}, refused: 0, delivered: 1},
		{name: "ring too big for the byte limit", indexes: []uint32{queue - 1}, refused: 0, delivered: 1},
		// 2^23 ahead reads as old: dropped, not queued.
		{name: "2^23 ahead", indexes: []uint32{1 << 23}, refused: -1, delivered: 1},
		{name: "byte limit", indexes: []uint32{1, 2, 3, 4, 5, 6}, refused: 5, wantBytes: limit, maxRing: 8, delivered: 6},
		{name: "duplicate queued once", indexes: []uint32{2, 2, 1}, refused: -1, wantBytes: 2000 + 8*slotSize, maxRing: 8, delivered: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := limit
			if tc.limit != 0 {
				lim = tc.limit
			}
			b := newTestPeer(t, Config{MaxOrderQueue: queue, MaxOrderBytes: lim})
			rel := uint32(0)
			for i, idx := range tc.indexes {
				f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(idx), OrderChannel: 7, Payload: bytes.Repeat([]byte{byte(idx)}, 1000)}
				d := dataDatagram(rel, f)
				if i == tc.refused {
					handleRefused(t, b.sinkLayer, t0, d, errOrderQueueFull)
				} else {
					mustHandle(t, b.sinkLayer, t0, d)
				}
				rel++
			}
			c := b.rcv.order.get(7)
			if b.rcv.order.bytes != tc.wantBytes {
				t.Errorf("queued bytes: got %v, want %v", b.rcv.order.bytes, tc.wantBytes)
			}
			if len(c.ring) > tc.maxRing {
				t.Errorf("ring slots: got %v, want <= %v", len(c.ring), tc.maxRing)
			}
			if len(b.got) != 0 {
				t.Fatalf("delivered %d messages before index 0, want 0", len(b.got))
			}
			mustHandle(t, b.sinkLayer, t0, dataDatagram(rel, wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderChannel: 7, Payload: []byte{0}}))
			if len(b.got) != tc.delivered {
				t.Errorf("delivered: got %v, want %v", len(b.got), tc.delivered)
			}
			for i, m := range b.got {
				if m[0] != byte(i) {
					t.Errorf("delivery %d: got message %d, want %d", i, m[0], i)
				}
			}
			if b.rcv.order.bytes != tc.afterBytes {
				t.Errorf("queued bytes after delivery: got %v, want %v", b.rcv.order.bytes, tc.afterBytes)
			}
		})
	}
}

// TestHostileOrderQueueAllChannels fills every channel's queue to the cap
// with one tiny message each and reports the memory the rings take: the
// cap bounds it, but the ring's slice headers are not counted against
// MaxOrderBytes.
func TestHostileOrderQueueAllChannels(t *testing.T) {
	const queue = 4096
	b := newTestPeer(t, Config{MaxOrderQueue: queue})
	for ch := range uint32(wire.NumOrderChannels) {
		f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(ch), OrderIndex: queue - 1, OrderChannel: uint8(ch), Payload: []byte{1}}
		mustHandle(t, b.sinkLayer, t0, dataDatagram(ch, f))
	}
	slots := 0
	for ch := range b.rcv.order.ch {
		if n := len(b.rcv.order.ch[ch].ring); n > queue {
			t.Errorf("channel %d ring: got %d slots, want <= %d", ch, n, queue)
		}
		slots += len(b.rcv.order.ch[ch].ring)
	}
	if want := wire.NumOrderChannels + slots*slotSize; b.rcv.order.bytes != want {
		t.Errorf("queued bytes: got %v, want %v (messages and ring slots)", b.rcv.order.bytes, want)
	}
	t.Logf("%d one-byte messages hold %d ring slots (%d KiB of slice headers)", wire.NumOrderChannels, slots, slots*24/1024)

	// With a byte cap below what the rings would take, the rings are
	// refused: their memory counts against MaxOrderBytes.
	const maxBytes = 200 << 10
	c := newTestPeer(t, Config{MaxOrderQueue: queue, MaxOrderBytes: maxBytes})
	refused := 0
	for ch := range uint32(wire.NumOrderChannels) {
		f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(ch), OrderIndex: queue - 1, OrderChannel: uint8(ch), Payload: []byte{1}}
		if err := c.handleT(t0, dataDatagram(ch, f)); err != nil {
			if !errors.Is(err, errOrderQueueFull) {
				t.Fatalf("channel %d: got %v, want %v", ch, err, errOrderQueueFull)
			}
			refused++
		}
	}
	if c.rcv.order.bytes > maxBytes || refused == 0 {
		t.Errorf("order bytes %d with %d refused: want <= %d with some refused", c.rcv.order.bytes, refused, maxBytes)
	}
}

func TestStaleSplitExpiry(t *testing.T) {
	const timeout = 30 * time.Second
	b := newTestPeer(t, Config{SplitTimeout: timeout})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, splitFrame(0, 5, 3, 0, []byte("a"))))
	mustHandle(t, b.sinkLayer, t0.Add(ms(1)), dataDatagram(1, splitFrame(1, 6, 2, 0, []byte("b"))))
	if got, want := b.NextDeadline(t0), t0.Add(DefaultAckDelay); !got.Equal(want) {
		t.Errorf("NextDeadline with an ACK pending: got %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	drain(b.sinkLayer, t0.Add(DefaultAckDelay))
	// Probes for the missing fragments may come first.
	if got, want := b.NextDeadline(t0.Add(DefaultAckDelay)), t0.Add(timeout); got.IsZero() || got.After(want) {
		t.Fatalf("NextDeadline: got %v, want by %v", got.Sub(t0), want.Sub(t0))
	}
	drain(b.sinkLayer, t0.Add(timeout-1))
	if len(b.rcv.asm.list) != 2 {
		t.Fatalf("1ns before the timeout: got %d messages in progress, want 2", len(b.rcv.asm.list))
	}
	drain(b.sinkLayer, t0.Add(timeout))
	if len(b.rcv.asm.list) != 1 || b.rcv.asm.list[0].id != 6 {
		t.Fatalf("at the timeout: got %d messages in progress, want only split 6", len(b.rcv.asm.list))
	}
	if got, want := b.NextDeadline(t0.Add(timeout)), t0.Add(timeout+ms(1)); got.IsZero() || got.After(want) {
		t.Errorf("NextDeadline: got %v, want by %v", got.Sub(t0), want.Sub(t0))
	}
	drain(b.sinkLayer, t0.Add(timeout+ms(1)))
	if len(b.rcv.asm.list) != 0 || b.rcv.asm.bytes != 0 {
		t.Errorf("after both timeouts: got %d messages, %d bytes, want 0, 0", len(b.rcv.asm.list), b.rcv.asm.bytes)
	}
	if got := b.Stats().Errors; got != 2 {
		t.Errorf("Stats.Errors: got %v, want 2", got)
	}
	if got := b.NextDeadline(t0.Add(timeout + ms(1))); !got.IsZero() {
		t.Errorf("NextDeadline when empty: got %v, want zero", got.Sub(t0))
	}
	if len(b.got) != 0 {
		t.Errorf("delivered: got %d messages, want 0", len(b.got))
	}
}

// TestSlowSplitNotExpired: a message whose fragments keep arriving is not
// dropped however long it takes in total; its fragments were acknowledged,
// so dropping it would lose it for good.
func TestSlowSplitNotExpired(t *testing.T) {
	const timeout = 30 * time.Second
	b := newTestPeer(t, Config{SplitTimeout: timeout})
	const count = 5
	for i := range uint32(count) {
		now := t0.Add(time.Duration(i) * 20 * time.Second)
		drain(b.sinkLayer, now)
		mustHandle(t, b.sinkLayer, now, dataDatagram(i, splitFrame(i, 9, count, i, []byte{byte('a' + i)})))
		drain(b.sinkLayer, now.Add(DefaultAckDelay))
		if i < count-1 {
			if got, want := b.NextDeadline(now.Add(DefaultAckDelay)), now.Add(timeout); got.IsZero() || got.After(want) {
				t.Errorf("fragment %d: NextDeadline: got %v, want by %v", i, got.Sub(t0), want.Sub(t0))
			}
		}
	}
	if len(b.got) != 1 || string(b.got[0]) != "abcde" {
		t.Errorf("delivered: got %q, want [abcde]", b.got)
	}
	if b.Stats().Errors != 0 {
		t.Errorf("Stats.Errors: got %v, want 0", b.Stats().Errors)
	}
}

func TestDuplicateFragment(t *testing.T) {
	cases := []struct {
		name   string
		frames []wire.Frame // one per datagram
	}{
		{name: "same fragment resent", frames: []wire.Frame{
			splitFrame(0, 1, 2, 0, []byte("ab")), splitFrame(0, 1, 2, 0, []byte("ab")), splitFrame(1, 1, 2, 1, []byte("cd")), splitFrame(1, 1, 2, 1, []byte("cd")),
		}},
		{name: "same fragment under new reliable indexes", frames: []wire.Frame{
			splitFrame(0, 1, 2, 0, []byte("ab")), splitFrame(1, 1, 2, 0, []byte("XX")), splitFrame(2, 1, 2, 1, []byte("cd")), splitFrame(0, 1, 2, 1, []byte("cd")),
		}},
		{name: "unreliable fragments", frames: []wire.Frame{
			{Split: true, SplitID: 1, SplitCount: 2, SplitIndex: 0, Payload: []byte("ab")},
			{Split: true, SplitID: 1, SplitCount: 2, SplitIndex: 0, Payload: []byte("XX")},
			{Split: true, SplitID: 1, SplitCount: 2, SplitIndex: 1, Payload: []byte("cd")},
		}},
		{name: "whole message replayed", frames: []wire.Frame{
			splitFrame(0, 1, 2, 0, []byte("ab")), splitFrame(1, 1, 2, 1, []byte("cd")), splitFrame(0, 1, 2, 0, []byte("ab")), splitFrame(1, 1, 2, 1, []byte("cd")),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{})
			for i, f := range tc.frames {
				mustHandle(t, b.sinkLayer, t0, dataDatagram(uint32(i), f))
			}
			if len(b.got) != 1 || string(b.got[0]) != "abcd" {
				t.Errorf("delivered: got %q, want [abcd] once", b.got)
			}
			if len(b.rcv.asm.list) > 1 {
				t.Errorf("messages in progress: got %v, want <= 1", len(b.rcv.asm.list))
			}
		})
	}
	// The assembler alone never completes a message twice: duplicates of
	// a message in progress are dropped. (Once complete its id is free;
	// split ids wrap, so a later fragment starts a new message.)
	for _, seq := range [][]uint32{{0, 0, 0, 1}, {0, 1, 1, 1, 2}, {2, 2, 1, 0}} {
		a := assembler{maxCount: 8, maxConc: 4, maxBytes: 1 << 20, timeout: time.Second}
		completions := 0
		for _, idx := range seq {
			f := wire.Frame{Split: true, SplitID: 3, SplitCount: uint32(slices.Max(seq) + 1), SplitIndex: idx, Payload: []byte{byte(idx)}}
			_, done, err := a.add(&f, t0)
			if err != nil {
				t.Fatalf("add: got error %v, want nil", err)
			}
			if done {
				completions++
			}
		}
		if completions != 1 || len(a.list) != 0 || a.bytes != 0 {
			t.Errorf("fragments %v: got %d completions, %d in progress, %d bytes, want 1, 0, 0", seq, completions, len(a.list), a.bytes)
		}
	}
}

func TestSplitShapeMismatch(t *testing.T) {
	b := newTestPeer(t, Config{})
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, splitFrame(0, 1, 3, 0, []byte("a"))))
	err := b.handleT(t0, dataDatagram(1, splitFrame(1, 1, 5, 4, []byte("b"))))
	if !errors.Is(err, errSplitShape) {
		t.Errorf("HandleDatagram: got error %v, want %v", err, errSplitShape)
	}
	if m := b.rcv.asm.list[0]; m.received != 1 || m.count != 3 {
		t.Errorf("message in progress: got %d received of %d, want 1 of 3", m.received, m.count)
	}
}

func TestHostileFrameFields(t *testing.T) {
	cases := []struct {
		name    string
		d       []byte
		want    error // nil: accepted
		deliver string
	}{
		// flags 0x60 (ReliableOrdered), 8 bits, reliable 0, order 0, channel 32.
		{name: "channel 32", d: []byte{0x84, 0, 0, 0, 0x60, 0, 8, 0, 0, 0, 0, 0, 0, 32, 'x'}, want: wire.ErrInvalid},
		{name: "split count 0", d: []byte{0x84, 0, 0, 0, 0x10, 0, 8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 'x'}, want: wire.ErrInvalid},
		{name: "split index beyond count", d: []byte{0x84, 0, 0, 0, 0x10, 0, 8, 0, 0, 0, 2, 0, 1, 0, 0, 0, 2, 'x'}, want: wire.ErrInvalid},
		{name: "empty payload", d: []byte{0x84, 0, 0, 0, 0x00, 0, 0}, want: wire.ErrInvalid},
		{name: "truncated", d: []byte{0x84, 0, 0, 0, 0x00, 0, 16, 'x'}, want: io.ErrUnexpectedEOF},
		{name: "not valid", d: []byte{0x04, 0, 0, 0, 0x00, 0, 8, 'x'}, want: errAny},
		{name: "empty datagram", d: []byte{}, want: errAny},
		// Reliabilities 5-7 on the wire read as 0, 2 and 3.
		{name: "reliability 5", d: []byte{0x84, 0, 0, 0, 0xa0, 0, 8, 'x'}, deliver: "x"},
		{name: "reliability 6", d: []byte{0x84, 0, 0, 0, 0xc0, 0, 8, 0, 0, 0, 'y'}, deliver: "y"},
		{name: "reliability 7", d: []byte{0x84, 0, 0, 0, 0xe0, 0, 8, 0, 0, 0, 0, 0, 0, 5, 'z'}, deliver: "z"},
		{name: "header only", d: []byte{0x84, 0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestPeer(t, Config{})
			if err := b.handleT(t0, tc.d); !matchErr(err, tc.want) {
				t.Fatalf("HandleDatagram: got error %v, want %v", err, tc.want)
			}
			if got := acked(b.sinkLayer, 0); got != (tc.want == nil) {
				t.Errorf("acked: got %v, want %v", got, tc.want == nil)
			}
			var got string
			for _, m := range b.got {
				got += string(m)
			}
			if got != tc.deliver {
				t.Errorf("delivered: got %q, want %q", got, tc.deliver)
			}
		})
	}
}

// TestHostileSplitOrderAhead checks that a split message whose order index
// could not wait in the ordering queue is refused at its first fragment,
// before any fragment is acknowledged: completing it later would have to
// drop a message whose datagrams were already acked.
func TestHostileSplitOrderAhead(t *testing.T) {
	const queue = 64
	b := newTestPeer(t, Config{MaxOrderQueue: queue})
	frag := func(rel, idx uint32, order uint32) wire.Frame {
		f := splitFrame(rel, 9, 2, idx, []byte("ab"))
		f.Reliability = wire.ReliableOrdered
		f.OrderIndex = wire.Uint24(order)
		return f
	}
	handleRefused(t, b.sinkLayer, t0, dataDatagram(0, frag(0, 0, queue)), errOrderQueueFull)
	if len(b.rcv.asm.list) != 0 {
		t.Fatalf("messages in progress: got %d, want 0", len(b.rcv.asm.list))
	}
	// Within the queue it is accepted, waits, and is delivered in turn.
	mustHandle(t, b.sinkLayer, t0, dataDatagram(1, frag(1, 0, queue-1)))
	mustHandle(t, b.sinkLayer, t0, dataDatagram(2, frag(2, 1, queue-1)))
	if len(b.got) != 0 || b.rcv.order.get(0).queued != 1 {
		t.Fatalf("got %d delivered, %d queued, want 0, 1", len(b.got), b.rcv.order.get(0).queued)
	}
}

// TestOrderQueueFullStillTakesTheMissingMessage fills a channel's queue
// behind a missing message, then sends the missing one in a datagram with
// a frame the full queue must refuse: the missing message is still taken,
// so the queue drains and the refused frame gets in on its resend. A
// connection whose queue is full never wedges.
func TestOrderQueueFullStillTakesTheMissingMessage(t *testing.T) {
	const queue = 8
	b := newTestPeer(t, Config{MaxOrderQueue: queue})
	frame := func(rel, order uint32) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(order), Payload: []byte{byte(order)}}
	}
	n := uint32(0)
	for i := uint32(1); i < queue; i++ {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, frame(i, i)))
		n++
	}
	mixed := dataDatagram(n, frame(queue, queue), frame(0, 0))
	handleRefused(t, b.sinkLayer, t0, mixed, errOrderQueueFull)
	if len(b.got) != queue {
		t.Fatalf("delivered: got %d, want %d", len(b.got), queue)
	}
	n++
	mustHandle(t, b.sinkLayer, t0, dataDatagram(n, frame(queue, queue), frame(0, 0)))
	if !acked(b.sinkLayer, n) || len(b.got) != queue+1 {
		t.Fatalf("after the resend: acked %v, %d delivered, want true, %d", acked(b.sinkLayer, n), len(b.got), queue+1)
	}
	for i, m := range b.got {
		if m[0] != byte(i) {
			t.Fatalf("delivery %d: got message %d, want %d", i, m[0], i)
		}
	}
}

// orderedFragment is fragment index of split message id, reliable-ordered
// with order index order on channel 0.
func orderedFragment(rel uint32, id uint16, count, index, order uint32, p []byte) wire.Frame {
	f := splitFrame(rel, id, count, index, p)
	f.Reliability = wire.ReliableOrdered
	f.OrderIndex = wire.Uint24(order)
	return f
}

// TestCompletedSplitIsNeverDropped completes a split message ahead of its
// turn after its fragments were acknowledged: it must be queued and
// delivered, whatever filled the queue meanwhile, since the sender never
// sends it again. The queue's byte cap still holds throughout.
func TestCompletedSplitIsNeverDropped(t *testing.T) {
	const maxBytes = 2000
	b := newTestPeer(t, Config{MaxOrderBytes: maxBytes})
	plain := func(rel, order uint32, size int) wire.Frame {
		return wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(rel), OrderIndex: wire.Uint24(order), Payload: bytes.Repeat([]byte{byte(order)}, size)}
	}
	check := func(step string) {
		t.Helper()
		if b.rcv.order.bytes > maxBytes {
			t.Fatalf("%s: ordering queue holds %d bytes, cap %d", step, b.rcv.order.bytes, maxBytes)
		}
	}
	// Message 2 in two fragments, the last one small.
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, orderedFragment(0, 7, 2, 0, 2, bytes.Repeat([]byte{2}, 300))))
	check("first fragment")
	// Message 1 would leave no room for message 2 once complete: refused.
	handleRefused(t, b.sinkLayer, t0, dataDatagram(1, plain(1, 1, 1600)), errOrderQueueFull)
	mustHandle(t, b.sinkLayer, t0, dataDatagram(2, orderedFragment(2, 7, 2, 1, 2, bytes.Repeat([]byte{2}, 10))))
	check("message 2 complete")
	if b.rcv.order.get(0).queued != 1 {
		t.Fatalf("queued: got %d, want 1 (message 2)", b.rcv.order.get(0).queued)
	}
	mustHandle(t, b.sinkLayer, t0, dataDatagram(3, plain(3, 0, 100)))
	check("message 0")
	mustHandle(t, b.sinkLayer, t0, dataDatagram(4, plain(1, 1, 1600)))
	check("message 1 resent")
	want := []int{100, 1600, 310}
	if len(b.got) != len(want) {
		t.Fatalf("delivered: got %d messages, want %d", len(b.got), len(want))
	}
	for i, m := range b.got {
		if len(m) != want[i] || m[0] != byte(i) {
			t.Fatalf("delivery %d: got %d bytes of %d, want %d bytes of %d", i, len(m), m[0], want[i], i)
		}
	}
}

// TestWaitingSplitsLeaveRoomForTheNext fills reassembly with split messages
// that wait behind a missing one, up to the part of the limits they may
// use: the missing message, when it comes, is still taken, and everything
// is delivered in order. Without the reserve the queue would wedge.
func TestWaitingSplitsLeaveRoomForTheNext(t *testing.T) {
	t.Run("messages in progress", func(t *testing.T) {
		const conc = 8
		b := newTestPeer(t, Config{MaxConcurrentSplits: conc})
		ahead := conc - b.rcv.asm.reserveSlots()
		n := uint32(0)
		for i := 1; i <= ahead; i++ {
			mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, uint16(i), 2, 0, uint32(i), []byte{byte(i)})))
			n++
		}
		handleRefused(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, 100, 2, 0, uint32(ahead+1), []byte{1})), errSplitConc)
		n++
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, 0, 2, 0, 0, []byte{0})))
		n++
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, 0, 2, 1, 0, []byte{0})))
		n++
		for i := 1; i <= ahead; i++ {
			mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, uint16(i), 2, 1, uint32(i), []byte{byte(i)})))
			n++
		}
		if len(b.got) != ahead+1 {
			t.Fatalf("delivered: got %d, want %d", len(b.got), ahead+1)
		}
		for i, m := range b.got {
			if !bytes.Equal(m, []byte{byte(i), byte(i)}) {
				t.Fatalf("delivery %d: got %v", i, m)
			}
		}
	})
	t.Run("bytes", func(t *testing.T) {
		const limit = 8000
		b := newTestPeer(t, Config{MaxSplitBytes: limit})
		part := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000) }
		n := uint32(0)
		i := 1
		for ; ; i++ {
			f := orderedFragment(n, uint16(i), 2, 0, uint32(i), part(i))
			if b.rcv.asm.committed+b.rcv.asm.estimate(&f) > limit-b.rcv.asm.reserveBytes() {
				handleRefused(t, b.sinkLayer, t0, dataDatagram(n, f), errSplitBytes)
				n++
				break
			}
			mustHandle(t, b.sinkLayer, t0, dataDatagram(n, f))
			n++
		}
		ahead := i - 1
		if ahead < 2 {
			t.Fatalf("only %d messages fit ahead", ahead)
		}
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, 0, 2, 0, 0, part(0))))
		n++
		mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, 0, 2, 1, 0, part(0))))
		n++
		for i := 1; i <= ahead; i++ {
			mustHandle(t, b.sinkLayer, t0, dataDatagram(n, orderedFragment(n, uint16(i), 2, 1, uint32(i), part(i))))
			n++
		}
		if len(b.got) != ahead+1 {
			t.Fatalf("delivered: got %d, want %d", len(b.got), ahead+1)
		}
		for i, m := range b.got {
			if len(m) != 2000 || m[0] != byte(i) {
				t.Fatalf("delivery %d: got %d bytes of %d", i, len(m), m[0])
			}
		}
	})
}

// TestSplitChargedWhole checks that a new split message is charged its
// whole estimated size at its first fragment, and that a last fragment
// arriving first (often shorter than the rest) does not make it cheap.
func TestSplitChargedWhole(t *testing.T) {
	b := newTestPeer(t, Config{})
	part := b.rcv.asm.maxPart
	cases := []struct {
		name string
		f    wire.Frame
		want int
	}{
		{"first fragment", splitFrame(0, 1, 10, 0, make([]byte, 500)), 10 * (500 + partOverhead)},
		{"last fragment first", splitFrame(0, 1, 10, 9, make([]byte, 20)), 9*(part+partOverhead) + 20 + partOverhead},
		{"single fragment", splitFrame(0, 1, 1, 0, make([]byte, 20)), 20 + partOverhead},
	}
	for _, tc := range cases {
		if got := b.rcv.asm.estimate(&tc.f); got != tc.want {
			t.Errorf("%s: estimate got %d, want %d", tc.name, got, tc.want)
		}
	}
	mustHandle(t, b.sinkLayer, t0, dataDatagram(0, splitFrame(0, 1, 10, 9, make([]byte, 20))))
	if want := 9*(part+partOverhead) + 20 + partOverhead; b.rcv.asm.committed != want {
		t.Errorf("committed after the last fragment: got %d, want %d", b.rcv.asm.committed, want)
	}
	for i := range uint32(9) {
		mustHandle(t, b.sinkLayer, t0, dataDatagram(1+i, splitFrame(1+i, 1, 10, i, make([]byte, part))))
	}
	if len(b.got) != 1 || len(b.got[0]) != 9*part+20 || b.rcv.asm.committed != 0 || b.rcv.asm.bytes != 0 {
		t.Errorf("after completion: %d delivered, committed %d, held %d, want 1, 0, 0", len(b.got), b.rcv.asm.committed, b.rcv.asm.bytes)
	}
}
