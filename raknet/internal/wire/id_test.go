package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// magicHex is Magic as the golden vectors spell it.
const magicHex = "00 ff ff 00 fe fe fe fe fd fd fd fd 12 34 56 78"

func TestMagic(t *testing.T) {
	if got, want := Magic[:], unhex(t, magicHex); string(got) != string(want) {
		t.Errorf("Magic: got % x, want % x", got, want)
	}
}

// strictMessages are the messages whose every truncated prefix must fail:
// they have no optional or variable-length tail.
func strictMessages() []struct {
	name string
	msg  codec
} {
	return []struct {
		name string
		msg  codec
	}{
		{"UnconnectedPing", &UnconnectedPing{Time: 1700000000000, ClientGUID: -2}},
		{"UnconnectedPingOpenConnections", &UnconnectedPing{OpenConnections: true, Time: 1, ClientGUID: 42}},
		{"OpenConnectionReply1", &OpenConnectionReply1{ServerGUID: 99, MTU: 1400}},
		{"OpenConnectionReply1 security", &OpenConnectionReply1{ServerGUID: 99, Security: true, Cookie: 0xdeadbeef, MTU: 1492}},
		{"OpenConnectionRequest2 ipv4", &OpenConnectionRequest2{ServerAddr: addrV4, MTU: 1400, ClientGUID: -7}},
		{"OpenConnectionRequest2 ipv6", &OpenConnectionRequest2{ServerAddr: addrV6, MTU: 1400, ClientGUID: -7}},
		{"OpenConnectionRequest2 cookie ipv4", &OpenConnectionRequest2{HasCookie: true, Cookie: 0xdeadbeef, ServerAddr: addrV4, MTU: 1400, ClientGUID: -7}},
		{"OpenConnectionRequest2 cookie ipv6", &OpenConnectionRequest2{HasCookie: true, Cookie: 0xc0ffee01, ClientSecurity: true, ServerAddr: addrV6, MTU: 576, ClientGUID: -7}},
		{"OpenConnectionReply2 ipv4", &OpenConnectionReply2{ServerGUID: 5, ClientAddr: addrV4b, MTU: 1400}},
		{"OpenConnectionReply2 ipv6", &OpenConnectionReply2{ServerGUID: 5, ClientAddr: addrV6, MTU: 1400, Encryption: true}},
		{"AlreadyConnected", &Notice{ID: IDAlreadyConnected, ServerGUID: 1}},
		{"NoFreeIncomingConnections", &Notice{ID: IDNoFreeIncomingConnections, ServerGUID: 2}},
		{"ConnectionBanned", &Notice{ID: IDConnectionBanned, ServerGUID: 3}},
		{"IPRecentlyConnected", &Notice{ID: IDIPRecentlyConnected, ServerGUID: -4}},
		{"IncompatibleProtocolVersion", &IncompatibleProtocolVersion{Protocol: 11, ServerGUID: 8}},
		{"ConnectedPing", &ConnectedPing{Time: 123456789}},
		{"DisconnectionNotification", &DisconnectionNotification{}},
		{"DatagramHeader", &DatagramHeader{Flags: 0x84, Number: 0x123456}},
	}
}

// lenientMessages are messages whose decoders accept some shorter forms on
// purpose; their truncation tests live beside their own codecs.
func lenientMessages() []struct {
	name string
	msg  codec
} {
	return []struct {
		name string
		msg  codec
	}{
		{"UnconnectedPong empty", &UnconnectedPong{Time: 1, ServerGUID: 2, Data: []byte{}}},
		{"UnconnectedPong motd", &UnconnectedPong{Time: 1, ServerGUID: 2, Data: []byte(motdExample)}},
		{"UnconnectedPong max", &UnconnectedPong{Time: 1, ServerGUID: 2, Data: []byte(strings.Repeat("x", MaxPongData))}},
		{"OpenConnectionRequest1 unpadded", &OpenConnectionRequest1{Protocol: 11, Size: OpenConnectionRequest1MinSize}},
		{"OpenConnectionRequest1 1492", &OpenConnectionRequest1{Protocol: 11, Size: 1492 - 28}},
		{"OpenConnectionRequest1 576 ipv6", &OpenConnectionRequest1{Protocol: 10, Size: 576 - 48}},
		{"ConnectedPong", &ConnectedPong{PingTime: 1, PongTime: 2}},
		{"ConnectionRequest", &ConnectionRequest{ClientGUID: -9, Time: 77}},
		{"ConnectionRequest security", &ConnectionRequest{ClientGUID: -9, Time: 77, Security: true}},
		{"ConnectionRequestAccepted 0", &ConnectionRequestAccepted{ClientAddr: addrV4, SystemIndex: 0, RequestTime: 1, AcceptTime: 2}},
		{"ConnectionRequestAccepted 10", &ConnectionRequestAccepted{ClientAddr: addrV6, SystemIndex: 3, SystemAddrs: systemAddrs(10), RequestTime: 1, AcceptTime: 2}},
		{"ConnectionRequestAccepted 20", &ConnectionRequestAccepted{ClientAddr: addrV4, SystemIndex: 0xffff, SystemAddrs: systemAddrs(20), RequestTime: -1, AcceptTime: 1 << 62}},
		{"NewIncomingConnection 10", &NewIncomingConnection{ServerAddr: addrV4, SystemAddrs: systemAddrs(10), PingTime: 5, PongTime: 6}},
		{"NewIncomingConnection 20", &NewIncomingConnection{ServerAddr: addrV6, SystemAddrs: systemAddrs(20), PingTime: 5, PongTime: 6}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range append(strictMessages(), lenientMessages()...) {
		t.Run(tc.name, func(t *testing.T) {
			checkRoundTrip(t, tc.msg)
		})
	}
}

func TestTruncatedPrefixFails(t *testing.T) {
	for _, tc := range strictMessages() {
		t.Run(tc.name, func(t *testing.T) {
			want := io.ErrUnexpectedEOF
			if m, ok := tc.msg.(*OpenConnectionRequest2); ok && !m.HasCookie {
				// The cookie is detected by the exact length of the form
				// without one, so a shorter request is read as having a
				// cookie and fails on whatever byte lands where the
				// address version would be.
				want = nil
			}
			checkTruncated(t, tc.msg, tc.msg.Append(nil), want)
		})
	}
}

// TestDecodeReused checks that decoding into a value that held another
// message leaves nothing of the old one behind.
func TestDecodeReused(t *testing.T) {
	all := append(strictMessages(), lenientMessages()...)
	for _, tc := range all {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.msg.Append(nil)
			for _, other := range all {
				if reflect.TypeOf(other.msg) != reflect.TypeOf(tc.msg) {
					continue
				}
				m := fresh(tc.msg)
				if _, err := m.Decode(other.msg.Append(nil)); err != nil {
					t.Fatalf("Decode(%s): got error %v, want nil", other.name, err)
				}
				if _, err := m.Decode(b); err != nil {
					t.Fatalf("Decode: got error %v, want nil", err)
				}
				if got, want := activeFields(m), activeFields(tc.msg); !reflect.DeepEqual(got, want) {
					t.Errorf("after decoding %s first: got %+v, want %+v", other.name, got, want)
				}
			}
		})
	}
}

// activeFields returns m's value with the system addresses past N cleared:
// those slots are scratch space a decode does not promise to clear.
func activeFields(m codec) any {
	switch m := m.(type) {
	case *ConnectionRequestAccepted:
		c := *m
		clear(c.SystemAddrs.Addrs[c.SystemAddrs.N:])
		return c
	case *NewIncomingConnection:
		c := *m
		clear(c.SystemAddrs.Addrs[c.SystemAddrs.N:])
		return c
	}
	return deref(m)
}

// isOffline reports whether id starts one of the offline messages, which
// all carry the magic.
func isOffline(id byte) bool {
	switch id {
	case IDUnconnectedPing, IDUnconnectedPingOpenConnections, IDUnconnectedPong,
		IDOpenConnectionRequest1, IDOpenConnectionReply1, IDOpenConnectionRequest2,
		IDOpenConnectionReply2, IDIncompatibleProtocolVersion:
		return true
	}
	return IsNotice(id)
}

// TestOfflineBadMagic flips each magic byte of every offline message.
func TestOfflineBadMagic(t *testing.T) {
	for _, tc := range append(strictMessages(), lenientMessages()...) {
		b := tc.msg.Append(nil)
		if !isOffline(b[0]) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			off := bytes.Index(b, Magic[:])
			if off < 0 {
				t.Fatalf("magic: got none in % x, want one", b)
			}
			for i := range 16 {
				bad := append([]byte(nil), b...)
				bad[off+i] ^= 0x01
				if _, err := fresh(tc.msg).Decode(bad); !errors.Is(err, ErrBadMagic) {
					t.Errorf("Decode with magic byte %d flipped: got error %v, want %v", i, err, ErrBadMagic)
				}
			}
		})
	}
}

// TestWrongID checks that each decoder refuses every first byte that is not
// one of its own.
func TestWrongID(t *testing.T) {
	for _, tc := range append(strictMessages(), lenientMessages()...) {
		if _, ok := tc.msg.(*DatagramHeader); ok {
			continue // a flag byte, covered by TestDatagramHeaderFlags
		}
		t.Run(tc.name, func(t *testing.T) {
			b := tc.msg.Append(nil)
			own := map[byte]bool{b[0]: true}
			switch tc.msg.(type) {
			case *UnconnectedPing:
				own[IDUnconnectedPing], own[IDUnconnectedPingOpenConnections] = true, true
			case *Notice:
				own[IDAlreadyConnected], own[IDNoFreeIncomingConnections] = true, true
				own[IDConnectionBanned], own[IDIPRecentlyConnected] = true, true
			}
			for id := range 256 {
				if own[byte(id)] {
					continue
				}
				bad := append([]byte{byte(id)}, b[1:]...)
				n, err := fresh(tc.msg).Decode(bad)
				if !errors.Is(err, ErrUnexpectedID) || n != 0 {
					t.Errorf("Decode with id %#02x: got %v, %v, want 0, %v", id, n, err, ErrUnexpectedID)
				}
			}
		})
	}
}

// TestDecodeErrorNamesMessage checks the "decode NAME: cause" wrapping.
func TestDecodeErrorNamesMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  codec
		want string
	}{
		{"OpenConnectionRequest2", &OpenConnectionRequest2{}, "decode OPEN_CONNECTION_REQUEST_2: "},
		{"UnconnectedPong", &UnconnectedPong{}, "decode UNCONNECTED_PONG: "},
		{"Frame", &Frame{}, "decode frame: "},
		{"Ack", &Ack{}, "decode ACK: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.msg.Decode(nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Decode(nil): got error %v, want prefix %q", err, tc.want)
			}
		})
	}
}
