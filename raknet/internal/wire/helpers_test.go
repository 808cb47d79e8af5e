package wire

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// codec is what every message, header and frame in this package implements.
type codec interface {
	Append(b []byte) []byte
	Decode(b []byte) (int, error)
}

// unhex decodes hex written with spaces, newlines and "|" separators.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// fresh returns a new zero value of the same message type as m.
func fresh(m codec) codec {
	return reflect.New(reflect.TypeOf(m).Elem()).Interface().(codec)
}

// deref returns the value m points at, for comparison and printing.
func deref(m codec) any { return reflect.ValueOf(m).Elem().Interface() }

// checkRoundTrip encodes m behind a non-empty prefix (so Append must append,
// not overwrite), decodes the result into a fresh value and compares. It
// returns the encoding without the prefix.
func checkRoundTrip(t *testing.T, m codec) []byte {
	t.Helper()
	prefix := []byte{0xaa, 0xbb}
	b := m.Append(append([]byte(nil), prefix...))
	if string(b[:2]) != string(prefix) {
		t.Fatalf("Append clobbered the buffer: got %x, want prefix %x", b[:2], prefix)
	}
	b = b[2:]
	got := fresh(m)
	n, err := got.Decode(b)
	if err != nil {
		t.Fatalf("Decode(%x): got error %v, want nil", b, err)
	}
	if n != len(b) {
		t.Errorf("Decode consumed: got %v, want %v", n, len(b))
	}
	if !reflect.DeepEqual(deref(got), deref(m)) {
		t.Errorf("round trip: got %+v, want %+v", deref(got), deref(m))
	}
	return b
}

// checkGolden checks that m encodes to want and that want decodes to m.
func checkGolden(t *testing.T, m codec, want []byte) {
	t.Helper()
	if got := m.Append(nil); string(got) != string(want) {
		t.Errorf("Append: got % x, want % x", got, want)
	}
	got := fresh(m)
	n, err := got.Decode(want)
	if err != nil {
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	if n != len(want) {
		t.Errorf("Decode consumed: got %v, want %v", n, len(want))
	}
	if !reflect.DeepEqual(deref(got), deref(m)) {
		t.Errorf("Decode: got %+v, want %+v", deref(got), deref(m))
	}
}

// checkTruncated checks that every strict prefix of b fails to decode and
// consumes nothing. The error must match want, or be any error if want is
// nil.
func checkTruncated(t *testing.T, m codec, b []byte, want error) {
	t.Helper()
	for k := range len(b) {
		n, err := fresh(m).Decode(b[:k])
		switch {
		case want == nil && err == nil:
			t.Errorf("Decode(first %d of %d bytes): got error %v, want non-nil", k, len(b), err)
		case want != nil && !errors.Is(err, want):
			t.Errorf("Decode(first %d of %d bytes): got error %v, want %v", k, len(b), err, want)
		}
		if n != 0 {
			t.Errorf("Decode(first %d of %d bytes) consumed: got %v, want %v", k, len(b), n, 0)
		}
	}
}

// Addresses used across the tests.
var (
	addrV4   = netip.MustParseAddrPort("127.0.0.1:19132")
	addrV4b  = netip.MustParseAddrPort("192.168.1.20:54321")
	addrV6   = netip.MustParseAddrPort("[2001:db8::1]:19133")
	addrV6b  = netip.MustParseAddrPort("[fe80::1:2:3:4]:1")
	addrZero = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
)

// systemAddrs returns n system addresses alternating IPv4 and IPv6.
func systemAddrs(n int) SystemAddresses {
	var s SystemAddresses
	s.N = n
	all := []netip.AddrPort{addrV4, addrV6, addrV4b, addrV6b, addrZero}
	for i := range n {
		s.Addrs[i] = all[i%len(all)]
	}
	return s
}

// DisconnectionNotification (0x15) ends a connection; it has no fields.
// The connection writes its one byte directly; the codec is here for the
// golden, fuzz and go-raknet tests.
type DisconnectionNotification struct{}

// Append appends the encoding of m.
func (m *DisconnectionNotification) Append(b []byte) []byte {
	return append(b, IDDisconnectionNotification)
}

// Decode decodes the message.
func (m *DisconnectionNotification) Decode(b []byte) (int, error) {
	if err := checkID(b, IDDisconnectionNotification); err != nil {
		return 0, decodeErr("DISCONNECTION_NOTIFICATION", err)
	}
	return 1, nil
}
