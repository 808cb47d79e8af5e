package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestReliability(t *testing.T) {
	tests := []struct {
		r          Reliability
		name       string
		wire       Reliability
		reliable   bool
		sequenced  bool
		ordered    bool
		ackReceipt bool
	}{
		{Unreliable, "Unreliable", Unreliable, false, false, false, false},
		{UnreliableSequenced, "UnreliableSequenced", UnreliableSequenced, false, true, true, false},
		{Reliable, "Reliable", Reliable, true, false, false, false},
		{ReliableOrdered, "ReliableOrdered", ReliableOrdered, true, false, true, false},
		{ReliableSequenced, "ReliableSequenced", ReliableSequenced, true, true, true, false},
		{UnreliableWithAckReceipt, "UnreliableWithAckReceipt", Unreliable, false, false, false, true},
		{ReliableWithAckReceipt, "ReliableWithAckReceipt", Reliable, true, false, false, true},
		{ReliableOrderedWithAckReceipt, "ReliableOrderedWithAckReceipt", ReliableOrdered, true, false, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.String(); got != tc.name {
				t.Errorf("String: got %v, want %v", got, tc.name)
			}
			if !tc.r.Valid() {
				t.Errorf("Valid: got false, want true")
			}
			if got := tc.r.Wire(); got != tc.wire {
				t.Errorf("Wire: got %v, want %v", got, tc.wire)
			}
			if got := tc.r.Reliable(); got != tc.reliable {
				t.Errorf("Reliable: got %v, want %v", got, tc.reliable)
			}
			if got := tc.r.Sequenced(); got != tc.sequenced {
				t.Errorf("Sequenced: got %v, want %v", got, tc.sequenced)
			}
			if got := tc.r.Ordered(); got != tc.ordered {
				t.Errorf("Ordered: got %v, want %v", got, tc.ordered)
			}
			if got := tc.r.AckReceipt(); got != tc.ackReceipt {
				t.Errorf("AckReceipt: got %v, want %v", got, tc.ackReceipt)
			}
		})
	}
	if r := Reliability(8); r.Valid() || r.AckReceipt() || r.String() != "Reliability(8)" {
		t.Errorf("Reliability(8): got valid %v, ack receipt %v, %q, want false, false, %q", r.Valid(), r.AckReceipt(), r.String(), "Reliability(8)")
	}
}

// Golden frame fields: reliable index 0x010203, sequence index 0x040506,
// order index 0x070809 on channel 5, split 2 of 3 with id 0x1234, payload
// fe 0a (16 bits).
const (
	frameRel   = "03 02 01"
	frameSeq   = "06 05 04"
	frameOrd   = "09 08 07 | 05"
	frameSplit = "00 00 00 03 | 12 34 | 00 00 00 02"
	frameBody  = "fe 0a"
)

// frameCase is a frame with its golden encoding.
type frameCase struct {
	name  string
	frame Frame
	hex   string
}

// goldenFrames covers every reliability with and without split. The frames
// set only the fields their reliability carries, so decoding gives them
// back with the wire reliability.
func goldenFrames() []frameCase {
	unsplit := []frameCase{
		{"0 Unreliable", Frame{Reliability: Unreliable}, "00 | 00 10 |"},
		{"1 UnreliableSequenced", Frame{Reliability: UnreliableSequenced, SequenceIndex: 0x040506, OrderIndex: 0x070809, OrderChannel: 5},
			"20 | 00 10 |" + frameSeq + "|" + frameOrd + "|"},
		{"2 Reliable", Frame{Reliability: Reliable, ReliableIndex: 0x010203}, "40 | 00 10 |" + frameRel + "|"},
		{"3 ReliableOrdered", Frame{Reliability: ReliableOrdered, ReliableIndex: 0x010203, OrderIndex: 0x070809, OrderChannel: 5},
			"60 | 00 10 |" + frameRel + "|" + frameOrd + "|"},
		{"4 ReliableSequenced", Frame{Reliability: ReliableSequenced, ReliableIndex: 0x010203, SequenceIndex: 0x040506, OrderIndex: 0x070809, OrderChannel: 5},
			"80 | 00 10 |" + frameRel + "|" + frameSeq + "|" + frameOrd + "|"},
		// The WithAckReceipt kinds go on the wire as 0, 2 and 3.
		{"5 UnreliableWithAckReceipt", Frame{Reliability: UnreliableWithAckReceipt}, "00 | 00 10 |"},
		{"6 ReliableWithAckReceipt", Frame{Reliability: ReliableWithAckReceipt, ReliableIndex: 0x010203}, "40 | 00 10 |" + frameRel + "|"},
		{"7 ReliableOrderedWithAckReceipt", Frame{Reliability: ReliableOrderedWithAckReceipt, ReliableIndex: 0x010203, OrderIndex: 0x070809, OrderChannel: 5},
			"60 | 00 10 |" + frameRel + "|" + frameOrd + "|"},
	}
	// Split frames set 0x10 in the first byte: 00→10, 20→30, 40→50, ...
	splitFlags := map[byte]string{'0': "1", '2': "3", '4': "5", '6': "7", '8': "9"}
	var out []frameCase
	for _, tc := range unsplit {
		tc.frame.Payload = []byte{0xfe, 0x0a}
		split := tc
		split.name += " split"
		split.frame.Split, split.frame.SplitCount, split.frame.SplitID, split.frame.SplitIndex = true, 3, 0x1234, 2
		split.hex = splitFlags[tc.hex[0]] + tc.hex[1:] + frameSplit + "|" + frameBody
		tc.hex += frameBody
		out = append(out, tc, split)
	}
	return out
}

func TestFrameGolden(t *testing.T) {
	for _, tc := range goldenFrames() {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := tc.frame.Append(nil); string(got) != string(want) {
				t.Errorf("Append: got % x, want % x", got, want)
			}
			if got := tc.frame.Size(); got != len(want) {
				t.Errorf("Size: got %v, want %v", got, len(want))
			}
			if got, want := tc.frame.HeaderSize(), len(want)-len(tc.frame.Payload); got != want {
				t.Errorf("HeaderSize: got %v, want %v", got, want)
			}
			var got Frame
			n, err := got.Decode(want)
			if err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if n != len(want) {
				t.Errorf("Decode consumed: got %v, want %v", n, len(want))
			}
			wantFrame := tc.frame
			wantFrame.Reliability = wantFrame.Reliability.Wire()
			if !reflect.DeepEqual(got, wantFrame) {
				t.Errorf("Decode: got %+v, want %+v", got, wantFrame)
			}
		})
	}
}

// TestFrameUncarriedFields checks that fields a reliability does not carry
// are neither written nor left behind by Decode.
func TestFrameUncarriedFields(t *testing.T) {
	tests := []struct {
		name string
		r    Reliability
		hex  string
		want Frame
	}{
		{"unreliable", Unreliable, "00 00 10" + frameBody, Frame{}},
		{"reliable", Reliable, "40 00 10" + frameRel + frameBody, Frame{Reliability: Reliable, ReliableIndex: 0x010203}},
		{"unreliable sequenced", UnreliableSequenced, "20 00 10" + frameSeq + frameOrd + frameBody,
			Frame{Reliability: UnreliableSequenced, SequenceIndex: 0x040506, OrderIndex: 0x070809, OrderChannel: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Frame{
				Reliability: tc.r, ReliableIndex: 0x010203, SequenceIndex: 0x040506,
				OrderIndex: 0x070809, OrderChannel: 5, SplitCount: 3, SplitID: 0x1234, SplitIndex: 2,
				Payload: []byte{0xfe, 0x0a},
			}
			want := unhex(t, tc.hex)
			if got := f.Append(nil); string(got) != string(want) {
				t.Errorf("Append: got % x, want % x", got, want)
			}
			got := f // decode over a frame full of stale fields
			if _, err := got.Decode(want); err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			tc.want.Payload = []byte{0xfe, 0x0a}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFrameTruncated(t *testing.T) {
	for _, tc := range goldenFrames() {
		t.Run(tc.name, func(t *testing.T) {
			checkTruncated(t, &tc.frame, tc.frame.Append(nil), io.ErrUnexpectedEOF)
		})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	big := make([]byte, MaxFramePayload)
	for i := range big {
		big[i] = byte(i)
	}
	tests := []struct {
		name  string
		frame Frame
	}{
		{"one byte", Frame{Reliability: Unreliable, Payload: []byte{1}}},
		{"max payload", Frame{Reliability: ReliableOrdered, ReliableIndex: MaxUint24, OrderIndex: MaxUint24, OrderChannel: NumOrderChannels - 1, Payload: big}},
		{"max split", Frame{Reliability: Reliable, Split: true, SplitCount: 1<<32 - 1, SplitID: 0xffff, SplitIndex: 1<<32 - 2, Payload: []byte{1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRoundTrip(t, &tc.frame)
		})
	}
}

func TestFrameInvalid(t *testing.T) {
	tests := []struct {
		name string
		hex  string
	}{
		{"zero-length payload", "00 | 00 00"},
		{"zero-length reliable", "40 | 00 00 |" + frameRel},
		{"channel 32", "60 | 00 08 |" + frameRel + "| 09 08 07 | 20 | fe"},
		{"channel 255 sequenced", "20 | 00 08 |" + frameSeq + "| 09 08 07 | ff | fe"},
		{"channel 32 reliable sequenced", "80 | 00 08 |" + frameRel + "|" + frameSeq + "| 09 08 07 | 20 | fe"},
		// 65529-65535 bits round up to 8192 bytes, one more than
		// Append can describe, so a decoded frame could not be re-sent.
		{"bit length 0xffff", "00 | ff ff |" + strings.Repeat("00 ", MaxFramePayload+1)},
		{"bit length 0xfff9", "00 | ff f9 |" + strings.Repeat("00 ", MaxFramePayload+1)},
		{"split count 0", "10 | 00 08 | 00 00 00 00 | 00 01 | 00 00 00 00 | fe"},
		{"split index equals count", "10 | 00 08 | 00 00 00 03 | 00 01 | 00 00 00 03 | fe"},
		{"split index above count", "10 | 00 08 | 00 00 00 03 | 00 01 | ff ff ff ff | fe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			n, err := f.Decode(unhex(t, tc.hex))
			if !errors.Is(err, ErrInvalid) || n != 0 {
				t.Errorf("Decode: got %v, %v, want 0, %v", n, err, ErrInvalid)
			}
		})
	}
}

// TestFrameBitLength checks that the payload length is the bit length
// rounded up to whole bytes, and that Append writes whole bytes.
func TestFrameBitLength(t *testing.T) {
	tests := []struct {
		name  string
		bits  uint16
		bytes int
	}{
		{"1 bit", 1, 1},
		{"7 bits", 7, 1},
		{"8 bits", 8, 1},
		{"9 bits", 9, 2},
		{"16 bits", 16, 2},
		{"17 bits", 17, 3},
		{"max whole bytes", MaxFramePayload * 8, MaxFramePayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte{0x00, byte(tc.bits >> 8), byte(tc.bits)}, make([]byte, tc.bytes+1)...)
			var f Frame
			n, err := f.Decode(b)
			if err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if n != 3+tc.bytes || len(f.Payload) != tc.bytes {
				t.Errorf("Decode: got %v bytes consumed, payload %v, want %v, %v", n, len(f.Payload), 3+tc.bytes, tc.bytes)
			}
			enc := f.Append(nil)
			if got, want := int(enc[1])<<8|int(enc[2]), tc.bytes*8; got != want {
				t.Errorf("Append bit length: got %v, want %v", got, want)
			}
		})
	}
}

// TestFrameFlagBits checks that the low flag bits RakNet leaves unused are
// ignored: only the reliability and the split flag are read.
func TestFrameFlagBits(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want Frame
	}{
		{"6f", "6f | 00 08 | 01 00 00 | 02 00 00 | 03 | fe",
			Frame{Reliability: ReliableOrdered, ReliableIndex: 1, OrderIndex: 2, OrderChannel: 3, Payload: []byte{0xfe}}},
		{"1f", "1f | 00 08 | 00 00 00 01 | 00 07 | 00 00 00 00 | fe",
			Frame{Split: true, SplitCount: 1, SplitID: 7, Payload: []byte{0xfe}}},
		{"ff reliability 7", "ff | 00 08 | 01 00 00 | 02 00 00 | 03 | 00 00 00 01 | 00 07 | 00 00 00 00 | fe",
			Frame{Reliability: ReliableOrdered, ReliableIndex: 1, OrderIndex: 2, OrderChannel: 3,
				Split: true, SplitCount: 1, SplitID: 7, Payload: []byte{0xfe}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Frame
			b := unhex(t, tc.hex)
			n, err := got.Decode(b)
			if err != nil || n != len(b) {
				t.Fatalf("Decode: got %v, %v, want %v, nil", n, err, len(b))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFrameAppendTooLong(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("Append with %d bytes: got no panic, want one", MaxFramePayload+1)
		}
	}()
	f := Frame{Payload: make([]byte, MaxFramePayload+1)}
	f.Append(nil)
}

// TestFrameDecodeErrorAllocs holds the malformed frames a peer sends most
// (truncated, empty) to no allocation, and the rest to one wrapped error.
func TestFrameDecodeErrorAllocs(t *testing.T) {
	cases := []struct {
		name string
		hex  string
		want float64
	}{
		{"truncated header", "00 00", 0},
		{"truncated payload", "00 00 10 | fe", 0},
		{"empty payload", "00 00 00", 0},
		{"order channel", "60 00 08 | 00 00 00 | 00 00 00 | 20 | fe", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			var f Frame
			if _, err := f.Decode(b); err == nil {
				t.Fatalf("Decode: got nil error, want one")
			}
			if raceEnabled && tc.want > 0 {
				t.Skip("the race detector changes what a wrapped error allocates")
			}
			got := testing.AllocsPerRun(100, func() { _, _ = f.Decode(b) })
			if got > tc.want {
				t.Errorf("allocations: got %v, want <= %v", got, tc.want)
			}
		})
	}
}
