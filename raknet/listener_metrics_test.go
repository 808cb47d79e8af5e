package raknet

import (
	"net"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// The socket's traffic is counted exactly: one ping in, one pong out.
func TestListenerTrafficCounted(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		l.PongData([]byte("MCPE;Basalt;"))
		r := s.raw(l.Addr())
		ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
		r.send(ping)
		pong := r.expect(wire.IDUnconnectedPong, time.Second)
		st := l.Stats()
		if st.DatagramsIn != 1 || st.BytesIn != uint64(len(ping)) {
			t.Errorf("in: got %d datagrams, %d bytes, want 1, %d", st.DatagramsIn, st.BytesIn, len(ping))
		}
		if st.DatagramsOut != 1 || st.BytesOut != uint64(len(pong)) {
			t.Errorf("out: got %d datagrams, %d bytes, want 1, %d", st.DatagramsOut, st.BytesOut, len(pong))
		}
	})
}

// Answering a ping that reaches its peer, the traffic counters included,
// allocates nothing.
func TestPongCountedAllocs(t *testing.T) {
	l := listenTest(t, ListenConfig{OfflineRate: -1, OfflineBytes: -1})
	l.PongData([]byte("MCPE;Basalt;"))
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	from := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	before := l.Stats()
	if n := testing.AllocsPerRun(200, func() { l.handle(ping, from, time.Now()) }); n != 0 {
		t.Errorf("got %v allocations per pong, want 0", n)
	}
	if st := l.Stats(); st.Pings-before.Pings != 201 || st.DatagramsOut-before.DatagramsOut != 201 {
		t.Errorf("got %d pings, %d datagrams out, want 201 each", st.Pings-before.Pings, st.DatagramsOut-before.DatagramsOut)
	}
}

// ConnStats sees each open connection, then its counters among the closed
// ones once it is gone: totals never go backwards.
func TestConnStats(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{}, l)
		const n = 5
		for range n {
			if _, err := client.Write([]byte{0xfe, 1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := server.ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
		// The client's ACKs give the server an RTT sample.
		if _, err := server.Write([]byte{0xfe, 4}); err != nil {
			t.Fatal(err)
		}
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := client.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		if !waitFor(5*time.Second, func() bool { return server.Stats().RTT > 0 }) {
			t.Fatal("no RTT sample within 5 s")
		}
		var live []Stats
		closed := l.ConnStats(func(s Stats) { live = append(live, s) })
		if len(live) != 1 {
			t.Fatalf("ConnStats: got %d connections, want 1", len(live))
		}
		if live[0].MessagesReceived < n || live[0].RTT <= 0 || live[0].Window <= 0 {
			t.Errorf("ConnStats: got %d messages, RTT %v, window %d, want at least %d, > 0, > 0",
				live[0].MessagesReceived, live[0].RTT, live[0].Window, n)
		}
		if live[0].LossIn != 0 || live[0].Loss != 0 {
			t.Errorf("ConnStats: got loss %v in, %v out over loopback, want 0, 0", live[0].LossIn, live[0].Loss)
		}
		if closed.MessagesReceived != 0 || closed.DatagramsReceived != 0 {
			t.Errorf("closed before any closed: got %+v, want zero counters", closed)
		}
		if st := l.Stats(); st.Established != 1 || st.Connections != 1 || st.Handshaking != 0 {
			t.Errorf("Stats: got %d established, %d open, %d handshaking, want 1, 1, 0", st.Established, st.Connections, st.Handshaking)
		}

		_ = client.Close()
		if !waitFor(5*time.Second, func() bool { return l.Stats().Connections == 0 }) {
			t.Fatal("server connection still open 5 s after the client closed")
		}
		calls := 0
		closed = l.ConnStats(func(Stats) { calls++ })
		if calls != 0 {
			t.Errorf("ConnStats after close: got %d connections, want 0", calls)
		}
		if closed.MessagesReceived < live[0].MessagesReceived || closed.DatagramsReceived < live[0].DatagramsReceived ||
			closed.BytesSent < live[0].BytesSent || closed.AcksSent < live[0].AcksSent {
			t.Errorf("closed totals went backwards: got %+v, had %+v live", closed, live[0])
		}
		if closed.RTT != 0 || closed.Window != 0 {
			t.Errorf("closed: got RTT %v, window %d, want estimates zero", closed.RTT, closed.Window)
		}
		if st := l.Stats(); st.Established != 0 {
			t.Errorf("Stats: got %d established, want 0", st.Established)
		}
	})
}
