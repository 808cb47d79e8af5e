package attack

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

// The golden bytes below are those of PROTOCOL.md and of the listener's
// codec tests (raknet/internal/wire), so these encodings and the
// listener's agree byte for byte.

const magicHex = "00 ff ff 00 fe fe fe fe fd fd fd fd 12 34 56 78"

var (
	addrV4 = netip.MustParseAddrPort("127.0.0.1:19132")
	addrV6 = netip.MustParseAddrPort("[2001:db8::1]:19133")
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad golden hex %q: %v", s, err)
	}
	return b
}

func TestEncodingsGolden(t *testing.T) {
	frame := func(f Frame) []byte { return f.Append(nil) }
	body := []byte{0xfe, 0x0a}
	tests := []struct {
		name string
		got  []byte
		hex  string
	}{
		{"addr ipv4", AppendAddr(nil, addrV4), "04 80 ff ff fe 4a bc"},
		{"addr ipv6", AppendAddr(nil, addrV6), "06 17 00 4a bd 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00"},
		{"ping", AppendPing(nil, 1700000000000, -2), "01 | 00 00 01 8b cf e5 68 00 |" + magicHex + "| ff ff ff ff ff ff ff fe"},
		{"OCR1 unpadded", AppendOCR1(nil, 11, 18), "05 |" + magicHex + "| 0b"},
		{"OCR1 padded", AppendOCR1(nil, 11, 21), "05 |" + magicHex + "| 0b | 00 00 00"},
		{"OCR1 protocol 10", AppendOCR1(nil, 10, 18), "05 |" + magicHex + "| 0a"},
		{"OCR2 no cookie", AppendOCR2(nil, false, 0, addrV4, 1492, -2), "07 |" + magicHex + "| 04 80 ff ff fe 4a bc | 05 d4 | ff ff ff ff ff ff ff fe"},
		{"OCR2 cookie", AppendOCR2(nil, true, 0xdeadbeef, addrV4, 1400, -2),
			"07 |" + magicHex + "| de ad be ef | 00 | 04 80 ff ff fe 4a bc | 05 78 | ff ff ff ff ff ff ff fe"},
		{"ConnectionRequest", AppendConnectionRequest(nil, -2, 300), "09 | ff ff ff ff ff ff ff fe | 00 00 00 00 00 00 01 2c | 00"},
		{"ConnectedPong", AppendConnectedPong(nil, 1, 2), "03 | 00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 02"},
		{"frame unreliable", frame(Frame{Payload: body}), "00 | 00 10 | fe 0a"},
		{"frame reliable", frame(Frame{Reliability: Reliable, ReliableIndex: 0x010203, Payload: body}), "40 | 00 10 | 03 02 01 | fe 0a"},
		{"frame reliable ordered", frame(Frame{Reliability: ReliableOrdered, ReliableIndex: 0x010203, OrderIndex: 0x070809, OrderChannel: 5, Payload: body}),
			"60 | 00 10 | 03 02 01 | 09 08 07 | 05 | fe 0a"},
		{"frame reliable split", frame(Frame{Reliability: Reliable, ReliableIndex: 0x010203, SplitCount: 3, SplitID: 0x1234, SplitIndex: 2, Payload: body}),
			"50 | 00 10 | 03 02 01 | 00 00 00 03 | 12 34 | 00 00 00 02 | fe 0a"},
		{"frame reliable ordered split", frame(Frame{Reliability: ReliableOrdered, ReliableIndex: 0x010203, OrderIndex: 0x070809, OrderChannel: 5, SplitCount: 3, SplitID: 0x1234, SplitIndex: 2, Payload: body}),
			"70 | 00 10 | 03 02 01 | 09 08 07 | 05 | 00 00 00 03 | 12 34 | 00 00 00 02 | fe 0a"},
		{"datagram header", AppendDatagram(nil, 42), "84 2a 00 00"},
		{"datagram", AppendDatagram(nil, 7, Frame{Reliability: ReliableOrdered, Payload: []byte{0x13, 0xaa, 0xbb}}, Frame{Payload: []byte{0, 0, 0, 0, 0, 0, 0, 0, 5}}),
			"84 | 07 00 00 | 60 | 00 18 | 00 00 00 | 00 00 00 | 00 | 13 aa bb | 00 | 00 48 | 00 00 00 00 00 00 00 00 05"},
		{"ACK single", AppendAck(nil, false, AckRange{7, 7}), "c0 00 01 01 07 00 00"},
		{"NACK range", AppendAck(nil, true, AckRange{7, 9}), "a0 00 01 00 07 00 00 09 00 00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if want := unhex(t, tc.hex); string(tc.got) != string(want) {
				t.Errorf("got % x, want % x", tc.got, want)
			}
		})
	}
}

func TestNewIncomingConnectionLayout(t *testing.T) {
	b := AppendNewIncomingConnection(nil, addrV4, 1, 2)
	zero := "04 ff ff ff ff 00 00"
	want := "13 |" + "04 80 ff ff fe 4a bc |" + strings.Repeat(zero+"|", maxSystemAddresses) +
		"00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 02"
	if w := unhex(t, want); string(b) != string(w) {
		t.Errorf("got % x, want % x", b, w)
	}
}

func TestParseReply1(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want Reply1
	}{
		{"no security", "06 |" + magicHex + "| 11 22 33 44 55 66 77 88 | 00 | 05 78", Reply1{ServerGUID: 0x1122334455667788, MTU: 1400}},
		{"cookie", "06 |" + magicHex + "| 00 00 00 00 00 00 00 01 | 01 | de ad be ef | 05 78", Reply1{ServerGUID: 1, Security: true, Cookie: 0xdeadbeef, MTU: 1400}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			got, err := ParseReply1(b)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v, want %+v, nil", got, err, tc.want)
			}
			for n := range len(b) {
				if _, err := ParseReply1(b[:n]); err == nil {
					t.Errorf("%d of %d bytes: got nil error, want one", n, len(b))
				}
			}
		})
	}
}

func TestParseReply2MTU(t *testing.T) {
	b := unhex(t, "08 |"+magicHex+"| 01 02 03 04 05 06 07 08 | 04 3f 57 fe eb d4 31 | 05 78 | 00")
	if got, err := ParseReply2MTU(b); err != nil || got != 1400 {
		t.Fatalf("got %v, %v, want 1400, nil", got, err)
	}
	for n := range len(b) - 1 {
		if _, err := ParseReply2MTU(b[:n]); err == nil {
			t.Errorf("%d of %d bytes: got nil error, want one", n, len(b))
		}
	}
}

func TestParseFrames(t *testing.T) {
	frames := []Frame{
		{Reliability: ReliableOrdered, ReliableIndex: 1, OrderIndex: 0x070809, OrderChannel: 5, Payload: []byte{0x13, 0xaa}},
		{Payload: []byte{0, 1, 2}},
		{Reliability: Reliable, ReliableIndex: 2, SplitCount: 3, SplitID: 9, SplitIndex: 1, Payload: []byte{0xfe}},
	}
	b := AppendDatagram(nil, 3, frames...)
	var got []Frame
	if err := parseFrames(b, func(f *Frame) { got = append(got, *f) }); err != nil {
		t.Fatalf("parseFrames: %v", err)
	}
	if len(got) != len(frames) {
		t.Fatalf("got %d frames, want %d", len(got), len(frames))
	}
	for i, f := range got {
		w := frames[i]
		if f.Reliability != w.Reliability || f.OrderIndex != w.OrderIndex || f.OrderChannel != w.OrderChannel ||
			f.SplitCount != w.SplitCount || f.SplitID != w.SplitID || f.SplitIndex != w.SplitIndex || string(f.Payload) != string(w.Payload) {
			t.Errorf("frame %d: got %+v, want %+v", i, f, w)
		}
	}
	for n := datagramHeaderSize + 1; n < len(b); n++ {
		if err := parseFrames(b[:n], func(*Frame) {}); err == nil && n != len(AppendDatagram(nil, 3, frames[:1]...)) && n != len(AppendDatagram(nil, 3, frames[:2]...)) {
			t.Errorf("%d of %d bytes: got nil error, want one", n, len(b))
		}
	}
}

func TestCountAck(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want int
	}{
		{"single", AppendAck(nil, false, AckRange{7, 7}), 1},
		{"range", AppendAck(nil, true, AckRange{7, 9}), 3},
		{"mixed", AppendAck(nil, false, AckRange{1, 1}, AckRange{10, 19}), 11},
		{"truncated", AppendAck(nil, false, AckRange{10, 19})[:6], -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := countAck(tc.b); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
