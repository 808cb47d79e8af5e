package wire

import "testing"

// The size constants callers use for stack buffers match the encodings.
func TestFixedSizes(t *testing.T) {
	cases := []struct {
		name string
		got  int
		want int
	}{
		{"ConnectedPing", len((&ConnectedPing{Time: -1}).Append(nil)), ConnectedPingSize},
		{"ConnectedPong", len((&ConnectedPong{PingTime: -1, PongTime: -1}).Append(nil)), ConnectedPongSize},
		{"ConnectionRequest", len((&ConnectionRequest{ClientGUID: -1, Time: -1, Security: true}).Append(nil)), ConnectionRequestSize},
		{"UnconnectedPing", len((&UnconnectedPing{Time: -1, ClientGUID: -1}).Append(nil)), unconnectedPingSize},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %d bytes, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// MaxFrameHeaderSize is the largest header any frame encodes with: the
// reliability layer sizes its fragments by it.
func TestMaxFrameHeaderSize(t *testing.T) {
	largest := 0
	for r := range Reliability(8) {
		for _, split := range []bool{false, true} {
			f := Frame{Reliability: r, Split: split, SplitCount: 2, Payload: []byte{1}}
			got := len(f.Append(nil)) - len(f.Payload)
			if got != FrameHeaderSize(r, split) {
				t.Errorf("%v split=%v: encodes a %d-byte header, FrameHeaderSize says %d", r, split, got, FrameHeaderSize(r, split))
			}
			largest = max(largest, got)
		}
	}
	if largest != MaxFrameHeaderSize {
		t.Errorf("largest frame header: got %d bytes, MaxFrameHeaderSize is %d", largest, MaxFrameHeaderSize)
	}
}
