package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/basaltmc/basalt/raknet"
	goraknet "github.com/sandertv/go-raknet"
)

// impl names a RakNet implementation.
type impl string

const (
	implBasalt   impl = "basalt"
	implGoRakNet impl = "goraknet"
)

func parseImpl(s string) (impl, error) {
	switch impl(s) {
	case implBasalt, implGoRakNet:
		return impl(s), nil
	}
	return "", fmt.Errorf("unknown -impl %q: want basalt or goraknet", s)
}

// pongData is what every bench server answers unconnected pings with.
var pongData = []byte("MCPE;basalt bench;924;1.21.90;0;5000;0;bench;Survival;1;19132;19133;")

// packetConn is what the bench needs of a connection from either
// implementation.
type packetConn interface {
	ReadPacket() ([]byte, error)
	Write(b []byte) (int, error)
	Close() error
	RemoteAddr() net.Addr
}

// connDone returns a channel closed once c is closed for good.
func connDone(c packetConn) <-chan struct{} {
	switch c := c.(type) {
	case *raknet.Conn:
		return c.Done()
	case *goraknet.Conn:
		return c.Context().Done()
	}
	panic(fmt.Sprintf("bench: unknown connection type %T", c))
}

// packetListener is what the bench needs of a listener.
type packetListener interface {
	accept() (packetConn, error)
	Addr() net.Addr
	Close() error
}

type basaltListener struct{ *raknet.Listener }

func (l basaltListener) accept() (packetConn, error) { return l.AcceptConn() }

type goListener struct{ *goraknet.Listener }

func (l goListener) accept() (packetConn, error) {
	c, err := l.Accept()
	if err != nil {
		return nil, err
	}
	return c.(*goraknet.Conn), nil
}

// countingConn counts the datagrams a go-raknet listener reads and writes.
// go-raknet uses its socket only through net.PacketConn, so the wrapper
// changes nothing else about it.
type countingConn struct {
	net.PacketConn
	in, out atomic.Uint64
}

func (c *countingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.in.Add(1)
	}
	return n, addr, err
}

func (c *countingConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, addr)
	if err == nil {
		c.out.Add(1)
	}
	return n, err
}

// countingListener is a go-raknet UpstreamPacketListener that wraps the
// socket in a countingConn.
type countingListener struct{ c *countingConn }

func (l *countingListener) ListenPacket(network, address string) (net.PacketConn, error) {
	pc, err := net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	l.c = &countingConn{PacketConn: pc}
	return l.c, nil
}

// listen opens a listener of implementation im on addr with the bench pong
// data. For go-raknet it also returns the counter of its socket's
// datagrams.
func listen(im impl, addr string) (packetListener, *countingConn, error) {
	switch im {
	case implBasalt:
		// Every bench client comes from 127.0.0.1, and the phases measure
		// the cost of answering, not the defences: the per-source limits
		// are off, as go-raknet has none. The refusal paths have their own
		// benchmarks in raknet.
		l, err := raknet.ListenConfig{OfflineRate: -1, OfflineBytes: -1, HandshakesPerIP: -1, MaxConnectionsPerIP: -1,
			Sockets: basaltSockets}.Listen(addr)
		if err != nil {
			return nil, nil, err
		}
		l.PongData(pongData)
		return basaltListener{l}, nil, nil
	case implGoRakNet:
		// Every bench client comes from 127.0.0.1: go-raknet's default of
		// blocking an IP for 10 s after one bad datagram would turn one
		// failure into a failure of every later phase.
		up := &countingListener{}
		l, err := goraknet.ListenConfig{BlockDuration: -1, UpstreamPacketListener: up}.Listen(addr)
		if err != nil {
			return nil, nil, err
		}
		l.PongData(pongData)
		return goListener{l}, up.c, nil
	}
	return nil, nil, fmt.Errorf("listen: unknown implementation %q", im)
}

// dial connects to addr with implementation im's dialer. ctx bounds the
// handshake.
func dial(ctx context.Context, im impl, addr string) (packetConn, error) {
	return dialFrom(ctx, im, addr, netip.Addr{})
}

// dialFrom is dial from a socket bound to local (any port), or to the
// default address when local is the zero Addr.
func dialFrom(ctx context.Context, im impl, addr string, local netip.Addr) (packetConn, error) {
	switch im {
	case implBasalt:
		var d raknet.Dialer
		if local.IsValid() {
			d.ListenPacket = func(network, _ string) (net.PacketConn, error) {
				return net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
			}
		}
		return d.DialContext(ctx, addr)
	case implGoRakNet:
		var d goraknet.Dialer
		if local.IsValid() {
			d.UpstreamDialer = &net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
		}
		if goWarm.Load() {
			return d.DialContext(ctx, addr)
		}
		// go-raknet v1.15.1 caches its OPEN_CONNECTION_REQUEST_1 bytes in a
		// global map without a lock, so concurrent first dials crash the
		// process. Dial alone until one has filled the cache.
		goWarmMu.Lock()
		defer goWarmMu.Unlock()
		c, err := d.DialContext(ctx, addr)
		if err == nil {
			goWarm.Store(true)
		}
		return c, err
	}
	return nil, fmt.Errorf("dial: unknown implementation %q", im)
}

// goWarm is set once a go-raknet dial succeeded; goWarmMu serialises the
// dials before that.
var (
	goWarm   atomic.Bool
	goWarmMu sync.Mutex
)

// ping sends unconnected pings to addr with implementation im until a pong
// arrives or ctx ends.
func ping(ctx context.Context, im impl, addr string) ([]byte, error) {
	switch im {
	case implBasalt:
		var d raknet.Dialer
		return d.PingContext(ctx, addr)
	case implGoRakNet:
		var d goraknet.Dialer
		return d.PingContext(ctx, addr)
	}
	return nil, fmt.Errorf("ping: unknown implementation %q", im)
}
