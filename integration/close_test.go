package integration

import (
	"bytes"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
)

// TestLastWriteBeforeCloseReachesGoRakNet writes a packet and closes at
// once, many times: go-raknet closes its side when DisconnectionNotification
// arrives and drops what its reader has not taken yet, so our Close must
// send it only after the peer acknowledged the packet. This is how a
// player's disconnect message reaches gophertunnel.
func TestLastWriteBeforeCloseReachesGoRakNet(t *testing.T) {
	checkGoroutines(t)
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	const rounds = 20
	want := []byte{0xfe, 1, 2, 3}
	for i := range rounds {
		c := goDial(t, l.Addr().String())
		s := acceptOne(t, l, 5*time.Second)
		if _, err := s.Write(want); err != nil {
			t.Fatalf("round %d: write: %v", i, err)
		}
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		got, err := readWithin(c, 5*time.Second)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: got % x, %v, want % x", i, got, err, want)
		}
		if err := <-closed; err != nil {
			t.Fatalf("round %d: close: %v", i, err)
		}
		_ = c.Close()
	}
}
