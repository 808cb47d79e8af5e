package wire

import (
	"errors"
	"io"
	"net/netip"
	"testing"
)

func TestAddrGolden(t *testing.T) {
	tests := []struct {
		name string
		addr netip.AddrPort
		hex  string
	}{
		{"ipv4 loopback", addrV4, "04 80 ff ff fe 4a bc"},
		{"ipv4 private", addrV4b, "04 3f 57 fe eb d4 31"},
		{"ipv4 zero", addrZero, "04 ff ff ff ff 00 00"},
		{
			// 06 | family 23 LE | port BE | flow | 16 bytes | scope
			"ipv6", addrV6,
			"06 | 17 00 | 4a bd | 00 00 00 00 |" +
				"20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 | 00 00 00 00",
		},
		{
			"ipv6 link local", addrV6b,
			"06 | 17 00 | 00 01 | 00 00 00 00 |" +
				"fe 80 00 00 00 00 00 00 00 01 00 02 00 03 00 04 | 00 00 00 00",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got := AppendAddr([]byte{0xaa}, tc.addr)
			if string(got[1:]) != string(want) || got[0] != 0xaa {
				t.Errorf("AppendAddr: got % x, want aa % x", got, want)
			}
			// Trailing bytes are left for the caller.
			a, n, err := decodeAddr(append(want, 0xee))
			if err != nil {
				t.Fatalf("decodeAddr: got error %v, want nil", err)
			}
			if n != len(want) {
				t.Errorf("decodeAddr consumed: got %v, want %v", n, len(want))
			}
			if a != tc.addr {
				t.Errorf("decodeAddr: got %v, want %v", a, tc.addr)
			}
		})
	}
}

func TestAddrIPv6Size(t *testing.T) {
	b := AppendAddr(nil, addrV6)
	if got, want := len(b), 29; got != want {
		t.Fatalf("IPv6 size: got %v, want %v", got, want)
	}
	if got, want := [2]byte(b[1:3]), [2]byte{23, 0}; got != want {
		t.Errorf("IPv6 family (u16 LE): got %v, want %v", got, want)
	}
}

func TestAddrEncodeAsIPv4(t *testing.T) {
	tests := []struct {
		name string
		addr netip.AddrPort
		want netip.AddrPort
	}{
		{
			"ipv4-mapped ipv6",
			netip.MustParseAddrPort("[::ffff:127.0.0.1]:19132"),
			addrV4,
		},
		{"invalid address", netip.AddrPort{}, addrZero},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendAddr(nil, tc.addr)
			if got, want := len(b), 7; got != want {
				t.Fatalf("encoded size: got %v, want %v", got, want)
			}
			a, _, err := decodeAddr(b)
			if err != nil {
				t.Fatalf("decodeAddr: got error %v, want nil", err)
			}
			if a != tc.want {
				t.Errorf("decodeAddr: got %v, want %v", a, tc.want)
			}
		})
	}
}

// TestAddrDecodeIPv6Lenient checks that the family, flow and scope fields are
// not checked, and that an IPv4-mapped address in the IPv6 layout decodes to
// the same value the IPv4 layout does, so decode→encode→decode is stable.
func TestAddrDecodeIPv6Lenient(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want netip.AddrPort
	}{
		{
			"linux family, flow and scope set",
			"06 | 0a 00 | 4a bd | 11 22 33 44 |" +
				"20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 | 00 00 00 07",
			addrV6,
		},
		{
			"ipv4-mapped",
			"06 | 17 00 | 4a bc | 00 00 00 00 |" +
				"00 00 00 00 00 00 00 00 00 00 ff ff 7f 00 00 01 | 00 00 00 00",
			addrV4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, n, err := decodeAddr(unhex(t, tc.hex))
			if err != nil {
				t.Fatalf("decodeAddr: got error %v, want nil", err)
			}
			if n != 29 {
				t.Errorf("decodeAddr consumed: got %v, want %v", n, 29)
			}
			if a != tc.want {
				t.Errorf("decodeAddr: got %v, want %v", a, tc.want)
			}
			again, _, err := decodeAddr(AppendAddr(nil, a))
			if err != nil || again != a {
				t.Errorf("re-decode: got %v, %v, want %v, nil", again, err, a)
			}
		})
	}
}

func TestAddrTruncated(t *testing.T) {
	for _, a := range []netip.AddrPort{addrV4, addrV6} {
		t.Run(a.String(), func(t *testing.T) {
			b := AppendAddr(nil, a)
			for k := range len(b) {
				_, n, err := decodeAddr(b[:k])
				if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
					t.Errorf("decodeAddr(first %d bytes): got %v, %v, want 0, %v", k, n, err, io.ErrUnexpectedEOF)
				}
			}
		})
	}
}

func TestAddrBadVersion(t *testing.T) {
	for _, v := range []byte{0, 5, 7, 0xff} {
		_, _, err := decodeAddr([]byte{v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("decodeAddr(version %d): got error %v, want %v", v, err, ErrInvalid)
		}
	}
}
