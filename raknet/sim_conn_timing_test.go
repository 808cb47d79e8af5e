package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// An idle connection's timer fires only for what is due: a ping every
// interval and the ACKs of the peer's ping and pong.
func TestSimIdleConnectionWakesRarely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 200 * time.Millisecond
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{PingInterval: interval}, Dialer{PingInterval: interval})
		e.n.SetConditions(simnet.Conditions{Delay: 5 * time.Millisecond})
		client, server := e.dial()
		time.Sleep(time.Second)
		before := [2]uint64{client.wakeups.Load(), server.wakeups.Load()}
		time.Sleep(10 * interval)
		for i, c := range []*Conn{client, server} {
			// Per interval: its ping, the ACK of the peer's ping, the ACK
			// of the peer's pong.
			if n := c.wakeups.Load() - before[i]; n > 3*10 || n < 10 {
				t.Errorf("conn %d woke %d times in %v, want 10 to %d", i, n, 10*interval, 3*10)
			}
		}
	})
}

// A connection that hears the peer's pings answers them and sends no
// keepalive of its own: its pongs already keep the peer's timeout at bay.
func TestSimPingedConnectionSendsNoPings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{PingInterval: 150 * time.Millisecond}, Dialer{PingInterval: 30 * time.Millisecond})
		e.n.SetConditions(simnet.Conditions{Delay: 2 * time.Millisecond})
		client, server := e.dial()
		time.Sleep(600 * time.Millisecond)
		server.mu.Lock()
		serverPinged := !server.ctl.pingSent.IsZero()
		server.mu.Unlock()
		client.mu.Lock()
		clientPinged := !client.ctl.pingSent.IsZero()
		client.mu.Unlock()
		if serverPinged || !clientPinged {
			t.Errorf("pings sent: server %v, client %v, want false, true", serverPinged, clientPinged)
		}
		if lat := client.Latency(); lat != 4*time.Millisecond {
			t.Errorf("client latency: got %v, want 4ms from the pongs", lat)
		}
	})
}

// Close unblocks a pending ReadPacket at once.
func TestSimCloseUnblocksRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		client, _ := e.dial()
		errc := make(chan error, 1)
		go func() {
			_, err := client.ReadPacket()
			errc <- err
		}()
		synctest.Wait()
		start := time.Now()
		go client.Close()
		err := <-errc
		checkOpErr(t, err, "read", net.ErrClosed)
		if d := time.Since(start); d != 0 {
			t.Errorf("read returned %v after Close, want at once", d)
		}
	})
}

// A closer whose earlier ACKs were lost still finishes Close promptly: the
// peer, gone after the DisconnectionNotification, keeps acknowledging the
// resent data for a while.
func TestSimCloseAfterLostAcks(t *testing.T) {
	for _, serverCloses := range []bool{false, true} {
		t.Run(fmt.Sprintf("server closes %v", serverCloses), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const closeTimeout = 2 * time.Second
				const delay = 10 * time.Millisecond
				e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{CloseTimeout: closeTimeout}, Dialer{CloseTimeout: closeTimeout})
				var lose atomic.Bool
				e.n.SetConditions(simnet.Conditions{Delay: delay, Drop: func(_, _ netip.AddrPort, b []byte) bool {
					return lose.Load() && b[0]&wire.FlagACK != 0
				}})
				client, server := e.dial()
				closer, reader := client, server
				if serverCloses {
					closer, reader = server, client
				}
				// An RTT sample first, so resends follow a measured RTO.
				if _, err := closer.Write([]byte{0xfe, 0xff}); err != nil {
					t.Fatal(err)
				}
				if _, err := reader.ReadPacket(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
				lose.Store(true)
				for i := range 20 {
					if _, err := closer.Write([]byte{0xfe, byte(i)}); err != nil {
						t.Fatal(err)
					}
				}
				for range 20 {
					if _, err := reader.ReadPacket(); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(50 * time.Millisecond)
				if closer.Stats().Buffered == 0 {
					t.Fatal("no unacknowledged data before Close")
				}
				lose.Store(false)
				start := time.Now()
				_ = closer.Close()
				// The data's resend, its ACK, the goodbye and its ACK: a
				// retransmission timeout and two round trips at most.
				if d := time.Since(start); d > 200*time.Millisecond {
					t.Errorf("close took %v, want well under the %v close timeout", d, closeTimeout)
				}
				t.Logf("close took %v", time.Since(start))
			})
		})
	}
}

// Read into a buffer too small for the message fails with
// ErrBufferTooSmall.
func TestSimReadBufferTooSmall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		client, server := e.dial()
		if _, err := client.Write([]byte{0xfe, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		_, err := server.Read(make([]byte, 2))
		checkOpErr(t, err, "read", ErrBufferTooSmall)
		var ne net.Error
		if !errors.As(err, &ne) {
			t.Errorf("got %v, want a net.Error", err)
		}
	})
}

// Read reuses the buffers of the messages it copied out for later
// messages, and a message ReadPacket returned is never one of them: mixing
// the two loses and overwrites nothing.
func TestSimReadReusesBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSimEnv(t, simnet.Config{Seed: 1}, ListenConfig{}, Dialer{})
		client, server := e.dial()
		msg := func(i int) []byte { return append([]byte{0xfe}, bytes.Repeat([]byte{byte(i)}, 10+i)...) }
		var kept [][]byte
		buf := make([]byte, 1500)
		for i := range 40 {
			if _, err := client.Write(msg(i)); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				p, err := server.ReadPacket()
				if err != nil {
					t.Fatal(err)
				}
				kept = append(kept, p)
				continue
			}
			n, err := server.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf[:n], msg(i)) {
				t.Fatalf("Read %d: got %v, want %v", i, buf[:n], msg(i))
			}
		}
		for j, p := range kept {
			if want := msg(3 * j); !bytes.Equal(p, want) {
				t.Errorf("ReadPacket %d changed after later reads: got %v, want %v", 3*j, p, want)
			}
		}
		server.mu.Lock()
		spares := len(server.spare)
		server.mu.Unlock()
		if spares == 0 || spares > maxSpare {
			t.Errorf("got %d spare buffers, want 1 to %d", spares, maxSpare)
		}
	})
}
