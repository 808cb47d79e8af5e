package proxy

import "testing"

func TestDirectionString(t *testing.T) {
	tests := []struct {
		d    Direction
		want string
	}{
		{Incoming, "incoming"},
		{Outgoing, "outgoing"},
		{Direction(7), "Direction(7)"},
		{Direction(-1), "Direction(-1)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.d.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
