package raknet

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// maxDatagramSize is the largest UDP payload.
const maxDatagramSize = 65535

// rawClient speaks RakNet by hand over a UDP socket, to send what our
// Dialer never would.
type rawClient struct {
	t      *testing.T
	pc     rawSocket
	server netip.AddrPort
	buf    []byte

	seq, rel, ord uint32 // next datagram number, reliable and order index
	// cookie is the one the last Reply1 carried, if hasCookie.
	cookie    uint32
	hasCookie bool
}

// rawSocket is what a rawClient needs of its socket: a *net.UDPConn or a
// *simnet.Conn.
type rawSocket interface {
	net.PacketConn
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error)
}

func newRawClient(t *testing.T, server net.Addr) *rawClient {
	t.Helper()
	return newRawClientAt(t, server, netip.MustParseAddr("127.0.0.1"))
}

// newRawClientAt is newRawClient on a socket bound to ip (any 127.x.y.z
// is local on Linux).
func newRawClientAt(t *testing.T, server net.Addr, ip netip.Addr) *rawClient {
	t.Helper()
	pc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return &rawClient{t: t, pc: pc, server: key(server.(*net.UDPAddr).AddrPort()), buf: make([]byte, maxDatagramSize)}
}

func (r *rawClient) send(b []byte) {
	r.t.Helper()
	if _, err := r.pc.WriteToUDPAddrPort(b, r.server); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// read returns the next datagram from the server, or nil after timeout.
func (r *rawClient) read(timeout time.Duration) []byte {
	r.t.Helper()
	_ = r.pc.SetReadDeadline(time.Now().Add(timeout))
	for {
		n, from, err := r.pc.ReadFromUDPAddrPort(r.buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			r.t.Fatalf("read: %v", err)
		}
		if key(from) == r.server && n > 0 {
			return append([]byte(nil), r.buf[:n]...)
		}
	}
}

// expect reads until a datagram starting with id arrives and returns it.
func (r *rawClient) expect(id byte, timeout time.Duration) []byte {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b := r.read(time.Until(deadline))
		if b != nil && b[0] == id {
			return b
		}
	}
	r.t.Fatalf("no datagram %#x from the server within %v", id, timeout)
	return nil
}

// silent checks that no datagram starting with id arrives within d.
func (r *rawClient) silent(id byte, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b := r.read(time.Until(deadline)); b != nil && b[0] == id {
			r.t.Fatalf("got datagram %#x, want none", id)
		}
	}
}

func (r *rawClient) request1(protocol byte, mtu int) []byte {
	req := wire.OpenConnectionRequest1{Protocol: protocol, Size: mtu - ipv4Overhead}
	return req.Append(nil)
}

// request2 returns an OpenConnectionRequest2 echoing the cookie of the
// last Reply1 open saw.
func (r *rawClient) request2(mtu int, guid int64) []byte {
	req := wire.OpenConnectionRequest2{ServerAddr: r.server, MTU: uint16(mtu), ClientGUID: guid, HasCookie: r.hasCookie, Cookie: r.cookie}
	return req.Append(nil)
}

// open runs the offline handshake, echoing Reply1's cookie, and returns
// Reply2.
func (r *rawClient) open(mtu int, guid int64) []byte {
	r.t.Helper()
	r.send(r.request1(11, mtu))
	var m wire.OpenConnectionReply1
	if _, err := m.Decode(r.expect(wire.IDOpenConnectionReply1, time.Second)); err != nil {
		r.t.Fatal(err)
	}
	r.cookie, r.hasCookie = m.Cookie, m.Security
	r.send(r.request2(mtu, guid))
	return r.expect(wire.IDOpenConnectionReply2, time.Second)
}

// frame returns a frame of reliability rel carrying p, with the next
// indexes on channel 0.
func (r *rawClient) frame(rel wire.Reliability, p []byte) wire.Frame {
	f := wire.Frame{Reliability: rel, Payload: p}
	if rel.Reliable() {
		f.ReliableIndex = wire.Uint24(r.rel)
		r.rel++
	}
	if rel.Ordered() {
		f.OrderIndex = wire.Uint24(r.ord)
		r.ord++
	}
	return f
}

// sendFrames sends the frames in one data datagram and returns its size.
func (r *rawClient) sendFrames(frames ...wire.Frame) int {
	r.t.Helper()
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(r.seq)}
	r.seq++
	b := h.Append(nil)
	for i := range frames {
		b = frames[i].Append(b)
	}
	r.send(b)
	return len(b)
}

// message reads data datagrams, acknowledging each, until one carries an
// unsplit message starting with id, and returns that message.
func (r *rawClient) message(id byte, timeout time.Duration) []byte {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b := r.read(time.Until(deadline))
		if b == nil || b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
			continue
		}
		var h wire.DatagramHeader
		n, err := h.Decode(b)
		if err != nil {
			r.t.Fatalf("decode datagram from the server: %v", err)
		}
		ack := wire.Ack{Ranges: []wire.AckRange{{Start: h.Number, End: h.Number}}}
		r.send(ack.Append(nil))
		for rest := b[n:]; len(rest) > 0; {
			var f wire.Frame
			k, err := f.Decode(rest)
			if err != nil {
				r.t.Fatalf("decode frame from the server: %v", err)
			}
			rest = rest[k:]
			if !f.Split && f.Payload[0] == id {
				return append([]byte(nil), f.Payload...)
			}
		}
	}
	r.t.Fatalf("no message %#x from the server within %v", id, timeout)
	return nil
}

// unackedMessage reads data datagrams without acknowledging them until
// one carries an unsplit message starting with id, and returns it; nil
// after timeout.
func (r *rawClient) unackedMessage(id byte, timeout time.Duration) []byte {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b := r.read(time.Until(deadline))
		if m := findMessage(r.t, b, id); m != nil {
			return m
		}
	}
	return nil
}

// noMessage checks that no unsplit message starting with id arrives
// within d; datagrams are acknowledged.
func (r *rawClient) noMessage(id byte, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b := r.read(time.Until(deadline))
		if b == nil || b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
			continue
		}
		var h wire.DatagramHeader
		if _, err := h.Decode(b); err == nil {
			ack := wire.Ack{Ranges: []wire.AckRange{{Start: h.Number, End: h.Number}}}
			r.send(ack.Append(nil))
		}
		if m := findMessage(r.t, b, id); m != nil {
			r.t.Fatalf("got message %#x (% x), want none", id, m)
		}
	}
}

// findMessage returns the first unsplit message starting with id in data
// datagram b, or nil.
func findMessage(t *testing.T, b []byte, id byte) []byte {
	t.Helper()
	if b == nil || b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		return nil
	}
	var h wire.DatagramHeader
	n, err := h.Decode(b)
	if err != nil {
		t.Fatalf("decode datagram from the server: %v", err)
	}
	for rest := b[n:]; len(rest) > 0; {
		var f wire.Frame
		k, err := f.Decode(rest)
		if err != nil {
			t.Fatalf("decode frame from the server: %v", err)
		}
		rest = rest[k:]
		if !f.Split && f.Payload[0] == id {
			return append([]byte(nil), f.Payload...)
		}
	}
	return nil
}

// connectionRequest sends ConnectionRequest and returns the server's
// ConnectionRequestAccepted.
func (r *rawClient) connectionRequest(guid int64) []byte {
	r.t.Helper()
	req := wire.ConnectionRequest{ClientGUID: guid, Time: 1}
	r.sendFrames(r.frame(wire.Reliable, req.Append(nil)))
	return r.message(wire.IDConnectionRequestAccepted, time.Second)
}

// listenTest starts a listener on 127.0.0.1 that is closed when the test
// ends.
func listenTest(t *testing.T, lc ListenConfig) *Listener {
	t.Helper()
	l, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// dialTest dials l with d, accepts the connection and returns both ends.
func dialTest(t *testing.T, d Dialer, l *Listener) (client, server *Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := d.DialContext(ctx, l.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server = acceptTest(t, l)
	return client, server
}

func acceptTest(t *testing.T, l *Listener) *Conn {
	t.Helper()
	ch := make(chan *Conn, 1)
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
		t.Fatal("accept: no connection within 5 s")
		return nil
	}
}

// filterConn wraps a PacketConn: writes for which dropWrite returns true
// and reads for which dropRead returns true are discarded silently, as a
// path that loses them would. Sizes seen are recorded.
type filterConn struct {
	net.PacketConn
	dropWrite, dropRead func(b []byte) bool

	mu     sync.Mutex
	writes [][]byte
	sizes  []int
}

func (f *filterConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	f.mu.Lock()
	f.writes = append(f.writes, append([]byte(nil), b[:min(len(b), 64)]...))
	f.sizes = append(f.sizes, len(b))
	f.mu.Unlock()
	if f.dropWrite != nil && f.dropWrite(b) {
		return len(b), nil
	}
	return f.PacketConn.WriteTo(b, addr)
}

func (f *filterConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := f.PacketConn.ReadFrom(b)
		if err != nil || f.dropRead == nil || !f.dropRead(b[:n]) {
			return n, addr, err
		}
	}
}

// written returns the first bytes of every datagram written so far.
func (f *filterConn) written() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.writes...)
}

// sizesOf returns the sizes of the datagrams written so far that start
// with id.
func (f *filterConn) sizesOf(id byte) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sizes []int
	for i, b := range f.writes {
		if b[0] == id {
			sizes = append(sizes, f.sizes[i])
		}
	}
	return sizes
}

// blackHole is a switch for a filterConn: once on, nothing is written or
// read.
type blackHole struct{ on atomic.Bool }

func (h *blackHole) drop([]byte) bool { return h.on.Load() }

// The leak check sees an open listener's reader and nothing once it is
// closed.
func TestLeakCheckSeesReader(t *testing.T) {
	l, err := ListenConfig{}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(time.Second, func() bool { return len(leaktest.Goroutines()) > 0 }) {
		t.Error("open listener: no goroutine reported")
	}
	_ = l.Close()
	if !waitFor(3*time.Second, func() bool { return len(leaktest.Goroutines()) == 0 }) {
		t.Errorf("closed listener: got %d goroutines", len(leaktest.Goroutines()))
	}
}
