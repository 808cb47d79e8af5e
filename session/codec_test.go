package session

import (
	"bytes"
	"reflect"
	"testing"
)

// codec is the shape of every packet codec in this package.
type codec interface {
	Append(b []byte) []byte
	Decode(b []byte) (int, error)
}

// testCodec checks m encodes to golden, decodes back to m consuming every
// byte, and that every strict prefix of golden fails to decode.
func testCodec[T any, P interface {
	*T
	codec
}](t *testing.T, m T, golden string) {
	t.Helper()
	want := unhex(t, golden)
	if got := P(&m).Append(nil); !bytes.Equal(got, want) {
		t.Errorf("append: got % x, want % x", got, want)
	}
	var got T
	n, err := P(&got).Decode(want)
	if err != nil || n != len(want) {
		t.Fatalf("decode: got %d, %v; want %d, nil", n, err, len(want))
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("decode: got %+v, want %+v", got, m)
	}
	for i := range len(want) {
		var v T
		if _, err := P(&v).Decode(want[:i]); err == nil {
			t.Errorf("prefix %d/%d: got nil error, want one", i, len(want))
		}
	}
}

func TestRequestNetworkSettingsCodec(t *testing.T) {
	testCodec(t, requestNetworkSettings{ClientProtocol: 2169}, "00 00 08 79")
	testCodec(t, requestNetworkSettings{ClientProtocol: 2193}, "00 00 08 91")
	testCodec(t, requestNetworkSettings{ClientProtocol: -1}, "ff ff ff ff")
}

func TestNetworkSettingsCodec(t *testing.T) {
	testCodec(t, networkSettings{CompressionThreshold: 512}, "00 02 00 00 00 00 00 00 00 00")
	testCodec(t, networkSettings{
		CompressionThreshold: 1, CompressionAlgorithm: 0xffff,
		ClientThrottle: true, ClientThrottleThreshold: 5, ClientThrottleScalar: 0.5,
	}, "01 00 ff ff 01 05 00 00 00 3f")
	var m networkSettings
	if _, err := m.Decode(unhex(t, "00 02 00 00 02 00 00 00 00 00")); err == nil {
		t.Errorf("bool byte 2: got nil error, want one")
	}
}

func TestPlayStatusCodec(t *testing.T) {
	testCodec(t, playStatus{Status: PlayStatusLoginSuccess}, "00 00 00 00")
	testCodec(t, playStatus{Status: PlayStatusLoginFailedClient}, "00 00 00 01")
	testCodec(t, playStatus{Status: PlayStatusLoginFailedServer}, "00 00 00 02")
}

func TestDisconnectCodec(t *testing.T) {
	testCodec(t, disconnect{Reason: DisconnectReasonKicked, Message: "Hello"}, "6e 00 05 48 65 6c 6c 6f 00")
	testCodec(t, disconnect{Reason: DisconnectReasonDisconnected, Message: "a", FilteredMessage: "b"},
		"52 00 01 61 01 62")
	testCodec(t, disconnect{Reason: DisconnectReasonShutdown, HideScreen: true}, "88 01 01")
}

func TestLoginCodec(t *testing.T) {
	testCodec(t, login{ClientProtocol: 2193, ConnectionRequest: []byte{1, 2, 3}},
		"00 00 08 91 03 01 02 03")
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{PlayStatusLoginFailedClient.String(), "LoginFailed_ClientOld"},
		{PlayStatusLoginFailedServer.String(), "LoginFailed_ServerOld"},
		{PlayStatus(42).String(), "PlayStatus(42)"},
		{DisconnectReasonKicked.String(), "Kicked"},
		{DisconnectReason(-3).String(), "DisconnectReason(-3)"},
		{compressionFlate.String(), "deflate"},
		{compressionID(7).String(), "compressionID(0x07)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
