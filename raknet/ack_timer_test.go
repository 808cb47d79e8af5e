package raknet

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
)

// A sparse stream in which a second message follows an exchange at once
// (a game client's ping right after its input was answered, the two
// datagrams 0.2 ms apart, then 50 ms of quiet): the second message's ACK
// leaves with its reply, as the first's did, and the server's timer does
// not wake for it. Two datagrams close together once do not make the
// stream dense.
func TestSimAckLeavesWithReplyAfterCloseArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: 100 * time.Microsecond})
		client, server := e.dial()
		simEcho(t, server)
		msg := bytes.Repeat([]byte{simID}, 100)
		pair := func() {
			for range 2 {
				if _, err := client.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := client.ReadPacket(); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		for range 5 {
			pair()
		}
		const n = 20
		s0, w0 := e.sent(simServer), server.wakeups.Load()
		for range n {
			pair()
		}
		time.Sleep(20 * time.Millisecond)
		s, w := e.sent(simServer)-s0, server.wakeups.Load()-w0
		// Each message: its reply and the ACK leaving with it.
		if s != 4*n {
			t.Errorf("server sent %d datagrams for %d messages, want %d (a reply and an ACK each)", s, 2*n, 4*n)
		}
		if w != 0 {
			t.Errorf("server timer woke %d times, want 0", w)
		}
	})
}
