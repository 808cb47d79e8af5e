package session

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

func TestTransferPacket(t *testing.T) {
	tests := []struct {
		pk   transfer
		want string
	}{
		// "play.example.com", port 19132 (0x4abc), no world reload, no
		// gatherings.
		{transfer{Address: "play.example.com", Port: 19132}, "10 706c61792e6578616d706c652e636f6d bc4a 00 00"},
		{transfer{Address: "::1", Port: 1}, "03 3a3a31 0100 00 00"},
	}
	for _, tc := range tests {
		if got, want := hex.EncodeToString(tc.pk.Append(nil)), hex.EncodeToString(unhex(t, tc.want)); got != want {
			t.Errorf("%+v: got %s, want %s", tc.pk, got, want)
		}
	}
}

// TestTransfer sends a logged-in player elsewhere: the Transfer packet is
// the last the session writes, the session ends and Run returns nil.
func TestTransfer(t *testing.T) {
	leaktest.Check(t)
	s, c, done := start(t, context.Background(), Config{NewHandler: newHolder})
	c.login(t)
	if err := s.Transfer("[2001:db8::1]:19133"); err != nil {
		t.Fatal(err)
	}
	pks := clientDecode(t, c.next(t), true)
	want := transfer{Address: "2001:db8::1", Port: 19133}
	if len(pks) != 1 || pks[0].ID != IDTransfer || string(pks[0].Payload) != string(want.Append(nil)) {
		t.Fatalf("got %+v, want one Transfer to %+v", pks, want)
	}
	if err := wait(t, done); err != nil {
		t.Errorf("Run: %v", err)
	}
	c.waitClosed(t)
	if err := s.Transfer("127.0.0.1:19132"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Transfer after the end: got %v, want net.ErrClosed", err)
	}
}

func TestTransferRefusesBadAddresses(t *testing.T) {
	s := New(newFakeConn(), Config{})
	for _, addr := range []string{"", "example.com", "example.com:0", "example.com:65536", ":19132", "example.com:port"} {
		if err := s.Transfer(addr); err == nil {
			t.Errorf("%q: got nil error", addr)
		}
	}
	if s.isClosing() {
		t.Error("a refused address ended the session")
	}
}
