package raknet

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
)

// simNet is the simulated network of one test running in a synctest
// bubble: its listeners, dialers and raw clients all use it, so the test's
// timeouts and windows are virtual time, exact and independent of the
// machine's load. It is the simulated counterpart of listenTest, dialTest
// and newRawClient.
type simNet struct {
	t *testing.T
	n *simnet.Network
}

// inSim runs f in a synctest bubble on a new simulated network (seed 1).
// Once f and its cleanups are done, no socket may be left open.
func inSim(t *testing.T, f func(t *testing.T, s *simNet)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		s := &simNet{t: t, n: simnet.New(simnet.Config{Seed: 1})}
		// Registered first, so it runs after every other cleanup.
		t.Cleanup(func() {
			time.Sleep(simLinger)
			if open := s.n.Sockets(); len(open) > 0 {
				t.Errorf("got sockets %v open after everything was closed, want none", open)
			}
		})
		f(t, s)
	})
}

// listen starts a listener with lc on 127.0.0.1 that is closed when the
// test ends. A nil lc.ListenPacket becomes the network's.
func (s *simNet) listen(lc ListenConfig) *Listener {
	s.t.Helper()
	return s.listenAt(lc, "127.0.0.1:0")
}

// listenAt is listen on address.
func (s *simNet) listenAt(lc ListenConfig, address string) *Listener {
	s.t.Helper()
	if lc.ListenPacket == nil {
		lc.ListenPacket = s.n.ListenPacket
	}
	l, err := lc.Listen(address)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = l.Close() })
	return l
}

// dialer returns d dialing over the network unless it has a ListenPacket
// of its own.
func (s *simNet) dialer(d Dialer) Dialer {
	if d.ListenPacket == nil {
		d.ListenPacket = s.n.ListenPacket
	}
	return d
}

// dial dials l with d over the network, accepts the connection and
// returns both ends, which are closed when the test ends.
func (s *simNet) dial(d Dialer, l *Listener) (client, server *Conn) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := s.dialer(d).DialContext(ctx, l.Addr().String())
	if err != nil {
		s.t.Fatalf("dial: %v", err)
	}
	s.t.Cleanup(func() { _ = client.Close() })
	server, err = l.AcceptConn()
	if err != nil {
		s.t.Fatalf("accept: %v", err)
	}
	s.t.Cleanup(func() { _ = server.Close() })
	return client, server
}

// filter returns a ListenPacket hook that wraps a socket of the network
// in f.
func (s *simNet) filter(f *filterConn) func(network, address string) (net.PacketConn, error) {
	return func(network, address string) (net.PacketConn, error) {
		pc, err := s.n.ListenPacket(network, address)
		if err != nil {
			return nil, err
		}
		f.PacketConn = pc
		return f, nil
	}
}

// raw returns a raw client on 127.0.0.1 talking to server.
func (s *simNet) raw(server net.Addr) *rawClient {
	s.t.Helper()
	return s.rawAt(server, netip.MustParseAddr("127.0.0.1"))
}

// rawAt returns a raw client on ip talking to server.
func (s *simNet) rawAt(server net.Addr, ip netip.Addr) *rawClient {
	s.t.Helper()
	pc, err := s.n.ListenPacket("udp4", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = pc.Close() })
	return &rawClient{t: s.t, pc: pc.(*simnet.Conn), server: key(server.(*net.UDPAddr).AddrPort()), buf: make([]byte, maxDatagramSize)}
}

// waitFor polls cond every few milliseconds of the bubble's clock until it
// holds or timeout passes, and reports whether it held. It is for tests in
// a synctest bubble (inSim), where the sleeps take no real time.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitUntil fails the test unless cond holds within a second of the
// bubble's clock.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
