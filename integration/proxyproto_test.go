package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	proxyproto "github.com/pires/go-proxyproto"
	goraknet "github.com/sandertv/go-raknet"
)

// The PROXY protocol tests put a forwarder in front of our listener, as a
// tunnel (playit.gg, frp) or a filter is: clients send to the
// forwarder, which gives each its own upstream socket and prepends a
// PROXY header (v2, or v1 as nginx writes it), by go-proxyproto, naming the client. All of it
// is UDP on the loopback. The listener trusts the forwarder's upstream
// address only.

// Loopback addresses by role (any 127.x.y.z is local on Linux).
var (
	// proxyIP is the trusted forwarder's upstream address.
	proxyIP = netip.MustParseAddr("127.0.0.2")
	// rogueIP is a forwarder the listener does not trust.
	rogueIP = netip.MustParseAddr("127.0.0.3")
	// directIP is a client that reaches the listener without a proxy.
	directIP = netip.MustParseAddr("127.0.0.4")
)

// headerStyle is when a forwarder puts a header on a flow's datagrams.
type headerStyle uint8

const (
	// everyDatagram: a header on each datagram, as most tunnels do.
	everyDatagram headerStyle = iota
	// firstDatagram: a header on a flow's first datagram only, as frp
	// does.
	firstDatagram
	// everyDatagramV1 and firstDatagramV1 are the same with PROXY v1
	// text headers, as nginx writes them (on the first datagram).
	everyDatagramV1
	firstDatagramV1
)

func (s headerStyle) String() string {
	return [...]string{"every datagram", "first datagram", "every datagram, v1", "first datagram, v1"}[s]
}

// header returns the PROXY header a forwarder in style s puts in front
// of a datagram from client to server.
func (s headerStyle) header(client, server netip.AddrPort) ([]byte, error) {
	if s == everyDatagramV1 || s == firstDatagramV1 {
		return proxyproto.HeaderProxyFromAddrs(1, net.TCPAddrFromAddrPort(client), net.TCPAddrFromAddrPort(server)).Format()
	}
	h := &proxyproto.Header{
		Version: 2, Command: proxyproto.PROXY, TransportProtocol: proxyproto.UDPv4,
		SourceAddr:      net.UDPAddrFromAddrPort(client),
		DestinationAddr: net.UDPAddrFromAddrPort(server),
	}
	return h.Format()
}

// forwarder relays datagrams between clients and a server, each client
// through an upstream socket of its own, with a PROXY v2 header on the
// way up. It stops, with every goroutine it started, on close.
type forwarder struct {
	t      *testing.T
	front  *net.UDPConn
	server netip.AddrPort
	upIP   netip.Addr
	style  headerStyle
	// claim returns the client address a header names for a client at
	// real; nil names the real one.
	claim func(real netip.AddrPort) netip.AddrPort

	mu    sync.Mutex
	flows map[netip.AddrPort]*forwardFlow
	wg    sync.WaitGroup
}

// forwardFlow is one client's path through a forwarder.
type forwardFlow struct {
	client, claimed netip.AddrPort
	up              *net.UDPConn
	headed          bool // a header has gone up (used by its front reader only)
}

// startForwarder listens on a loopback port for clients of server,
// forwarding from upstream sockets on upIP, and stops when the test ends.
func startForwarder(t *testing.T, server net.Addr, upIP netip.Addr, style headerStyle, claim func(netip.AddrPort) netip.AddrPort) *forwarder {
	t.Helper()
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{
		t: t, front: front, server: server.(*net.UDPAddr).AddrPort(), upIP: upIP, style: style, claim: claim,
		flows: make(map[netip.AddrPort]*forwardFlow),
	}
	f.wg.Go(f.readFront)
	t.Cleanup(f.close)
	return f
}

// addr returns the address clients send to.
func (f *forwarder) addr() string { return f.front.LocalAddr().String() }

// close stops the forwarder and waits for its goroutines.
func (f *forwarder) close() {
	_ = f.front.Close()
	f.mu.Lock()
	for _, fl := range f.flows {
		_ = fl.up.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// readFront relays what clients send, opening a flow for each new one.
func (f *forwarder) readFront() {
	buf := make([]byte, 64<<10)
	for {
		n, client, err := f.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		fl, err := f.flow(client)
		if err != nil {
			f.t.Errorf("forwarder: %v", err)
			return
		}
		b := buf[:n]
		if f.style == everyDatagram || f.style == everyDatagramV1 || !fl.headed {
			h, err := f.style.header(fl.claimed, f.server)
			if err != nil {
				f.t.Errorf("forwarder: format header: %v", err)
				return
			}
			b = append(h, b...)
			fl.headed = true
		}
		_, _ = fl.up.WriteToUDPAddrPort(b, f.server)
	}
}

// flow returns client's flow, opening its upstream socket and the
// goroutine relaying replies the first time.
func (f *forwarder) flow(client netip.AddrPort) (*forwardFlow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.flows[client]; fl != nil {
		return fl, nil
	}
	up, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(f.upIP, 0)))
	if err != nil {
		return nil, err
	}
	fl := &forwardFlow{client: client, claimed: client, up: up}
	if f.claim != nil {
		fl.claimed = f.claim(client)
	}
	f.flows[client] = fl
	f.wg.Go(func() {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := up.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = f.front.WriteToUDPAddrPort(buf[:n], client)
		}
	})
	return fl, nil
}

// proxyListen starts a listener that trusts proxyIP.
func proxyListen(t *testing.T, lc raknet.ListenConfig) *raknet.Listener {
	t.Helper()
	lc.ProxyProtocol = true
	lc.TrustedProxies = []netip.Prefix{netip.PrefixFrom(proxyIP, 32)}
	return listen(t, lc, "127.0.0.1:0")
}

// dialFrom is a Dialer whose socket is bound to ip.
func dialFrom(ip netip.Addr) raknet.Dialer {
	return raknet.Dialer{
		ListenPacket: func(string, string) (net.PacketConn, error) {
			return net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		},
	}
}

// echoOnce reads one message on c and writes it back.
func echoOnce(c *raknet.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := c.ReadPacket()
	if err != nil {
		return err
	}
	_, err = c.Write(b)
	return err
}

// roundTrip writes msg on c and checks that the same comes back.
func roundTrip(c net.Conn, msg []byte) error {
	if _, err := c.Write(msg); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(msg)+1)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.Equal(buf[:n], msg) {
		return fmt.Errorf("got %d bytes back, want the %d sent", n, len(msg))
	}
	return nil
}

// Many clients behind one trusted proxy address are each their own peer,
// known by the address their header names: RemoteAddr and the per-IP cap
// see that address, not the proxy's, with either header style and
// version. A direct
// client, not behind the proxy, still connects.
func TestProxyProtocolClients(t *testing.T) {
	for _, style := range []headerStyle{everyDatagram, firstDatagram, everyDatagramV1, firstDatagramV1} {
		t.Run(style.String(), func(t *testing.T) {
			checkGoroutines(t)
			l := proxyListen(t, raknet.ListenConfig{MaxConnectionsPerIP: 2})
			// Client i's header names 127.0.20.(1+i/2), two clients an IP.
			var mu sync.Mutex
			next := 0
			claimed := map[netip.AddrPort]bool{}
			f := startForwarder(t, l.Addr(), proxyIP, style, func(real netip.AddrPort) netip.AddrPort {
				mu.Lock()
				defer mu.Unlock()
				a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 20, byte(1 + next/2)}), real.Port())
				claimed[a] = true
				next++
				return a
			})
			const clients = 6
			d := raknet.Dialer{MaxMTU: 1400}
			for range clients {
				c := dial(t, d, f.addr(), 5*time.Second)
				s := acceptOne(t, l, 5*time.Second)
				ra := s.RemoteAddr().(*net.UDPAddr).AddrPort()
				mu.Lock()
				ok := claimed[ra]
				mu.Unlock()
				if !ok {
					t.Fatalf("accepted %v, want an address a header named", ra)
				}
				msg := []byte("hello from " + ra.String())
				errc := make(chan error, 1)
				go func() { errc <- echoOnce(s) }()
				if err := roundTrip(c, msg); err != nil {
					t.Fatalf("echo through the proxy: %v", err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("server echo: %v", err)
				}
			}
			// A third client named 127.0.20.1 is one too many for that
			// IP, although the proxy's address has six already.
			mu.Lock()
			next = 0
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if c, err := d.DialContext(ctx, f.addr()); err == nil {
				_ = c.Close()
				// The handshake may complete before the cap refuses it.
				if waitConnections(l, clients, 2*time.Second) != clients {
					t.Errorf("third connection of 127.0.20.1 kept")
				}
			}
			if st := l.Stats(); st.PerIPLimited == 0 || st.ProxyNoFlow != 0 || st.ProxyUntrusted != 0 {
				t.Errorf("got %+v, want a per-IP refusal and no PROXY refusal", st)
			}
			// A client that is not behind the proxy connects as itself.
			c := dial(t, dialFrom(directIP), l.Addr().String(), 5*time.Second)
			s := acceptOne(t, l, 5*time.Second)
			if got, want := s.RemoteAddr().(*net.UDPAddr).AddrPort().Addr(), directIP; got != want {
				t.Errorf("direct client: got %v, want %v", got, want)
			}
			go func() { _ = echoOnce(s) }()
			if err := roundTrip(c, []byte("direct")); err != nil {
				t.Errorf("direct echo: %v", err)
			}
		})
	}
}

// A proxy the listener does not trust gets nothing through: its headers
// are refused unread and counted.
func TestProxyProtocolUntrustedProxy(t *testing.T) {
	checkGoroutines(t)
	l := proxyListen(t, raknet.ListenConfig{})
	f := startForwarder(t, l.Addr(), rogueIP, everyDatagram, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := (raknet.Dialer{MaxMTU: 1400}).DialContext(ctx, f.addr()); err == nil {
		_ = c.Close()
		t.Fatal("dial through an untrusted proxy: connected")
	}
	st := l.Stats()
	if st.ProxyUntrusted == 0 || st.Handshakes != 0 || st.Pings != 0 {
		t.Errorf("got %+v, want PROXY headers refused and nothing answered", st)
	}
	// go-raknet's ping through it gets no pong either.
	if _, err := goraknet.PingTimeout(f.addr(), 300*time.Millisecond); err == nil {
		t.Error("go-raknet ping through an untrusted proxy: answered")
	}
}

// go-raknet's dialer, the oracle, completes its handshake through the
// proxy and exchanges messages, split ones included, with either header
// style and version; its first MTU probe (1492 bytes) with a header in
// front is read.
func TestProxyProtocolGoRakNet(t *testing.T) {
	for _, style := range []headerStyle{everyDatagram, firstDatagram, everyDatagramV1, firstDatagramV1} {
		t.Run(style.String(), func(t *testing.T) {
			checkGoroutines(t)
			l := proxyListen(t, raknet.ListenConfig{})
			f := startForwarder(t, l.Addr(), proxyIP, style, nil)
			pong, err := goraknet.PingTimeout(f.addr(), 3*time.Second)
			if err != nil || !bytes.Equal(pong, testPong) {
				t.Fatalf("go-raknet ping through the proxy: got %q %v, want %q", pong, err, testPong)
			}
			theirs := goDial(t, f.addr())
			ours := acceptOne(t, l, 5*time.Second)
			// The header named the go-raknet socket's own address.
			if got, want := ours.RemoteAddr().String(), theirs.LocalAddr().String(); got != want {
				t.Errorf("RemoteAddr: got %s, want the client's %s", got, want)
			}
			for _, size := range []int{1, 1 << 10, 64 << 10} {
				msg := message(uint32(size), size)
				errc := make(chan error, 1)
				go func() { errc <- echoOnce(ours) }()
				if err := roundTrip(theirs, msg); err != nil {
					t.Fatalf("%d bytes: %v", size, err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("%d bytes: server: %v", size, err)
				}
			}
			st := l.Stats()
			if st.ProxyNoFlow != 0 || st.ProxyUntrusted != 0 {
				t.Errorf("got %+v, want no PROXY refusal", st)
			}
			t.Logf("MTU %d; listener stats %+v", ours.MTU(), st)
		})
	}
}
