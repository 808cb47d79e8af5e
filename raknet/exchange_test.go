package raknet

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
)

// simEcho has server echo every message it reads until it closes, which
// the test's cleanup does, waiting for the echo to end.
func simEcho(t testing.TB, server *Conn) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			b, err := server.ReadPacket()
			if err != nil {
				return
			}
			if _, err := server.Write(b); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = server.Close()
		<-done
	})
}

// simExchanges runs n exchanges of a 100-byte message echoed by the
// server, pause apart, and returns the datagrams each side sent per
// exchange (ACKs included) and the server's timer wake-ups per exchange.
func simExchanges(t *testing.T, e *simEnv, client, server *Conn, n int, pause time.Duration) (clientPer, serverPer, wakeups float64) {
	t.Helper()
	msg := bytes.Repeat([]byte{simID}, 100)
	exchange := func() {
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		got, err := client.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("got %d bytes back, want the %d sent", len(got), len(msg))
		}
		time.Sleep(pause)
	}
	// A first exchange takes the RTT samples and the handshake's ACKs out
	// of the count.
	for range 5 {
		exchange()
	}
	time.Sleep(100 * time.Millisecond)
	c0, s0, w0 := e.sent(simAddr(client)), e.sent(simServer), server.wakeups.Load()
	for range n {
		exchange()
	}
	// The last ACKs leave within the ACK delay.
	time.Sleep(20 * time.Millisecond)
	c1, s1, w1 := e.sent(simAddr(client)), e.sent(simServer), server.wakeups.Load()
	return float64(c1-c0) / float64(n), float64(s1-s0) / float64(n), float64(w1-w0) / float64(n)
}

// Back-to-back exchanges, each side's next message following the peer's
// within the ACK delay, send one data datagram per message and ACKs that
// each cover many of them: the ACK waits for its deadline or the count
// instead of leaving with every reply, which made it two datagrams per
// exchange on each side.
func TestSimEchoDatagramsDense(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: 100 * time.Microsecond})
		client, server := e.dial()
		simEcho(t, server)
		const n = 200
		c, s, _ := simExchanges(t, e, client, server, n, 0)
		// One data datagram each way, and an ACK per 5 ms (25 exchanges
		// at this RTT) or 32 datagrams.
		if c > 1.1 || s > 1.1 || c < 1 || s < 1 {
			t.Errorf("got %.3f datagrams per exchange from the client, %.3f from the server, want 1 to 1.1 each", c, s)
		}
		t.Logf("client %.3f, server %.3f datagrams per exchange", c, s)
	})
}

// Exchanges further apart than the ACK delay cost two datagrams each
// way, the reply and the ACK, and the server sends both in the pass that
// writes the reply: its timer does not wake for the ACK.
func TestSimEchoDatagramsSparse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		e.n.SetConditions(simnet.Conditions{Delay: 100 * time.Microsecond})
		client, server := e.dial()
		simEcho(t, server)
		const n = 20
		c, s, w := simExchanges(t, e, client, server, n, 50*time.Millisecond)
		if c != 2 || s != 2 {
			t.Errorf("got %.3f datagrams per exchange from the client, %.3f from the server, want 2 each", c, s)
		}
		if w != 0 {
			t.Errorf("got %.2f server wake-ups per exchange, want 0", w)
		}
	})
}

// Readers blocked at once are all woken: the first waits on the signal
// kept for one reader, the others on a channel closed for all, and each
// message or a Close reaches them.
func TestSimConcurrentReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		client, server := e.dial()
		const readers = 3
		got := make(chan error, readers)
		for range readers {
			go func() {
				_, err := server.ReadPacket()
				got <- err
			}()
		}
		synctest.Wait()
		for i := range readers - 1 {
			if _, err := client.Write([]byte{simID, byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		for range readers - 1 {
			if err := <-got; err != nil {
				t.Fatalf("read: got %v, want a message", err)
			}
		}
		// The last reader is still blocked; a deadline in the past wakes it.
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("third reader returned %v with no message", err)
		default:
		}
		_ = server.SetReadDeadline(time.Now())
		if err := <-got; err == nil {
			t.Fatal("read past its deadline: got a message, want an error")
		}
		_ = server.SetReadDeadline(time.Time{})
		for range readers {
			go func() {
				_, err := server.ReadPacket()
				got <- err
			}()
		}
		synctest.Wait()
		go server.Close()
		for range readers {
			if err := <-got; err == nil {
				t.Fatal("read after Close: got a message, want an error")
			}
		}
	})
}
