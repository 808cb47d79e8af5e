package wire

import "testing"

// unconnectedPingSize is the size of an encoded ping: id, time, magic,
// GUID.
const unconnectedPingSize = 1 + 8 + 16 + 8

func TestUnconnectedPingGolden(t *testing.T) {
	tests := []struct {
		name string
		msg  UnconnectedPing
		hex  string
	}{
		{
			"ping", UnconnectedPing{Time: 1700000000000, ClientGUID: -2},
			"01 | 00 00 01 8b cf e5 68 00 |" + magicHex + "| ff ff ff ff ff ff ff fe",
		},
		{
			"open connections", UnconnectedPing{OpenConnections: true, Time: 1, ClientGUID: 0x0102030405060708},
			"02 | 00 00 00 00 00 00 00 01 |" + magicHex + "| 01 02 03 04 05 06 07 08",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := len(want); got != unconnectedPingSize {
				t.Fatalf("golden size: got %v, want %v", got, unconnectedPingSize)
			}
			checkGolden(t, &tc.msg, want)
		})
	}
}

// TestUnconnectedPingPadded checks that trailing bytes after the GUID are
// left unconsumed, as the doc comment promises.
func TestUnconnectedPingPadded(t *testing.T) {
	want := UnconnectedPing{Time: 5, ClientGUID: 6}
	b := append(want.Append(nil), make([]byte, 10)...)
	var got UnconnectedPing
	n, err := got.Decode(b)
	if err != nil {
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	if n != unconnectedPingSize {
		t.Errorf("Decode consumed: got %v, want %v", n, unconnectedPingSize)
	}
	if got != want {
		t.Errorf("Decode: got %+v, want %+v", got, want)
	}
}
