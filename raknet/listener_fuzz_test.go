package raknet

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// sinkConn is a PacketConn that drops what is written and blocks reads
// until it is closed: the listener under FuzzListener is fed by calling
// its handler directly.
type sinkConn struct {
	once   sync.Once
	closed chan struct{}
}

func newSinkConn() *sinkConn { return &sinkConn{closed: make(chan struct{})} }

// sinkListen is a ListenConfig.ListenPacket for tests that drive
// Listener.handle themselves: a new sinkConn, no socket.
func sinkListen(string, string) (net.PacketConn, error) { return newSinkConn(), nil }

func (s *sinkConn) ReadFrom([]byte) (int, net.Addr, error) {
	<-s.closed
	return 0, nil, net.ErrClosed
}
func (s *sinkConn) WriteTo(b []byte, _ net.Addr) (int, error) { return len(b), nil }
func (s *sinkConn) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
func (s *sinkConn) LocalAddr() net.Addr              { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19132} }
func (s *sinkConn) SetDeadline(time.Time) error      { return nil }
func (s *sinkConn) SetReadDeadline(time.Time) error  { return nil }
func (s *sinkConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzSources are the addresses FuzzListener's datagrams come from: two
// share an IP, one is IPv6.
var fuzzSources = []netip.AddrPort{
	netip.MustParseAddrPort("127.0.0.2:1000"),
	netip.MustParseAddrPort("127.0.0.2:1001"),
	netip.MustParseAddrPort("127.0.1.3:1000"),
	netip.MustParseAddrPort("127.3.0.4:1000"),
	netip.MustParseAddrPort("[::1]:1000"),
}

// fuzzDatagrams splits the fuzzer's input into datagrams: a byte picking
// the source, a byte of length, then that many bytes.
func fuzzDatagrams(data []byte, each func(src netip.AddrPort, b []byte)) {
	for len(data) >= 2 {
		src := fuzzSources[int(data[0])%len(fuzzSources)]
		n := min(int(data[1]), len(data)-2)
		b := data[2 : 2+n]
		data = data[2+n:]
		if len(b) > 0 {
			each(src, b)
		}
	}
}

// fuzzInput builds an input from datagrams from source 0.
func fuzzInput(datagrams ...[]byte) []byte {
	var in []byte
	for _, d := range datagrams {
		for len(d) > 0 {
			n := min(len(d), 255)
			in = append(in, 0, byte(n))
			in = append(in, d[:n]...)
			d = d[n:]
		}
	}
	return in
}

// FuzzListener feeds arbitrary datagrams from a handful of addresses into
// a listener and checks that no invariant breaks: no panic, the pools and
// caps hold, and every count adds up.
func FuzzListener(f *testing.F) {
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	req1 := wire.OpenConnectionRequest1{Protocol: 10, Size: 600}
	req2 := wire.OpenConnectionRequest2{ServerAddr: fuzzServer, MTU: 600, ClientGUID: -1}
	ack := wire.Ack{Ranges: []wire.AckRange{{Start: 0, End: 100}}}
	f.Add(fuzzInput(ping.Append(nil)))
	f.Add(fuzzInput(req1.Append(nil), req2.Append(nil)))
	f.Add(fuzzInput(append(fuzzHandshake(), ack.Append(nil), []byte{wire.FlagValid | wire.FlagNACK, 0, 1, 1, 0, 0, 0})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		pc := newSinkConn()
		l, err := ListenConfig{
			ListenPacket:        func(string, string) (net.PacketConn, error) { return pc, nil },
			MaxConnections:      2,
			MaxHandshakes:       3,
			MaxConnectionsPerIP: 1,
			AcceptQueue:         1,
			CloseTimeout:        time.Millisecond,
		}.Listen("127.0.0.1:19132")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		now := time.Now()
		fuzzDatagrams(data, func(src netip.AddrPort, b []byte) {
			l.handle(b, src, now)
			now = now.Add(time.Millisecond)
			st := l.Stats()
			if st.Handshaking > 3+maxUnproven || st.Handshaking < 0 {
				t.Fatalf("handshaking %d, want 0 to %d", st.Handshaking, 3+maxUnproven)
			}
			if n := l.nEstablished.Load(); n < 0 || n > 2+1 {
				t.Fatalf("established %d, want 0 to the cap", n)
			}
			if st.Connections > 3+maxUnproven+2 {
				t.Fatalf("connections %d over every pool", st.Connections)
			}
			l.mu.Lock()
			for ip, n := range l.perIP {
				if n < 1 || n > 2 {
					t.Fatalf("IP %v holds %d connections", ip, n)
				}
			}
			l.mu.Unlock()
		})
		_ = l.Close()
		if st := l.Stats(); st.Connections != 0 || st.Handshaking != 0 || l.nEstablished.Load() != 0 {
			t.Fatalf("after Close: %+v, established %d, want nothing left", st, l.nEstablished.Load())
		}
	})
}

// fuzzServer is the address FuzzListener's listener claims.
var fuzzServer = netip.MustParseAddrPort("127.0.0.1:19132")

// fuzzHandshake returns the datagrams of a handshake without a cookie and
// a first game message.
func fuzzHandshake() [][]byte {
	frame := func(rel wire.Reliability, n, order uint32, p []byte) []byte {
		h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(n)}
		fr := wire.Frame{Reliability: rel, Payload: p, ReliableIndex: wire.Uint24(n), OrderIndex: wire.Uint24(order)}
		return fr.Append(h.Append(nil))
	}
	req2 := wire.OpenConnectionRequest2{ServerAddr: fuzzServer, MTU: 600, ClientGUID: -1}
	cr := wire.ConnectionRequest{ClientGUID: -1, Time: 1}
	nic := wire.NewIncomingConnection{ServerAddr: fuzzServer}
	return [][]byte{req2.Append(nil), frame(wire.Reliable, 0, 0, cr.Append(nil)),
		frame(wire.ReliableOrdered, 1, 0, nic.Append(nil)), frame(wire.ReliableOrdered, 2, 1, []byte{0xfe, 1, 2, 3})}
}

// The handshake FuzzListener is seeded with establishes a connection, so
// the fuzzer starts from inputs that reach every pool.
func TestFuzzListenerSeedConnects(t *testing.T) {
	pc := newSinkConn()
	l, err := ListenConfig{ListenPacket: func(string, string) (net.PacketConn, error) { return pc, nil }, CloseTimeout: time.Millisecond}.Listen("127.0.0.1:19132")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fuzzDatagrams(fuzzInput(fuzzHandshake()...), func(src netip.AddrPort, b []byte) {
		l.handle(b, src, time.Now())
	})
	if st := l.Stats(); st.Accepted != 1 {
		t.Errorf("accepted: got %d, want 1 (%+v)", st.Accepted, st)
	}
	c, err := l.AcceptConn()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := c.ReadPacket(); err != nil || len(p) != 4 || p[0] != 0xfe {
		t.Errorf("first message: got % x, %v", p, err)
	}
}
