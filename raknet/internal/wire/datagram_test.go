package wire

import (
	"errors"
	"io"
	"reflect"
	"testing"
)

func TestDatagramHeaderGolden(t *testing.T) {
	tests := []struct {
		name string
		h    DatagramHeader
		hex  string
	}{
		{"0x84", DatagramHeader{Flags: FlagValid | FlagNeedsBAndAS, Number: 42}, "84 2a 00 00"},
		{"0x8c continuous send", DatagramHeader{Flags: 0x8c, Number: 0x030201}, "8c 01 02 03"},
		{"0x80 max number", DatagramHeader{Flags: FlagValid, Number: MaxUint24}, "80 ff ff ff"},
		{"0x94 packet pair", DatagramHeader{Flags: 0x94, Number: 0}, "94 00 00 00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.h, unhex(t, tc.hex))
		})
	}
}

// TestDatagramHeaderFlags checks every first byte: a data datagram needs
// the valid bit and neither the ACK nor the NACK bit.
func TestDatagramHeaderFlags(t *testing.T) {
	for flags := range 256 {
		var h DatagramHeader
		n, err := h.Decode([]byte{byte(flags), 1, 0, 0})
		wantOK := flags&0x80 != 0 && flags&0x60 == 0
		switch {
		case wantOK && (err != nil || n != 4 || h.Flags != byte(flags) || h.Number != 1):
			t.Errorf("Decode(%#02x): got %+v, %v, %v, want {%#02x 1}, 4, nil", flags, h, n, err, flags)
		case !wantOK && (!errors.Is(err, ErrInvalid) || n != 0):
			t.Errorf("Decode(%#02x): got %v, %v, want 0, %v", flags, n, err, ErrInvalid)
		}
	}
}

// TestDatagramGolden decodes a whole data datagram: a header, then frames
// until the end, the way the connection loop reads one.
func TestDatagramGolden(t *testing.T) {
	b := unhex(t, "84 | 07 00 00 |"+
		"60 | 00 18 | 00 00 00 | 00 00 00 | 00 | 13 aa bb |"+ // NIC-ish, reliable ordered
		"00 | 00 48 | 00 00 00 00 00 00 00 00 05 |"+ // connected ping, unreliable
		"70 | 00 08 | 01 00 00 | 01 00 00 | 00 | 00 00 00 02 | 00 00 | 00 00 00 00 | fe") // split game data
	want := []Frame{
		{Reliability: ReliableOrdered, Payload: []byte{0x13, 0xaa, 0xbb}},
		{Reliability: Unreliable, Payload: []byte{0, 0, 0, 0, 0, 0, 0, 0, 5}},
		{Reliability: ReliableOrdered, ReliableIndex: 1, OrderIndex: 1, Split: true, SplitCount: 2, Payload: []byte{0xfe}},
	}
	h, frames, err := decodeDatagram(b)
	if err != nil {
		t.Fatalf("decode datagram: got error %v, want nil", err)
	}
	if h != (DatagramHeader{Flags: 0x84, Number: 7}) {
		t.Errorf("header: got %+v, want %+v", h, DatagramHeader{Flags: 0x84, Number: 7})
	}
	if !reflect.DeepEqual(frames, want) {
		t.Errorf("frames: got %+v, want %+v", frames, want)
	}
	if got := appendDatagram(nil, h, frames); string(got) != string(b) {
		t.Errorf("encode datagram: got % x, want % x", got, b)
	}
}

func TestDatagramHeaderTruncated(t *testing.T) {
	h := DatagramHeader{Flags: 0x84, Number: 9}
	checkTruncated(t, &h, h.Append(nil), io.ErrUnexpectedEOF)
}

// decodeDatagram reads a data datagram: a header and frames to the end.
func decodeDatagram(b []byte) (DatagramHeader, []Frame, error) {
	var h DatagramHeader
	n, err := h.Decode(b)
	if err != nil {
		return h, nil, err
	}
	var frames []Frame
	for b = b[n:]; len(b) > 0; b = b[n:] {
		var f Frame
		if n, err = f.Decode(b); err != nil {
			return h, frames, err
		}
		frames = append(frames, f)
	}
	return h, frames, nil
}

// appendDatagram appends a header and frames.
func appendDatagram(b []byte, h DatagramHeader, frames []Frame) []byte {
	b = h.Append(b)
	for i := range frames {
		b = frames[i].Append(b)
	}
	return b
}

// mtuDatagram returns a 1400-byte datagram of four reliable-ordered frames,
// the shape of a full Bedrock game datagram.
func mtuDatagram(tb testing.TB) (DatagramHeader, []Frame, []byte) {
	const mtu, frames = 1400, 4
	h := DatagramHeader{Flags: 0x84, Number: 1000}
	per := (mtu - DatagramHeaderSize) / frames
	fs := make([]Frame, frames)
	for i := range fs {
		p := make([]byte, per-FrameHeaderSize(ReliableOrdered, false))
		p[0] = IDGamePacket
		fs[i] = Frame{Reliability: ReliableOrdered, ReliableIndex: Uint24(100 + i), OrderIndex: Uint24(50 + i), Payload: p}
	}
	b := appendDatagram(nil, h, fs)
	if len(b) != mtu {
		tb.Fatalf("datagram size: got %v, want %v", len(b), mtu)
	}
	return h, fs, b
}

func TestMTUDatagramRoundTrip(t *testing.T) {
	h, fs, b := mtuDatagram(t)
	gh, gfs, err := decodeDatagram(b)
	if err != nil {
		t.Fatalf("decode datagram: got error %v, want nil", err)
	}
	if gh != h || !reflect.DeepEqual(gfs, fs) {
		t.Errorf("decode datagram: got %+v %d frames, want %+v %d frames", gh, len(gfs), h, len(fs))
	}
}

func TestDatagramDecodeAllocs(t *testing.T) {
	_, _, b := mtuDatagram(t)
	var (
		h DatagramHeader
		f Frame
	)
	allocs := testing.AllocsPerRun(100, func() {
		n, _ := h.Decode(b)
		for rest := b[n:]; len(rest) > 0; rest = rest[n:] {
			n, _ = f.Decode(rest)
		}
	})
	if allocs != 0 {
		t.Errorf("allocs per datagram decode: got %v, want %v", allocs, 0)
	}
}

func BenchmarkDatagramDecode(b *testing.B) {
	_, _, dg := mtuDatagram(b)
	var (
		h DatagramHeader
		f Frame
	)
	b.SetBytes(int64(len(dg)))
	b.ReportAllocs()
	for b.Loop() {
		n, err := h.Decode(dg)
		if err != nil {
			b.Fatal(err)
		}
		for rest := dg[n:]; len(rest) > 0; rest = rest[n:] {
			if n, err = f.Decode(rest); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDatagramAppend(b *testing.B) {
	h, fs, dg := mtuDatagram(b)
	buf := make([]byte, 0, 1500)
	b.SetBytes(int64(len(dg)))
	b.ReportAllocs()
	for b.Loop() {
		buf = h.Append(buf[:0])
		for i := range fs {
			buf = fs[i].Append(buf)
		}
	}
	if string(buf) != string(dg) {
		b.Fatalf("encoded datagram differs")
	}
}
