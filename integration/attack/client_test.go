package attack

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
)

func listen(t *testing.T, lc raknet.ListenConfig) (*raknet.Listener, netip.AddrPort) {
	t.Helper()
	l, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, l.Addr().(*net.UDPAddr).AddrPort()
}

func accept(t *testing.T, l *raknet.Listener) *raknet.Conn {
	t.Helper()
	ch := make(chan *raknet.Conn, 1)
	go func() {
		c, _ := l.AcceptConn()
		ch <- c
	}()
	select {
	case c := <-ch:
		if c == nil {
			t.Fatal("accept failed")
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("accept: nothing after 5s")
		return nil
	}
}

func dialClient(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readN reads n messages from s, each within timeout.
func readN(t *testing.T, s *raknet.Conn, n int, timeout time.Duration) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		_ = s.SetReadDeadline(time.Now().Add(timeout))
		b, err := s.ReadPacket()
		if err != nil {
			t.Fatalf("read message %d of %d: %v", i, n, err)
		}
		out = append(out, b)
	}
	return out
}

// checkNothing checks that s delivers nothing within d.
func checkNothing(t *testing.T, s *raknet.Conn, d time.Duration) {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(d))
	if b, err := s.ReadPacket(); err == nil {
		t.Errorf("got message % x, want none", b[:min(len(b), 8)])
	}
}

func TestDialExchangesMessages(t *testing.T) {
	l, addr := listen(t, raknet.ListenConfig{})
	c := dialClient(t, ClientConfig{Local: netip.AddrPortFrom(ClientAddr(0), 0), Server: addr})
	s := accept(t, l)
	if got, want := s.RemoteAddr().String(), c.Local().String(); got != want {
		t.Errorf("server sees the client at %v, want %v", got, want)
	}
	msg := []byte{IDGamePacket, 1, 2, 3}
	if err := c.Send(msg); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, s, 1, 2*time.Second)[0]; !bytes.Equal(got, msg) {
		t.Errorf("server read % x, want % x", got, msg)
	}
	reply := []byte{IDGamePacket, 9, 8, 7}
	if _, err := s.Write(reply); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-c.Messages():
		if !bytes.Equal(got, reply) {
			t.Errorf("client read % x, want % x", got, reply)
		}
	case <-time.After(2 * time.Second):
		t.Error("client read nothing in 2s")
	}
	if st := c.Stats(); st.Acked == 0 || st.Acked > st.DataSent {
		t.Errorf("stats %+v: want 1 to DataSent datagrams acknowledged", st)
	}
}

func TestOrderedAheadWaitsForTheGap(t *testing.T) {
	l, addr := listen(t, raknet.ListenConfig{})
	c := dialClient(t, ClientConfig{Server: addr})
	s := accept(t, l)
	const ahead = 20
	sent, err := c.OrderedAhead(context.Background(), ahead, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sent.Datagrams, ahead; got != want {
		t.Fatalf("sent %d messages, want %d", got, want)
	}
	checkNothing(t, s, 300*time.Millisecond)
	// The message the gap is waiting for releases all of them, in order.
	if err := c.Send([]byte{IDGamePacket, 0xaa}); err != nil {
		t.Fatal(err)
	}
	got := readN(t, s, ahead+1, 2*time.Second)
	if !bytes.Equal(got[0], []byte{IDGamePacket, 0xaa}) {
		t.Errorf("first message: got % x, want fe aa", got[0])
	}
	if want := c.MaxPayload(ReliableOrdered, false); len(got[ahead]) != want {
		t.Errorf("last message: got %d bytes, want %d", len(got[ahead]), want)
	}
}

func TestOpenSplitsNeverComplete(t *testing.T) {
	l, addr := listen(t, raknet.ListenConfig{})
	c := dialClient(t, ClientConfig{Server: addr})
	s := accept(t, l)
	const messages, parts = 10, 8
	sent, err := c.OpenSplits(context.Background(), messages, parts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sent.Datagrams, messages*parts; got != want {
		t.Fatalf("sent %d fragments, want %d", got, want)
	}
	checkNothing(t, s, 300*time.Millisecond)
	st := c.Stats()
	if st.Acked < st.DataSent-2 {
		t.Errorf("stats %+v: want every fragment acknowledged", st)
	}
}

func TestGrabTakesWhatIsFree(t *testing.T) {
	const slots, tries = 5, 8
	_, addr := listen(t, raknet.ListenConfig{MaxConnections: slots})
	// One handshake at a time: handshakes in progress take no slot, so
	// parallel ones may all complete and the listener then closes those
	// over the cap, which a count of refusals would not show.
	g := Grab(context.Background(), ClientAddr(1), addr, tries, 1)
	defer g.Close()
	if got := len(g.Clients); got != slots {
		t.Errorf("connections: got %d, want %d", got, slots)
	}
	if got := g.Refused[IDNoFreeIncomingConnections]; got != tries-slots {
		t.Errorf("refused with NoFreeIncomingConnections: got %d, want %d (all: %v, failed %d)", got, tries-slots, g.Refused, g.Failed)
	}
	ports := make(map[uint16]bool)
	for _, c := range g.Clients {
		if c.Local().Addr() != ClientAddr(1) || ports[c.Local().Port()] {
			t.Errorf("connection from %v: want %v and a port of its own", c.Local(), ClientAddr(1))
		}
		ports[c.Local().Port()] = true
	}
}

func TestAckFloodBounded(t *testing.T) {
	_, addr := listen(t, raknet.ListenConfig{})
	c := dialClient(t, ClientConfig{Server: addr})
	sent, err := c.AckFlood(context.Background(), MaxAckRecords, 0, 50, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sent, (Counts{50, 50 * (3 + 7*MaxAckRecords)}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
