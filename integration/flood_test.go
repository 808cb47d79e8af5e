package integration

import (
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
	"github.com/basaltmc/basalt/raknet"
)

// TestGoRakNetUnpacedStreamThroughLoss has a go-raknet client, which has
// no congestion control and resends everything outstanding on a timer,
// write a burst of ordered messages through 10% loss: every message
// reaches our listener, in order, with the connection alive throughout.
func TestGoRakNetUnpacedStreamThroughLoss(t *testing.T) {
	checkGoroutines(t)
	seed, err := proxy.Seed()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, proxy.SeedEnv, seed)
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	drop, dup, delay := proxy.RandomLoss(seed, 0.10, 0, 2*time.Millisecond, 0)
	p, err := proxy.New(proxy.Opts{RemoteAddr: l.Addr().String(), DropPacket: drop, DuplicatePacket: dup, DelayPacket: delay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := goDial(t, p.LocalAddr().String())
	s := acceptOne(t, l, 5*time.Second)
	const count, size = 16384, 1024
	start := time.Now()
	for i := range count {
		if _, err := c.Write(message(uint32(i), size)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	_ = s.SetReadDeadline(time.Now().Add(30 * time.Second))
	for i := range count {
		b, err := s.ReadPacket()
		if err != nil {
			t.Fatalf("read %d: %v (stats %+v)", i, err, s.Stats())
		}
		if err := checkMessage(b, uint32(i), size); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	t.Logf("%d messages through 10%% loss in %v; server %+v", count, time.Since(start), s.Stats())
}
