package wire

import (
	"errors"
	"io"
	"testing"
)

func TestOpenConnectionRequest1Golden(t *testing.T) {
	tests := []struct {
		name string
		msg  OpenConnectionRequest1
		hex  string
	}{
		{"unpadded", OpenConnectionRequest1{Protocol: 11, Size: 18}, "05 |" + magicHex + "| 0b"},
		{"padded", OpenConnectionRequest1{Protocol: 11, Size: 21}, "05 |" + magicHex + "| 0b | 00 00 00"},
		{"protocol 10", OpenConnectionRequest1{Protocol: 10, Size: 18}, "05 |" + magicHex + "| 0a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.msg, unhex(t, tc.hex))
		})
	}
}

// TestOpenConnectionRequest1MTUProbe checks that a probe is padded so the
// UDP payload is the MTU less the IP and UDP headers.
func TestOpenConnectionRequest1MTUProbe(t *testing.T) {
	tests := []struct {
		name     string
		mtu      int
		overhead int
	}{
		{"ipv4 1492", 1492, 28},
		{"ipv4 1200", 1200, 28},
		{"ipv4 576", 576, 28},
		{"ipv6 1492", 1492, 48},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := OpenConnectionRequest1{Protocol: 11, Size: tc.mtu - tc.overhead}
			b := m.Append(nil)
			if got, want := len(b), tc.mtu-tc.overhead; got != want {
				t.Errorf("encoded size: got %v, want %v", got, want)
			}
			for i, c := range b[OpenConnectionRequest1MinSize:] {
				if c != 0 {
					t.Fatalf("padding byte %d: got %#02x, want 0", i, c)
				}
			}
		})
	}
}

// TestOpenConnectionRequest1Truncated checks that a prefix that ends before
// the protocol byte fails and that any longer prefix decodes with its own
// length as the size: the padding is consumed, not checked.
func TestOpenConnectionRequest1Truncated(t *testing.T) {
	b := (&OpenConnectionRequest1{Protocol: 11, Size: 1464}).Append(nil)
	for k := range len(b) {
		var got OpenConnectionRequest1
		n, err := got.Decode(b[:k])
		if k < OpenConnectionRequest1MinSize {
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
				t.Errorf("Decode(first %d bytes): got %v, %v, want 0, %v", k, n, err, io.ErrUnexpectedEOF)
			}
			continue
		}
		want := OpenConnectionRequest1{Protocol: 11, Size: k}
		if err != nil || n != k || got != want {
			t.Errorf("Decode(first %d bytes): got %+v, %v, %v, want %+v, %v, nil", k, got, n, err, want, k)
		}
	}
}

func TestOpenConnectionRequest1PaddingNotChecked(t *testing.T) {
	b := unhex(t, "05 |"+magicHex+"| 0b | ff 01 02")
	var got OpenConnectionRequest1
	n, err := got.Decode(b)
	if want := (OpenConnectionRequest1{Protocol: 11, Size: 21}); err != nil || n != 21 || got != want {
		t.Errorf("Decode: got %+v, %v, %v, want %+v, 21, nil", got, n, err, want)
	}
}

func TestOpenConnectionReply1Golden(t *testing.T) {
	tests := []struct {
		name string
		msg  OpenConnectionReply1
		hex  string
	}{
		{
			"no security", OpenConnectionReply1{ServerGUID: 0x1122334455667788, MTU: 1400},
			"06 |" + magicHex + "| 11 22 33 44 55 66 77 88 | 00 | 05 78",
		},
		{
			"cookie", OpenConnectionReply1{ServerGUID: -1, Security: true, Cookie: 0xdeadbeef, MTU: 1492},
			"06 |" + magicHex + "| ff ff ff ff ff ff ff ff | 01 | de ad be ef | 05 d4",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.msg, unhex(t, tc.hex))
		})
	}
}

// TestOpenConnectionReply1CookieIgnored checks that a cookie is only written
// when security is announced.
func TestOpenConnectionReply1CookieIgnored(t *testing.T) {
	m := OpenConnectionReply1{ServerGUID: 1, Cookie: 0xdeadbeef, MTU: 1400}
	want := unhex(t, "06 |"+magicHex+"| 00 00 00 00 00 00 00 01 | 00 | 05 78")
	if got := m.Append(nil); string(got) != string(want) {
		t.Errorf("Append: got % x, want % x", got, want)
	}
}

func TestOpenConnectionReply1ZeroMTU(t *testing.T) {
	b := unhex(t, "06 |"+magicHex+"| 00 00 00 00 00 00 00 01 | 00 | 00 00")
	var m OpenConnectionReply1
	if _, err := m.Decode(b); !errors.Is(err, ErrInvalid) {
		t.Errorf("Decode: got error %v, want %v", err, ErrInvalid)
	}
}
