package raknet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

func TestListenNetwork(t *testing.T) {
	tests := []struct {
		addr string
		want string // the local address family
	}{
		{"127.0.0.1:0", "udp4"},
		{"0.0.0.0:0", "udp4"},
		{"[::1]:0", "udp6"},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			var network string
			lc := ListenConfig{ListenPacket: func(n, a string) (net.PacketConn, error) {
				network = n
				return net.ListenPacket(n, a)
			}}
			l, err := lc.Listen(tc.addr)
			if err != nil {
				if tc.want == "udp6" {
					t.Skipf("IPv6 unavailable: %v", err)
				}
				t.Fatal(err)
			}
			defer l.Close()
			if network != tc.want {
				t.Errorf("network: got %s, want %s", network, tc.want)
			}
		})
	}
}

// An unspecified IPv4 address binds udp4, receives pings sent to any local
// address (as LAN broadcast pings arrive) and answers from an IPv4
// socket, so the reply is never IPv4-mapped.
func TestListenUnspecifiedAnswersPings(t *testing.T) {
	l, err := Listen("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.PongData([]byte("MCPE;lan;"))
	port := l.Addr().(*net.UDPAddr).Port
	r := newRawClient(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	ping := wire.UnconnectedPing{Time: 7, ClientGUID: 9}
	r.send(ping.Append(nil))
	b := r.expect(wire.IDUnconnectedPong, time.Second)
	var pong wire.UnconnectedPong
	if _, err := pong.Decode(b); err != nil {
		t.Fatal(err)
	}
	if pong.Time != 7 || string(pong.Data) != "MCPE;lan;" || pong.ServerGUID != l.ID() {
		t.Errorf("pong: got %+v, want time 7, data MCPE;lan; and GUID %d", pong, l.ID())
	}
}

func TestListenIPv6(t *testing.T) {
	leaktest.Check(t)
	l, err := Listen("[::1]:0")
	if err != nil {
		t.Skipf("IPv6 unavailable: %v", err)
	}
	defer l.Close()
	l.PongData([]byte("v6"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if p, err := Ping(ctx, l.Addr().String()); err != nil || string(p) != "v6" {
		t.Fatalf("ping: got %q, %v, want v6", p, err)
	}
	client, server := dialTest(t, Dialer{}, l)
	// 1400 is granted; the IPv6 header (40 bytes, not 20) leaves a
	// 1352-byte datagram.
	if client.MTU() != DefaultMaxMTU || server.MTU() != DefaultMaxMTU {
		t.Errorf("MTU: got %d and %d, want %d", client.MTU(), server.MTU(), DefaultMaxMTU)
	}
	if got := server.RemoteAddr().(*net.UDPAddr); got.IP.To4() != nil || !got.IP.IsLoopback() {
		t.Errorf("remote address: got %v, want ::1", got)
	}
	msg := bytes.Repeat([]byte{0xfe}, 50<<10)
	if _, err := client.Write(msg); err != nil {
		t.Fatal(err)
	}
	if got, err := server.ReadPacket(); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read: got %d bytes, %v, want %d bytes", len(got), err, len(msg))
	}
	if s := client.Stats(); s.BytesSent > 0 && s.DatagramsSent > 0 {
		// Every datagram fits the IPv6 budget.
		if max := uint64(DefaultMaxMTU - ipv6Overhead); s.BytesSent > s.DatagramsSent*max {
			t.Errorf("average datagram above %d bytes", max)
		}
	}
	client.Close()
	server.Close()
}

func TestUnsupportedVersionGetsIncompatible(t *testing.T) {
	tests := []struct {
		name     string
		versions []byte
		offer    byte
		want     byte // 0: a Reply1 is expected
	}{
		{"9 to the default", nil, 9, 11},
		{"12 to the default", nil, 12, 11},
		{"11 to the default", nil, 11, 0},
		{"10 to the default", nil, 10, 0},
		{"11 to 10 only", []byte{10}, 11, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				l := s.listen(ListenConfig{ProtocolVersions: tc.versions})
				r := s.raw(l.Addr())
				r.send(r.request1(tc.offer, 1400))
				if tc.want == 0 {
					r.expect(wire.IDOpenConnectionReply1, time.Second)
					return
				}
				var m wire.IncompatibleProtocolVersion
				if _, err := m.Decode(r.expect(wire.IDIncompatibleProtocolVersion, time.Second)); err != nil {
					t.Fatal(err)
				}
				if m.Protocol != tc.want || m.ServerGUID != l.ID() {
					t.Errorf("got protocol %d, GUID %d, want %d, %d", m.Protocol, m.ServerGUID, tc.want, l.ID())
				}
			})
		})
	}
}

func TestMTUNegotiation(t *testing.T) {
	tests := []struct {
		name     string
		maxMTU   int
		probe    int // the OCR1 datagram size, headers included
		want1    int // the MTU in Reply1
		request2 int
		want2    int
	}{
		{"default cap", 0, 1492, 1400, 1492, 1400},
		{"below cap", 0, 1200, 1200, 1200, 1200},
		{"request2 below minimum", 0, MinMTU, MinMTU, 400, MinMTU},
		{"configured cap", 1000, 1492, 1000, 1000, 1000},
		{"cap above the largest", 9000, 1492, 1492, 1492, 1492},
		{"cap below the minimum", 100, 1492, MinMTU, 1492, MinMTU},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				l := s.listen(ListenConfig{MaxMTU: tc.maxMTU})
				r := s.raw(l.Addr())
				r.send(r.request1(11, tc.probe))
				var m1 wire.OpenConnectionReply1
				if _, err := m1.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil {
					t.Fatal(err)
				}
				if int(m1.MTU) != tc.want1 {
					t.Errorf("Reply1 MTU: got %d, want %d", m1.MTU, tc.want1)
				}
				r.send(r.request2(tc.request2, -5))
				var m2 wire.OpenConnectionReply2
				if _, err := m2.Decode(r.expect(wire.IDOpenConnectionReply2, time.Second)); err != nil {
					t.Fatal(err)
				}
				if int(m2.MTU) != tc.want2 || m2.ClientAddr != key(r.pc.LocalAddr().(*net.UDPAddr).AddrPort()) {
					t.Errorf("Reply2: got MTU %d, address %v, want %d, %v", m2.MTU, m2.ClientAddr, tc.want2, r.pc.LocalAddr())
				}
			})
		})
	}
}

// A retried OpenConnectionRequest2 gets the same reply as the first, a
// retried ConnectionRequest gets no second ConnectionRequestAccepted (the
// first is resent until acknowledged), and a client GUID of any sign is
// accepted.
func TestRepeatedRequestsGetSameReply(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		for _, guid := range []int64{-42, 0, 42} {
			l := s.listen(ListenConfig{})
			r := s.raw(l.Addr())
			first := r.open(1400, guid)
			r.send(r.request2(1400, guid))
			if again := r.expect(wire.IDOpenConnectionReply2, time.Second); !bytes.Equal(again, first) {
				t.Errorf("GUID %d: second Reply2 %x, want %x", guid, again, first)
			}
			if n := l.Stats().Connections; n != 1 {
				t.Errorf("GUID %d: connections: got %d, want 1", guid, n)
			}
			r.connectionRequest(guid)
			req := wire.ConnectionRequest{ClientGUID: guid, Time: 2}
			r.sendFrames(r.frame(wire.Reliable, req.Append(nil)))
			r.noMessage(wire.IDConnectionRequestAccepted, 300*time.Millisecond)
		}
	})
}

// ConnectionRequestAccepted is reliable: unacknowledged, it comes again.
func TestAcceptedResentUntilAcked(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		r := s.raw(l.Addr())
		r.open(1400, -7)
		req := wire.ConnectionRequest{ClientGUID: -7, Time: 1}
		r.sendFrames(r.frame(wire.Reliable, req.Append(nil)))
		var got [][]byte
		deadline := time.Now().Add(2 * time.Second)
		for len(got) < 2 && time.Now().Before(deadline) {
			if m := r.unackedMessage(wire.IDConnectionRequestAccepted, time.Until(deadline)); m != nil {
				got = append(got, m)
			}
		}
		if len(got) < 2 || !bytes.Equal(got[0], got[1]) {
			t.Fatalf("got %d copies of ConnectionRequestAccepted (%x), want 2 equal ones", len(got), got)
		}
	})
}

// A client on the same address with another GUID does not displace an
// established connection: it gets AlreadyConnected and the connection
// stays. Once the old connection timed out (a client restarted on the same
// port stops answering it), the new client gets in.
func TestRequest2FromNewClientAlreadyConnected(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{Timeout: 300 * time.Millisecond, CloseTimeout: 50 * time.Millisecond})
		r := s.raw(l.Addr())
		r.open(1400, -1)
		r.connectionRequest(-1)
		nic := wire.NewIncomingConnection{ServerAddr: r.server}
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
		lastHeard := time.Now() // the network delivers at once
		old := acceptTest(t, l)
		r.send(r.request2(1400, -2))
		r.expect(wire.IDAlreadyConnected, time.Second)
		select {
		case <-old.Done():
			t.Fatal("established connection closed by another client's request")
		default:
		}
		// The old client is gone; its connection times out, the timeout
		// after it last heard from it (the request of another GUID is not
		// its client speaking).
		<-old.Done()
		if d := time.Since(lastHeard); !simWithin(d, 300*time.Millisecond, timerSlack) {
			t.Errorf("old connection timed out %v after its client went quiet, want the 300ms timeout", d)
		}
		r.seq, r.rel, r.ord = 0, 0, 0
		r.send(r.request2(1400, -2))
		r.expect(wire.IDOpenConnectionReply2, time.Second)
		r.connectionRequest(-2)
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
		if c := acceptTest(t, l); c.GUID() != -2 {
			t.Errorf("new connection GUID: got %d, want -2", c.GUID())
		}
	})
}

// A client on the same address with another GUID replaces a connection
// still in its handshake: a client restarted at once.
func TestRequest2FromNewClientReplacesHandshake(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		r := s.raw(l.Addr())
		r.open(1400, -1)
		r.send(r.request2(1400, -2))
		r.expect(wire.IDOpenConnectionReply2, time.Second)
		r.connectionRequest(-2)
		nic := wire.NewIncomingConnection{ServerAddr: r.server}
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
		if c := acceptTest(t, l); c.GUID() != -2 {
			t.Errorf("connection GUID: got %d, want -2", c.GUID())
		}
		if st := l.Stats(); st.Connections != 1 || st.Handshaking != 0 {
			t.Errorf("got %d connections, %d handshaking, want 1, 0", st.Connections, st.Handshaking)
		}
	})
}

// The vanilla client sends NewIncomingConnection, a ConnectedPing and its
// first game packet in one datagram, here larger than the negotiated MTU.
func TestNICPingAndPayloadInOneDatagram(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		// The raw client acknowledges nothing on its own: keep Close short.
		l := s.listen(ListenConfig{CloseTimeout: 50 * time.Millisecond})
		r := s.raw(l.Addr())
		r.open(MinMTU, -7)
		r.connectionRequest(-7)
		nic := wire.NewIncomingConnection{ServerAddr: netip.MustParseAddrPort("10.9.8.7:1234"), PingTime: 1, PongTime: 2}
		nic.SystemAddrs.N = 20
		ping := wire.ConnectedPing{Time: 12345}
		payload := append([]byte{0xfe}, bytes.Repeat([]byte{0xab}, 900)...)
		size := r.sendFrames(
			r.frame(wire.ReliableOrdered, nic.Append(nil)),
			r.frame(wire.Unreliable, ping.Append(nil)),
			r.frame(wire.ReliableOrdered, payload),
		)
		if size <= MinMTU {
			t.Fatalf("datagram of %d bytes, want more than the MTU %d", size, MinMTU)
		}
		c := acceptTest(t, l)
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		got, err := c.ReadPacket()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("read: got %d bytes, %v, want the %d-byte payload", len(got), err, len(payload))
		}
		var pong wire.ConnectedPong
		if _, err := pong.Decode(r.message(wire.IDConnectedPong, time.Second)); err != nil || pong.PingTime != 12345 {
			t.Fatalf("pong: got %+v, %v, want ping time 12345", pong, err)
		}
		if c.MTU() != MinMTU {
			t.Errorf("MTU: got %d, want %d", c.MTU(), MinMTU)
		}
	})
}

func TestFullServer(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{MaxConnections: 1})
		s.dial(Dialer{}, l)

		// 0x01 is still answered, 0x02 is not.
		r := s.raw(l.Addr())
		open := wire.UnconnectedPing{OpenConnections: true, Time: 1, ClientGUID: -1}
		r.send(open.Append(nil))
		r.silent(wire.IDUnconnectedPong, 200*time.Millisecond)
		ping := wire.UnconnectedPing{Time: 2, ClientGUID: -1}
		r.send(ping.Append(nil))
		r.expect(wire.IDUnconnectedPong, time.Second)

		// A raw request gets 0x14, and so does our Dialer.
		r.send(r.request1(11, 1400))
		r.expect(wire.IDOpenConnectionReply1, time.Second)
		r.send(r.request2(1400, -3))
		r.expect(wire.IDNoFreeIncomingConnections, time.Second)

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.dialer(Dialer{}).DialContext(ctx, l.Addr().String())
		if !errors.Is(err, ErrConnectionRefused) {
			t.Fatalf("dial a full server: got %v, want ErrConnectionRefused", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "dial" {
			t.Errorf("dial error: got %T %v, want *net.OpError with Op dial", err, err)
		}
		if s := l.Stats(); s.Refused < 2 {
			t.Errorf("refused: got %d, want at least 2", s.Refused)
		}
	})
}

// A client that never finishes the handshake leaves nothing behind.
func TestAbandonedHandshakeIsForgotten(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{HandshakeTimeout: 200 * time.Millisecond})
		r := s.raw(l.Addr())
		r.open(1400, -1)
		if st := l.Stats(); st.Connections != 1 || st.Handshaking != 1 {
			t.Fatalf("after Reply2: got %d connections, %d handshaking, want 1, 1", st.Connections, st.Handshaking)
		}
		r2 := s.raw(l.Addr())
		r2.open(1400, -2)
		r2.connectionRequest(-2) // stops before NewIncomingConnection
		if !waitFor(2*time.Second, func() bool { return l.Stats().Connections == 0 }) {
			t.Fatalf("connections: got %d 2 s after the handshakes stopped, want 0", l.Stats().Connections)
		}
		if n := l.Stats().Handshaking; n != 0 {
			t.Errorf("handshaking: got %d, want 0", n)
		}
	})
}

// Malformed datagrams are dropped and counted, and the address they came
// from still connects afterwards and is not disturbed once connected.
func TestMalformedDatagramsAreCounted(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		pc, err := s.n.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		garbage := [][]byte{
			{0x42, 1, 2, 3},                           // unknown offline id
			{wire.IDUnconnectedPing, 1, 2},            // truncated ping
			{wire.IDOpenConnectionRequest1, 0, 1},     // truncated OCR1, bad magic
			{wire.IDOpenConnectionRequest2},           // truncated OCR2
			{0x84, 0, 0, 0, 0x60, 0, 8},               // data for no connection
			append([]byte{0x05}, make([]byte, 40)...), // OCR1 with a zero magic
		}
		for _, b := range garbage {
			if _, err := pc.WriteTo(b, l.Addr()); err != nil {
				t.Fatal(err)
			}
		}
		if !waitFor(time.Second, func() bool { return l.Stats().Dropped >= uint64(len(garbage)) }) {
			t.Fatalf("dropped: got %d, want %d", l.Stats().Dropped, len(garbage))
		}
		before := l.Stats().Dropped
		d := Dialer{ListenPacket: func(string, string) (net.PacketConn, error) { return pc, nil }}
		client, server := s.dial(d, l)

		// Garbage inside the connection: a frame with a length past the end.
		bad := []byte{0x84, 0xff, 0xff, 0x7f, 0x60, 0xff, 0xff, 0, 0, 0}
		if _, err := pc.WriteTo(bad, l.Addr()); err != nil {
			t.Fatal(err)
		}
		if !waitFor(time.Second, func() bool { return l.Stats().Dropped > before }) {
			t.Fatalf("dropped after a bad connected datagram: got %d, want more than %d", l.Stats().Dropped, before)
		}
		if server.Stats().Dropped == 0 {
			t.Errorf("connection dropped: got 0, want 1")
		}
		if _, err := client.Write([]byte{0xfe, 1}); err != nil {
			t.Fatal(err)
		}
		_ = server.SetReadDeadline(time.Now().Add(2 * time.Second))
		if got, err := server.ReadPacket(); err != nil || !bytes.Equal(got, []byte{0xfe, 1}) {
			t.Fatalf("read after garbage: got %x, %v", got, err)
		}
	})
}

// PongData may be swapped while pings are answered: every pong carries one
// of the values whole.
func TestPongDataSwapIsAtomic(t *testing.T) {
	l := listenTest(t, ListenConfig{OfflineRate: -1})
	a := bytes.Repeat([]byte{'a'}, 100)
	b := bytes.Repeat([]byte{'b'}, 1000)
	l.PongData(a)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				l.PongData(b)
			} else {
				l.PongData(a)
			}
		}
	}()
	errs := make(chan error, 4)
	var pingers sync.WaitGroup
	for w := range 4 {
		pingers.Add(1)
		go func() {
			defer pingers.Done()
			r := newRawClient(t, l.Addr())
			for i := range 50 {
				ping := wire.UnconnectedPing{Time: int64(i), ClientGUID: int64(w)}
				r.send(ping.Append(nil))
				got := r.read(time.Second)
				var pong wire.UnconnectedPong
				if got == nil {
					errs <- errors.New("no pong within 1 s")
					return
				}
				if _, err := pong.Decode(got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(pong.Data, a) && !bytes.Equal(pong.Data, b) {
					errs <- errors.New("pong data is neither value: " + string(pong.Data[:min(20, len(pong.Data))]))
					return
				}
			}
		}()
	}
	// Stop the swapper once the pingers are done.
	pingers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := l.Stats(); s.Pings != 200 && !t.Failed() {
		t.Errorf("pings: got %d, want 200", s.Pings)
	}
}

func TestListenerCloseClosesConnections(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		d := s.dialer(Dialer{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		client, err := d.DialContext(ctx, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		server, err := l.AcceptConn()
		if err != nil {
			t.Fatal(err)
		}
		// A second connection waits, never accepted.
		client2, err := d.DialContext(ctx, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client2.Close()
		// Both are past their handshake on this side too (the dialer returns
		// once it sent NewIncomingConnection, which may still be on its way).
		if !waitFor(5*time.Second, func() bool { return l.Stats().Handshaking == 0 }) {
			t.Fatalf("still handshaking: %+v", l.Stats())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if n := l.Stats().Connections; n != 0 {
			t.Errorf("connections after Close: got %d, want 0", n)
		}
		if _, err := server.ReadPacket(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("server read after listener close: got %v, want net.ErrClosed", err)
		}
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) || !errors.Is(err, ErrListenerClosed) {
			t.Errorf("accept after close: got %v, want ErrListenerClosed", err)
		}
		// The clients were told.
		for i, c := range []*Conn{client, client2} {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.ReadPacket(); !errors.Is(err, ErrPeerClosed) {
				t.Errorf("client %d read after listener close: got %v, want ErrPeerClosed (stats %+v)", i, err, l.Stats())
			}
		}
	})
}

// An address without a host binds both families where the system allows;
// IPv4 peers are still seen and answered as IPv4.
func TestListenDualStack(t *testing.T) {
	l, err := Listen(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.UDPAddr).Port
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	client, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := acceptTest(t, l)
	if ra := server.RemoteAddr().(*net.UDPAddr); len(ra.IP) != net.IPv4len {
		t.Errorf("remote address: got %v (%d bytes), want an IPv4 address", ra, len(ra.IP))
	}
	if _, err := server.Write([]byte{0xfe, 4}); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := client.ReadPacket(); err != nil {
		t.Fatal(err)
	}
}

// The injected logger hears about the lifecycle; no logger means silence.
func TestListenerLogs(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		var buf bytes.Buffer
		log := zerolog.New(&syncWriter{w: &buf}).Level(zerolog.DebugLevel)
		l := s.listen(ListenConfig{Log: &log})
		s.dial(Dialer{Log: &log}, l)
		_ = l.Close()
		out := buf.String()
		for _, want := range []string{`"message":"listening"`, `"message":"connection established"`, `"message":"listener closed"`, `"raddr"`} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %s:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "\n"); n > 10 {
			t.Errorf("log: got %d lines for one connection, want a few:\n%s", n, out)
		}
	})
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// The connection exists before Reply2 leaves, so the client's first
// connected datagram always finds it.
func TestConnectionExistsBeforeReply2(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		var l *Listener
		var ready sync.WaitGroup
		ready.Add(1)
		seen := make(chan int, 4)
		f := &filterConn{dropWrite: func(b []byte) bool {
			if b[0] == wire.IDOpenConnectionReply2 {
				ready.Wait()
				seen <- l.Stats().Connections
			}
			return false
		}}
		l = s.listen(ListenConfig{ListenPacket: s.filter(f)})
		ready.Done()
		s.dial(Dialer{}, l)
		if n := <-seen; n != 1 {
			t.Errorf("connections when Reply2 was written: got %d, want 1", n)
		}
	})
}

// Over IPv6 the 40-byte header is counted: a path that drops datagrams
// above 1200 bytes of IP packet gives MTU 1200, not one 20 bytes larger.
func TestIPv6MTUCountsHeader(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listenAt(ListenConfig{}, "[::1]:0")
		big := func(b []byte) bool { return len(b) > 1200-ipv6Overhead }
		f := &filterConn{dropWrite: big, dropRead: big}
		client, server := s.dial(Dialer{ListenPacket: s.filter(f), limits: limits{dialRetry: 50 * time.Millisecond}}, l)
		if client.MTU() != 1200 || server.MTU() != 1200 {
			t.Fatalf("MTU: got client %d, server %d, want 1200", client.MTU(), server.MTU())
		}
		msg := bytes.Repeat([]byte{0xfe}, 30<<10)
		if _, err := server.Write(msg); err != nil {
			t.Fatal(err)
		}
		_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
		if got, err := client.ReadPacket(); err != nil || len(got) != len(msg) {
			t.Fatalf("read: got %d bytes, %v, want %d", len(got), err, len(msg))
		}
	})
}

// The last datagram of a connection, which nothing resends, is written
// finalCopies times: here the DisconnectionNotification of a listener
// that closes.
func TestFinalCopies(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		f := &filterConn{}
		l := s.listen(ListenConfig{ListenPacket: s.filter(f)})
		client, _ := s.dial(Dialer{}, l)
		before := len(f.written())
		_ = l.Close()
		after := f.written()[before:]
		var goodbye [][]byte
		for _, b := range after {
			if b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
				continue
			}
			var h wire.DatagramHeader
			n, err := h.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			var fr wire.Frame
			if _, err := fr.Decode(b[n:]); err == nil && len(fr.Payload) > 0 && fr.Payload[0] == wire.IDDisconnectionNotification {
				goodbye = append(goodbye, b)
			}
		}
		if len(goodbye) != finalCopies {
			t.Fatalf("got %d datagrams carrying DisconnectionNotification, want %d", len(goodbye), finalCopies)
		}
		for _, b := range goodbye[1:] {
			if !bytes.Equal(b, goodbye[0]) {
				t.Errorf("copies differ: % x and % x", b, goodbye[0])
			}
		}
		_ = client.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := client.ReadPacket(); !errors.Is(err, ErrPeerClosed) {
			t.Errorf("client: got %v, want ErrPeerClosed", err)
		}
	})
}

// NewIncomingConnection without a ConnectionRequest before it establishes
// nothing: the datagram is acknowledged and no connection is accepted.
func TestNICWithoutRequestIgnored(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{CloseTimeout: 50 * time.Millisecond})
		r := s.raw(l.Addr())
		r.open(1400, -3)
		nic := wire.NewIncomingConnection{ServerAddr: r.server}
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)), r.frame(wire.ReliableOrdered, []byte{0xfe, 1}))
		r.expect(0xc0, time.Second)
		if st := l.Stats(); st.Accepted != 0 {
			t.Errorf("accepted: got %d, want 0", st.Accepted)
		}
		// The proper order still works afterwards.
		r.connectionRequest(-3)
		r.sendFrames(r.frame(wire.ReliableOrdered, nic.Append(nil)))
		c := acceptTest(t, l)
		if c.GUID() != -3 {
			t.Errorf("GUID: got %d, want -3", c.GUID())
		}
	})
}
