package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestConnectionRequestGolden(t *testing.T) {
	tests := []struct {
		name string
		msg  ConnectionRequest
		hex  string
	}{
		{"plain", ConnectionRequest{ClientGUID: -2, Time: 300}, "09 | ff ff ff ff ff ff ff fe | 00 00 00 00 00 00 01 2c | 00"},
		{"security", ConnectionRequest{ClientGUID: 1, Time: 2, Security: true}, "09 | 00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 02 | 01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.msg, unhex(t, tc.hex))
		})
	}
}

// TestConnectionRequestTruncated checks that only the security byte may be
// missing (it then reads as false).
func TestConnectionRequestTruncated(t *testing.T) {
	m := ConnectionRequest{ClientGUID: -2, Time: 300, Security: true}
	b := m.Append(nil)
	for k := range len(b) {
		var got ConnectionRequest
		n, err := got.Decode(b[:k])
		if k < 17 {
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
				t.Errorf("Decode(first %d bytes): got %v, %v, want 0, %v", k, n, err, io.ErrUnexpectedEOF)
			}
			continue
		}
		want := ConnectionRequest{ClientGUID: -2, Time: 300}
		if err != nil || n != 17 || got != want {
			t.Errorf("Decode(first %d bytes): got %+v, %v, %v, want %+v, 17, nil", k, got, n, err, want)
		}
	}
}

func TestDisconnectionNotificationGolden(t *testing.T) {
	checkGolden(t, &DisconnectionNotification{}, []byte{0x15})
}

// Per-address hex for the system address tables (see TestAddrGolden).
const (
	hexV4    = "04 80 ff ff fe 4a bc"
	hexV4b   = "04 3f 57 fe eb d4 31"
	hexV6    = "06 17 00 4a bd 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00"
	hexV6b   = "06 17 00 00 01 00 00 00 00 fe 80 00 00 00 00 00 00 00 01 00 02 00 03 00 04 00 00 00 00"
	hexZero  = "04 ff ff ff ff 00 00"
	hexTimes = "00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 02"
)

// systemAddrsHex spells systemAddrs(n) out address by address.
func systemAddrsHex(n int) string {
	all := []string{hexV4, hexV6, hexV4b, hexV6b, hexZero}
	parts := make([]string, n)
	for i := range n {
		parts[i] = all[i%len(all)]
	}
	return strings.Join(parts, "|")
}

func TestConnectionRequestAcceptedGolden(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"no system addresses", 0},
		{"10 system addresses", 10},
		{"20 system addresses", 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := ConnectionRequestAccepted{
				ClientAddr:  addrV4,
				SystemIndex: 0x0102,
				SystemAddrs: systemAddrs(tc.n),
				RequestTime: 1,
				AcceptTime:  2,
			}
			want := unhex(t, "10 |"+hexV4+"| 01 02 |"+systemAddrsHex(tc.n)+"|"+hexTimes)
			checkGolden(t, &m, want)
			checkSystemAddrsTruncated(t, &m, want, 1+7+2, m.SystemAddrs)
		})
	}
}

func TestNewIncomingConnectionGolden(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"no system addresses", 0},
		{"10 system addresses", 10},
		{"20 system addresses", 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewIncomingConnection{
				ServerAddr:  addrV6,
				SystemAddrs: systemAddrs(tc.n),
				PingTime:    1,
				PongTime:    2,
			}
			want := unhex(t, "13 |"+hexV6+"|"+systemAddrsHex(tc.n)+"|"+hexTimes)
			checkGolden(t, &m, want)
			checkSystemAddrsTruncated(t, &m, want, 1+29, m.SystemAddrs)
		})
	}
}

// checkSystemAddrsTruncated checks every prefix of b, a message whose
// system addresses start at offset head. The decoders read addresses until
// exactly 16 bytes remain, so a prefix that ends 16 bytes after an address
// boundary is, by design, a valid message with fewer addresses (and other
// timestamps); every other prefix must fail with io.ErrUnexpectedEOF.
func checkSystemAddrsTruncated(t *testing.T, m codec, b []byte, head int, s SystemAddresses) {
	t.Helper()
	valid := map[int]int{} // prefix length -> address count
	off := head
	for i := range s.N {
		valid[off+16] = i
		off += len(AppendAddr(nil, s.Addrs[i]))
	}
	for k := range len(b) {
		got := fresh(m)
		n, err := got.Decode(b[:k])
		i, ok := valid[k]
		if !ok {
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
				t.Errorf("Decode(first %d of %d bytes): got %v, %v, want 0, %v", k, len(b), n, err, io.ErrUnexpectedEOF)
			}
			continue
		}
		if err != nil || n != k {
			t.Errorf("Decode(first %d of %d bytes): got %v, %v, want %v, nil (%d addresses)", k, len(b), n, err, k, i)
			continue
		}
		var gs SystemAddresses
		switch got := got.(type) {
		case *ConnectionRequestAccepted:
			gs = got.SystemAddrs
		case *NewIncomingConnection:
			gs = got.SystemAddrs
		}
		if gs.N != i || !reflect.DeepEqual(gs.Addrs[:i], s.Addrs[:i]) {
			t.Errorf("Decode(first %d of %d bytes) addresses: got %v, want %v", k, len(b), gs.Addrs[:gs.N], s.Addrs[:i])
		}
	}
}

func TestSystemAddressesTooMany(t *testing.T) {
	tests := []struct {
		name string
		msg  codec
		hex  string
	}{
		{"ConnectionRequestAccepted", &ConnectionRequestAccepted{}, "10 |" + hexV4 + "| 00 00 |" + systemAddrsHex(21) + "|" + hexTimes},
		{"NewIncomingConnection", &NewIncomingConnection{}, "13 |" + hexV4 + "|" + systemAddrsHex(21) + "|" + hexTimes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.msg.Decode(unhex(t, tc.hex)); !errors.Is(err, ErrTooMany) {
				t.Errorf("Decode with 21 addresses: got error %v, want %v", err, ErrTooMany)
			}
		})
	}
}

// TestSystemAddressesCountClamped checks that Append writes at most
// MaxSystemAddresses and treats a negative N as zero.
func TestSystemAddressesCountClamped(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int
	}{
		{"negative", -1, 0},
		{"too many", MaxSystemAddresses + 5, MaxSystemAddresses},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewIncomingConnection{ServerAddr: addrV4, SystemAddrs: systemAddrs(MaxSystemAddresses)}
			m.SystemAddrs.N = tc.n
			var got NewIncomingConnection
			if _, err := got.Decode(m.Append(nil)); err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if got.SystemAddrs.N != tc.want {
				t.Errorf("addresses: got %v, want %v", got.SystemAddrs.N, tc.want)
			}
		})
	}
}
