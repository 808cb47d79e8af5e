package raknet

import (
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// handshake completes ConnectionRequest and NewIncomingConnection after
// open and returns the accepted connection.
func (r *rawClient) handshake(l *Listener, guid int64) *Conn {
	r.t.Helper()
	r.connectionRequest(guid)
	nic := wire.NewIncomingConnection{ServerAddr: r.server}
	r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
	return acceptTest(r.t, l)
}

// A protocol-10 client gets a Reply1 without a cookie, as those clients
// parse it, and connects without one through the pool of unproven
// handshakes, its ConnectionRequestAccepted carrying RakNet's ten system
// addresses.
func TestUnprovenClientConnects(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{CloseTimeout: 50 * time.Millisecond})
		r := s.raw(l.Addr())
		r.send(r.request1(10, 1400))
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil || m.Security {
			t.Fatalf("Reply1 to protocol 10: got %+v (%v), want no security field", m, err)
		}
		r.send(r.request2(1400, -10))
		r.expect(wire.IDOpenConnectionReply2, time.Second)
		if st := l.Stats(); st.Handshaking != 1 {
			t.Errorf("handshaking: got %d, want 1", st.Handshaking)
		}
		acc := r.connectionRequest(-10)
		var a wire.ConnectionRequestAccepted
		if _, err := a.Decode(acc); err != nil || a.SystemAddrs.N != 10 {
			t.Errorf("accepted: %d system addresses (%v), want 10", a.SystemAddrs.N, err)
		}
		nic := wire.NewIncomingConnection{ServerAddr: r.server}
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
		if c := acceptTest(t, l); c.GUID() != -10 {
			t.Errorf("GUID: got %d, want -10", c.GUID())
		}
		if st := l.Stats(); st.Handshaking != 0 || st.Amplification != 0 {
			t.Errorf("after establishing: %d handshaking, %d held back by the 3x rule, want 0, 0", st.Handshaking, st.Amplification)
		}
	})
}

// An OpenConnectionRequest2 with a forged cookie gets nothing, creates
// nothing and is counted; the same address then connects with the cookie
// it was issued.
func TestForgedCookieDropped(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		r := s.raw(l.Addr())
		r.send(r.request1(11, 1400))
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil || !m.Security {
			t.Fatalf("Reply1: got %+v (%v), want a cookie", m, err)
		}
		r.cookie, r.hasCookie = m.Cookie+1, true
		r.send(r.request2(1400, -1))
		r.silent(wire.IDOpenConnectionReply2, 200*time.Millisecond)
		if st := l.Stats(); st.CookieFailures != 1 || st.Connections != 0 {
			t.Errorf("forged cookie: %d failures, %d connections, want 1, 0", st.CookieFailures, st.Connections)
		}
		r.cookie = m.Cookie
		r.send(r.request2(1400, -1))
		r.expect(wire.IDOpenConnectionReply2, time.Second)
	})
}

// Handshakes without a cookie fill only their own small pool: once full,
// more get nothing, and a client with a cookie still connects.
func TestUnprovenPoolBounded(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{CloseTimeout: 50 * time.Millisecond})
		for i := range maxUnproven + 4 {
			r := s.rawAt(l.Addr(), netip.AddrFrom4([4]byte{127, 0, 2, byte(1 + i)}))
			r.send(r.request2(1400, int64(-100-i)))
			if i < maxUnproven {
				r.expect(wire.IDOpenConnectionReply2, time.Second)
			} else {
				r.silent(wire.IDOpenConnectionReply2, 50*time.Millisecond)
			}
		}
		st := l.Stats()
		if st.Handshaking != maxUnproven || st.PoolFull != 4 {
			t.Errorf("got %d handshaking, %d refused for a full pool, want %d, 4", st.Handshaking, st.PoolFull, maxUnproven)
		}
		r := s.rawAt(l.Addr(), netip.MustParseAddr("127.0.3.1"))
		r.open(1400, -1)
		r.handshake(l, -1)
	})
}

// A connection in its handshake sends at most three times the bytes it
// received: a forged unproven request and ConnectionRequest from a victim
// address get less back than the attacker sent three times over, resends
// included.
func TestHandshakeAmplificationBound(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		f := &filterConn{}
		l := s.listen(ListenConfig{ListenPacket: s.filter(f), HandshakeTimeout: 2 * time.Second})
		r := s.raw(l.Addr())
		req2 := r.request2(1400, -1)
		r.send(req2)
		sent := len(req2)
		req := wire.ConnectionRequest{ClientGUID: -1, Time: 1}
		sent += r.sendFrames(r.frame(wire.Reliable, req.Append(nil)))
		// The victim acknowledges nothing: every resend counts.
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		f.mu.Lock()
		got := 0
		for _, n := range f.sizes {
			got += n
		}
		f.mu.Unlock()
		if got > ampFactor*sent {
			t.Errorf("sent %d bytes for %d received, want at most %d", got, sent, ampFactor*sent)
		}
		if got == 0 {
			t.Error("nothing sent: the request was not answered at all")
		}
	})
}

// Offline requests past a prefix's rate get nothing; another prefix is
// still answered.
func TestOfflineRateLimited(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{OfflineRate: 10})
		r := s.raw(l.Addr())
		answered := 0
		for i := range 40 {
			ping := wire.UnconnectedPing{Time: int64(i), ClientGUID: -1}
			r.send(ping.Append(nil))
		}
		for r.read(100*time.Millisecond) != nil {
			answered++
		}
		// A burst of twice the rate: the pings arrive at one instant.
		if answered != 20 {
			t.Errorf("answered %d of 40 pings, want the burst of 20", answered)
		}
		if st := l.Stats(); st.RateLimited == 0 || st.Pings != uint64(answered) {
			t.Errorf("stats: %d rate-limited, %d pings, want some and %d", st.RateLimited, st.Pings, answered)
		}
		other := s.rawAt(l.Addr(), netip.MustParseAddr("127.0.9.1"))
		ping := wire.UnconnectedPing{Time: 1, ClientGUID: -2}
		other.send(ping.Append(nil))
		other.expect(wire.IDUnconnectedPong, time.Second)
	})
}

// Answering a ping allocates nothing, the real socket's write included:
// an allocation test of the endpoint's path, on a real socket.
func TestPongAllocs(t *testing.T) {
	l := listenTest(t, ListenConfig{OfflineRate: -1})
	l.PongData([]byte("MCPE;Basalt;"))
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	b := ping.Append(nil)
	from := netip.MustParseAddrPort("127.0.0.1:9")
	if n := testing.AllocsPerRun(200, func() { l.handle(b, from, time.Now()) }); n != 0 {
		t.Errorf("got %v allocations per ping, want 0", n)
	}
}

// One IP address gets at most MaxConnectionsPerIP established
// connections; another address still connects.
func TestConnectionsPerIP(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{MaxConnectionsPerIP: 2, CloseTimeout: 50 * time.Millisecond})
		for i := range 2 {
			r := s.raw(l.Addr())
			r.open(1400, int64(-1-i))
			r.handshake(l, int64(-1-i))
		}
		r := s.raw(l.Addr())
		r.send(r.request1(11, 1400))
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil {
			t.Fatal(err)
		}
		r.cookie, r.hasCookie = m.Cookie, m.Security
		r.send(r.request2(1400, -3))
		r.expect(wire.IDNoFreeIncomingConnections, time.Second)
		if st := l.Stats(); st.PerIPLimited != 1 {
			t.Errorf("per-IP refusals: got %d, want 1", st.PerIPLimited)
		}
		other := s.rawAt(l.Addr(), netip.MustParseAddr("127.0.0.2"))
		other.open(1400, -4)
		other.handshake(l, -4)
	})
}

// Connections that come and go give their IP's places back: more than
// MaxConnectionsPerIP connect one after another.
func TestConnectionsPerIPReleased(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{MaxConnectionsPerIP: 2, CloseTimeout: 50 * time.Millisecond})
		for i := range 5 {
			r := s.raw(l.Addr())
			r.open(1400, int64(-1-i))
			c := r.handshake(l, int64(-1-i))
			c.closeNow(net.ErrClosed, true)
			if st := l.Stats(); st.Connections != 0 || st.Handshaking != 0 {
				t.Fatalf("after closing %d: %d connections, %d handshaking, want 0", i, st.Connections, st.Handshaking)
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.perIP) != 0 {
			t.Errorf("per-IP table: got %v, want empty", l.perIP)
		}
	})
}

// Handshakes with cookies fill their own pool: past MaxHandshakes a new
// one gets NoFreeIncomingConnections, and once one completes its place is
// free again. Established connections are not counted.
func TestHandshakePoolBounded(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{MaxHandshakes: 2, CloseTimeout: 50 * time.Millisecond})
		var open []*rawClient
		for i := range 2 {
			r := s.rawAt(l.Addr(), netip.AddrFrom4([4]byte{127, 0, 4, byte(1 + i)}))
			r.open(1400, int64(-1-i))
			open = append(open, r)
		}
		r := s.rawAt(l.Addr(), netip.MustParseAddr("127.0.4.9"))
		r.send(r.request1(11, 1400))
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil {
			t.Fatal(err)
		}
		r.cookie, r.hasCookie = m.Cookie, m.Security
		r.send(r.request2(1400, -9))
		r.expect(wire.IDNoFreeIncomingConnections, time.Second)
		if st := l.Stats(); st.PoolFull != 1 || st.Handshaking != 2 {
			t.Errorf("got %d refused for a full pool, %d handshaking, want 1, 2", st.PoolFull, st.Handshaking)
		}
		open[0].handshake(l, -1)
		r.send(r.request2(1400, -9))
		r.expect(wire.IDOpenConnectionReply2, time.Second)
	})
}

// With PreLoginShare a connection holds at most the pre-login share of
// the memory budget until Promote: a message larger than that waits,
// refused, and arrives once the connection is promoted. Closing gives the
// budget back.
func TestPreLoginShareAndPromote(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{PreLoginShare: true})
		client, server := s.dial(Dialer{}, l)
		msg := make([]byte, 2<<20)
		msg[0] = 0xfe
		go func() { _, _ = client.Write(msg) }()
		if !waitFor(3*time.Second, func() bool { return server.Stats().Deferred > 0 }) {
			t.Fatal("no datagram refused for a 2 MiB message before Promote")
		}
		if held := l.budget.Charged(); held > 2*preLoginShare {
			t.Errorf("budget charged %d bytes before Promote, want about the %d share", held, preLoginShare)
		}
		if st := l.Stats(); st.BudgetRefusals == 0 {
			t.Error("no budget refusal counted")
		}
		server.Promote()
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := server.ReadPacket()
		if err != nil || len(got) != len(msg) {
			t.Fatalf("after Promote: got %d bytes, %v, want the message", len(got), err)
		}
		server.closeNow(net.ErrClosed, true)
		if n := l.budget.Charged(); n != 0 {
			t.Errorf("after close: %d bytes charged, want 0", n)
		}
	})
}

// Without PreLoginShare an established connection gets a fair share at
// once: a 2 MiB message arrives without Promote.
func TestEstablishedFairShare(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{}, l)
		msg := make([]byte, 2<<20)
		msg[0] = 0xfe
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		if got, err := server.ReadPacket(); err != nil || len(got) != len(msg) {
			t.Fatalf("got %d bytes, %v, want the message", len(got), err)
		}
	})
}
