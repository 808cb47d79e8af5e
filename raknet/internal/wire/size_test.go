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
		{"UnconnectedPing", len((&UnconnectedPing{Time: -1, ClientGUID: -1}).Append(nil)), UnconnectedPingSize},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %d bytes, want %d", tc.name, tc.got, tc.want)
		}
	}
}
