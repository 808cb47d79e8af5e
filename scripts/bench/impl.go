package main

import (
	"context"
	"fmt"
	"net"
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

// listen opens a listener of implementation im on addr with the bench pong
// data.
func listen(im impl, addr string) (packetListener, error) {
	switch im {
	case implBasalt:
		// Every bench client comes from 127.0.0.1, and the phases measure
		// the cost of answering, not the defences: the per-source limits
		// are off, as go-raknet has none. The refusal paths have their own
		// benchmarks in raknet.
		l, err := raknet.ListenConfig{OfflineRate: -1, OfflineBytes: -1, HandshakesPerIP: -1, MaxConnectionsPerIP: -1,
			Sockets: basaltSockets}.Listen(addr)
		if err != nil {
			return nil, err
		}
		l.PongData(pongData)
		return basaltListener{l}, nil
	case implGoRakNet:
		// Every bench client comes from 127.0.0.1: go-raknet's default of
		// blocking an IP for 10 s after one bad datagram would turn one
		// failure into a failure of every later phase.
		l, err := goraknet.ListenConfig{BlockDuration: -1}.Listen(addr)
		if err != nil {
			return nil, err
		}
		l.PongData(pongData)
		return goListener{l}, nil
	}
	return nil, fmt.Errorf("listen: unknown implementation %q", im)
}

// dial connects to addr with implementation im's dialer. ctx bounds the
// handshake.
func dial(ctx context.Context, im impl, addr string) (packetConn, error) {
	switch im {
	case implBasalt:
		var d raknet.Dialer
		return d.DialContext(ctx, addr)
	case implGoRakNet:
		var d goraknet.Dialer
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
