package raknet

import (
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// How many datagrams a request answered by a response costs each side,
// ACKs included: a 100 B message from the client, echoed by the server.
// The bounds are what the code does today (one data datagram and one ACK
// datagram per side per exchange), so that a change that sends more fails
// here; lower them as the code improves.
//
// The goal is that an ACK which can wait does not cost a datagram of its
// own: data and ACK in one datagram where the ACK can wait. RakNet's wire
// format has no datagram that carries both frames and ACK records (the
// 0x40 flag makes the whole datagram an ACK), so for a peer on the wire
// that means an ACK held until it can share its datagram's cost: one ACK
// datagram covering several data datagrams of a tick stream (go-raknet
// flushes ACKs every 100 ms, two ticks), where today each data datagram
// is acknowledged on its own 5 ms after it arrives
// (reliability.DefaultAckDelay).

// countDelay is the simulated one-way delay: a LAN-like round trip of
// 20 ms, far above the ACK delay, so ACKs are not held up by it.
const countDelay = 10 * time.Millisecond

// kindCount is one side's datagrams by kind.
type kindCount struct{ data, ack, nack int }

func (c kindCount) total() int { return c.data + c.ack + c.nack }

func (c kindCount) minus(o kindCount) kindCount {
	return kindCount{c.data - o.data, c.ack - o.ack, c.nack - o.nack}
}

// datagramTally counts the datagrams crossing a simulated network by side and
// kind.
type datagramTally struct {
	mu             sync.Mutex
	client, server kindCount
}

func (t *datagramTally) see(from netip.AddrPort, b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &t.client
	if from == simServer {
		c = &t.server
	}
	switch {
	case len(b) == 0 || b[0]&wire.FlagValid == 0:
	case b[0]&wire.FlagACK != 0:
		c.ack++
	case b[0]&wire.FlagNACK != 0:
		c.nack++
	default:
		c.data++
	}
}

func (t *datagramTally) get() (client, server kindCount) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.client, t.server
}

// countEnv connects a client and a server on a simulated network with
// countDelay each way and keepalive pings far apart, so only the
// exchanges' own datagrams are counted.
func countEnv(t *testing.T) (e *simEnv, client, server *Conn, n *datagramTally) {
	t.Helper()
	lc := ListenConfig{PingInterval: 30 * time.Second, Timeout: time.Minute}
	e = newSimEnv(t, simnet.Config{Seed: 1}, lc, Dialer{PingInterval: 30 * time.Second, Timeout: time.Minute})
	n = &datagramTally{}
	e.n.SetConditions(simnet.Conditions{Delay: countDelay, Drop: func(from, _ netip.AddrPort, b []byte) bool {
		n.see(from, b)
		return false
	}})
	client, server = e.dial()
	return e, client, server, n
}

// echoExchange sends a 100 B request from client, echoes it from server and
// reads the answer.
func echoExchange(t *testing.T, i int, client, server *Conn) {
	t.Helper()
	req := simMessage(i, 100)
	if _, err := client.Write(req); err != nil {
		t.Fatalf("client write: %v", err)
	}
	got, err := server.ReadPacket()
	if err != nil {
		t.Fatalf("server read: %v", err)
	}
	if _, err := server.Write(got); err != nil {
		t.Fatalf("server write: %v", err)
	}
	resp, err := client.ReadPacket()
	if err != nil {
		t.Fatalf("client read: %v", err)
	}
	if string(resp) != string(req) {
		t.Fatalf("exchange %d: got %d bytes back, not the request", i, len(resp))
	}
}

// One exchange on a quiet connection, counted until everything has been
// acknowledged: the request and the response are one data datagram each,
// and each side acknowledges the other's on its own.
func TestEchoExchangeDatagrams(t *testing.T) {
	// want is today's count for each side: one data datagram, one ACK.
	want := kindCount{data: 1, ack: 1}
	const exchanges = 5
	synctest.Test(t, func(t *testing.T) {
		_, client, server, n := countEnv(t)
		time.Sleep(time.Second) // the handshake's ACKs settle
		for i := range exchanges {
			c0, s0 := n.get()
			echoExchange(t, i, client, server)
			time.Sleep(time.Second) // every ACK is out
			synctest.Wait()
			c1, s1 := n.get()
			c, s := c1.minus(c0), s1.minus(s0)
			if c.data != 1 || s.data != 1 || c.total() > want.total() || s.total() > want.total() || c.nack+s.nack != 0 {
				t.Errorf("exchange %d: got %+v from the client, %+v from the server, want 1 data datagram each and at most %+v",
					i, c, s, want)
			}
		}
	})
}

// A tick stream: an exchange every 50 ms for 2 s, counted as a whole.
func TestEchoExchangeDatagramsTicks(t *testing.T) {
	const (
		ticks = 40
		tick  = 50 * time.Millisecond
		// maxACKs bounds each side's ACK datagrams over the stream:
		// today one per data datagram received.
		maxACKs = ticks
	)
	synctest.Test(t, func(t *testing.T) {
		_, client, server, n := countEnv(t)
		time.Sleep(time.Second)
		c0, s0 := n.get()
		start := time.Now()
		for i := range ticks {
			echoExchange(t, i, client, server)
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * tick)))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		c1, s1 := n.get()
		c, s := c1.minus(c0), s1.minus(s0)
		t.Logf("%d exchanges: client sent %+v, server %+v", ticks, c, s)
		for _, side := range []struct {
			name string
			got  kindCount
		}{{"client", c}, {"server", s}} {
			if side.got.data != ticks || side.got.ack > maxACKs || side.got.nack != 0 {
				t.Errorf("%s: got %+v, want %d data datagrams, at most %d ACKs, no NACK", side.name, side.got, ticks, maxACKs)
			}
		}
	})
}
