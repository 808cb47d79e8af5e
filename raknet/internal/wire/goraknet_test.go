package wire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/sandertv/go-raknet"
)

// This file checks the codecs against real bytes: go-raknet's dialer talks
// to go-raknet's listener over loopback while the listener's socket records
// every datagram in both directions, and each recorded datagram must decode.

// direction says which way a recorded datagram went.
type direction int

const (
	toListener direction = iota
	fromListener
)

func (d direction) String() string {
	if d == toListener {
		return "to listener"
	}
	return "from listener"
}

type recorded struct {
	dir direction
	b   []byte
}

// recordingConn is a net.PacketConn that records every datagram it reads
// and writes. A datagram read for which drop returns true is recorded but
// hidden from the reader, as if the network had lost it.
type recordingConn struct {
	net.PacketConn
	drop func(b []byte) bool

	mu  sync.Mutex
	log []recorded
}

func (c *recordingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil {
			return n, addr, err
		}
		c.record(toListener, p[:n])
		if c.drop == nil || !c.drop(p[:n]) {
			return n, addr, nil
		}
	}
}

func (c *recordingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(p, addr)
	if err == nil {
		c.record(fromListener, p[:n])
	}
	return n, err
}

func (c *recordingConn) record(dir direction, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, recorded{dir: dir, b: slices.Clone(b)})
}

// recording returns a copy of everything recorded so far.
func (c *recordingConn) recording() []recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// recordingListener is go-raknet's UpstreamPacketListener hook: it opens a
// real UDP socket and wraps it in a recordingConn.
type recordingListener struct {
	drop func(b []byte) bool
	conn *recordingConn
}

func (l *recordingListener) ListenPacket(network, address string) (net.PacketConn, error) {
	pc, err := net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	l.conn = &recordingConn{PacketConn: pc, drop: l.drop}
	return l.conn, nil
}

// dropSecondFragment returns a drop func that loses, once, the first data
// datagram towards the listener that carries fragment 1 of a split message,
// so that the listener has a gap to NACK.
func dropSecondFragment() func(b []byte) bool {
	var dropped atomic.Bool
	return func(b []byte) bool {
		if dropped.Load() {
			return false
		}
		var h wire.DatagramHeader
		n, err := h.Decode(b)
		if err != nil {
			return false
		}
		var f wire.Frame
		if _, err := f.Decode(b[n:]); err != nil || !f.Split || f.SplitIndex != 1 {
			return false
		}
		return dropped.CompareAndSwap(false, true)
	}
}

// census decodes recorded datagrams and counts what it saw by kind.
type census struct {
	listener, dialer netip.AddrPort
	pong             []byte

	counts   map[string]int
	failures []string
	splits   map[splitKey]map[uint32][]byte
	games    map[direction][][]byte
}

type splitKey struct {
	dir direction
	id  uint16
}

func newCensus(listener, dialer netip.AddrPort, pong []byte) *census {
	return &census{
		listener: listener, dialer: dialer, pong: pong,
		counts: map[string]int{},
		splits: map[splitKey]map[uint32][]byte{},
		games:  map[direction][][]byte{},
	}
}

func (c *census) failf(i int, d recorded, format string, args ...any) {
	head := d.b[:min(len(d.b), 24)]
	c.failures = append(c.failures, fmt.Sprintf("datagram %d (%v, %d bytes, % x…): %s", i, d.dir, len(d.b), head, fmt.Sprintf(format, args...)))
}

func (c *census) add(i int, d recorded) {
	b := d.b
	if len(b) == 0 {
		c.failf(i, d, "empty datagram")
		return
	}
	c.counts["datagram"]++
	switch {
	case b[0]&wire.FlagValid == 0:
		c.offline(i, d)
	case b[0]&(wire.FlagACK|wire.FlagNACK) != 0:
		var a wire.Ack
		n, err := a.Decode(b)
		if err != nil || n != len(b) {
			c.failf(i, d, "ACK: got %v, %v, want %v, nil", n, err, len(b))
			return
		}
		kind := "ACK"
		if a.NACK {
			kind = "NACK"
		}
		c.counts[kind]++
		c.counts[kind+" ranges"] += len(a.Ranges)
	default:
		c.data(i, d)
	}
}

// offline decodes an offline message by its id and checks its fields
// against what the two peers know.
func (c *census) offline(i int, d recorded) {
	b := d.b
	var (
		m    interface{ Decode([]byte) (int, error) }
		kind string
	)
	switch {
	case b[0] == wire.IDUnconnectedPing || b[0] == wire.IDUnconnectedPingOpenConnections:
		m, kind = &wire.UnconnectedPing{}, "UnconnectedPing"
	case b[0] == wire.IDUnconnectedPong:
		m, kind = &wire.UnconnectedPong{}, "UnconnectedPong"
	case b[0] == wire.IDOpenConnectionRequest1:
		m, kind = &wire.OpenConnectionRequest1{}, "OpenConnectionRequest1"
	case b[0] == wire.IDOpenConnectionReply1:
		m, kind = &wire.OpenConnectionReply1{}, "OpenConnectionReply1"
	case b[0] == wire.IDOpenConnectionRequest2:
		m, kind = &wire.OpenConnectionRequest2{}, "OpenConnectionRequest2"
	case b[0] == wire.IDOpenConnectionReply2:
		m, kind = &wire.OpenConnectionReply2{}, "OpenConnectionReply2"
	case b[0] == wire.IDIncompatibleProtocolVersion:
		m, kind = &wire.IncompatibleProtocolVersion{}, "IncompatibleProtocolVersion"
	case wire.IsNotice(b[0]):
		m, kind = &wire.Notice{}, "Notice"
	default:
		c.failf(i, d, "unknown offline id %#02x", b[0])
		return
	}
	n, err := m.Decode(b)
	if err != nil || n != len(b) {
		c.failf(i, d, "%s: got %v, %v, want %v, nil", kind, n, err, len(b))
		return
	}
	c.counts[kind]++
	switch m := m.(type) {
	case *wire.UnconnectedPong:
		if !bytes.Equal(m.Data, c.pong) {
			c.failf(i, d, "pong data: got %q, want %q", m.Data, c.pong)
		}
	case *wire.OpenConnectionRequest1:
		c.counts[fmt.Sprintf("OpenConnectionRequest1 probing MTU %d", m.Size+28)]++
	case *wire.OpenConnectionReply1:
		if m.Security {
			c.counts["OpenConnectionReply1 with cookie"]++
		}
	case *wire.OpenConnectionRequest2:
		if m.HasCookie {
			c.counts["OpenConnectionRequest2 with cookie"]++
		}
		if m.ServerAddr != c.listener {
			c.failf(i, d, "server address: got %v, want %v", m.ServerAddr, c.listener)
		}
	case *wire.OpenConnectionReply2:
		if m.ClientAddr != c.dialer {
			c.failf(i, d, "client address: got %v, want %v", m.ClientAddr, c.dialer)
		}
	}
}

// data decodes a data datagram: the header, then frames to the end. Split
// fragments are reassembled before the message inside is decoded.
func (c *census) data(i int, d recorded) {
	var h wire.DatagramHeader
	n, err := h.Decode(d.b)
	if err != nil {
		c.failf(i, d, "datagram header: %v", err)
		return
	}
	c.counts[fmt.Sprintf("data datagram %#02x", h.Flags)]++
	for rest := d.b[n:]; len(rest) > 0; rest = rest[n:] {
		var f wire.Frame
		if n, err = f.Decode(rest); err != nil {
			c.failf(i, d, "frame at offset %d: %v", len(d.b)-len(rest), err)
			return
		}
		c.counts["frame "+f.Reliability.String()]++
		if !f.Split {
			c.message(i, d, f.Payload)
			continue
		}
		c.counts["split fragment"]++
		k := splitKey{d.dir, f.SplitID}
		parts := c.splits[k]
		if parts == nil {
			parts = map[uint32][]byte{}
			c.splits[k] = parts
		}
		parts[f.SplitIndex] = f.Payload
		if uint32(len(parts)) == f.SplitCount {
			var whole []byte
			for j := range f.SplitCount {
				whole = append(whole, parts[j]...)
			}
			delete(c.splits, k)
			c.counts["split message"]++
			c.message(i, d, whole)
		}
	}
}

// message decodes a connected message by its id.
func (c *census) message(i int, d recorded, b []byte) {
	var (
		m    interface{ Decode([]byte) (int, error) }
		kind string
	)
	switch b[0] {
	case wire.IDGamePacket:
		c.counts["game payload"]++
		c.games[d.dir] = append(c.games[d.dir], b)
		return
	case wire.IDConnectedPing:
		m, kind = &wire.ConnectedPing{}, "ConnectedPing"
	case wire.IDConnectedPong:
		m, kind = &wire.ConnectedPong{}, "ConnectedPong"
	case wire.IDConnectionRequest:
		m, kind = &wire.ConnectionRequest{}, "ConnectionRequest"
	case wire.IDConnectionRequestAccepted:
		m, kind = &wire.ConnectionRequestAccepted{}, "ConnectionRequestAccepted"
	case wire.IDNewIncomingConnection:
		m, kind = &wire.NewIncomingConnection{}, "NewIncomingConnection"
	case wire.IDDisconnectionNotification:
		m, kind = &wire.DisconnectionNotification{}, "DisconnectionNotification"
	default:
		c.failf(i, d, "unknown connected message id %#02x", b[0])
		return
	}
	n, err := m.Decode(b)
	if err != nil || n != len(b) {
		c.failf(i, d, "%s: got %v, %v, want %v, nil", kind, n, err, len(b))
		return
	}
	c.counts[kind]++
	switch m := m.(type) {
	case *wire.ConnectionRequestAccepted:
		c.counts[fmt.Sprintf("ConnectionRequestAccepted with %d system addresses", m.SystemAddrs.N)]++
		if m.ClientAddr != c.dialer {
			c.failf(i, d, "client address: got %v, want %v", m.ClientAddr, c.dialer)
		}
	case *wire.NewIncomingConnection:
		c.counts[fmt.Sprintf("NewIncomingConnection with %d system addresses", m.SystemAddrs.N)]++
		if m.ServerAddr != c.listener {
			c.failf(i, d, "server address: got %v, want %v", m.ServerAddr, c.listener)
		}
	}
}

// takeCensus decodes a whole recording.
func takeCensus(rec []recorded, listener, dialer netip.AddrPort, pong []byte) *census {
	c := newCensus(listener, dialer, pong)
	for i, d := range rec {
		c.add(i, d)
	}
	return c
}

// gamePayload returns an n-byte message that looks like a Bedrock batch.
func gamePayload(n int) []byte {
	b := make([]byte, n)
	b[0] = wire.IDGamePacket
	for i := 1; i < n; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

// readPacket reads one packet from c, giving up when ctx is done (go-raknet
// connections have no read deadline).
func readPacket(ctx context.Context, c *raknet.Conn) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := c.ReadPacket()
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitFor polls cond until it holds or ctx is done.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func addrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatalf("parse address %v: %v", a, err)
	}
	return ap
}

func TestGoRaknetRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go-raknet over loopback for a few seconds")
	}
	// go-raknet's goroutines and ours must all have ended with the test.
	leaktest.Check(t, leaktest.Module, "github.com/sandertv/go-raknet")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const motd = "MCPE;Dedicated Server;527;1.19.1;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;"
	rl := &recordingListener{drop: dropSecondFragment()}
	l, err := raknet.ListenConfig{UpstreamPacketListener: rl}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	l.PongData([]byte(motd))
	addr := l.Addr().String()

	// 1. An unconnected ping.
	pong, err := raknet.Dialer{}.PingContext(ctx, addr)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	if string(pong) != motd {
		t.Errorf("pong: got %q, want %q", pong, motd)
	}

	// 2. The handshake.
	type accepted struct {
		c   net.Conn
		err error
	}
	acceptc := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		acceptc <- accepted{c, err}
	}()
	dc, err := raknet.Dialer{}.DialContext(ctx, addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer dc.Close()
	var sc *raknet.Conn
	select {
	case a := <-acceptc:
		if a.err != nil {
			t.Fatalf("accept: %v", a.err)
		}
		sc = a.c.(*raknet.Conn)
	case <-ctx.Done():
		t.Fatalf("accept: %v", ctx.Err())
	}
	defer sc.Close()

	// 3. Data both ways, large enough to be split.
	msgs := [][]byte{gamePayload(1), gamePayload(1024), gamePayload(100 * 1024)}
	exchange := func(name string, from, to *raknet.Conn) {
		for _, m := range msgs {
			if _, err := from.Write(m); err != nil {
				t.Fatalf("%s: write %d bytes: %v", name, len(m), err)
			}
		}
		for _, m := range msgs {
			got, err := readPacket(ctx, to)
			if err != nil {
				t.Fatalf("%s: read: %v", name, err)
			}
			if !bytes.Equal(got, m) {
				t.Fatalf("%s: read %d bytes, want the %d sent", name, len(got), len(m))
			}
		}
	}
	exchange("dialer to listener", dc, sc)
	exchange("listener to dialer", sc, dc)

	listenerAddr := addrPort(t, l.Addr())
	dialerAddr := addrPort(t, dc.LocalAddr())
	seen := func(kinds ...string) func() bool {
		return func() bool {
			c := takeCensus(rl.conn.recording(), listenerAddr, dialerAddr, []byte(motd))
			for _, k := range kinds {
				if c.counts[k] == 0 {
					return false
				}
			}
			return true
		}
	}
	// Keepalive pings come every 500 ms; the NACK for the dropped fragment
	// goes out once a later datagram shows the gap.
	if err := waitFor(ctx, seen("ConnectedPing", "ConnectedPong", "NACK")); err != nil {
		t.Fatalf("wait for pings and a NACK: %v", err)
	}

	// 4. Close: the dialer sends DisconnectionNotification once its data
	// is acknowledged, and the listener's side closes on receiving it.
	if err := dc.Close(); err != nil {
		t.Fatalf("close dialer conn: %v", err)
	}
	for name, c := range map[string]*raknet.Conn{"dialer": dc, "listener": sc} {
		select {
		case <-c.Context().Done():
		case <-ctx.Done():
			t.Fatalf("wait for %s conn to close: %v", name, ctx.Err())
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close listener: %v", err)
	}

	// 5. Decode everything.
	rec := rl.conn.recording()
	c := takeCensus(rec, listenerAddr, dialerAddr, []byte(motd))
	for _, f := range c.failures {
		t.Error(f)
	}
	for _, kind := range []string{
		"UnconnectedPing", "UnconnectedPong",
		"OpenConnectionRequest1", "OpenConnectionReply1", "OpenConnectionRequest2", "OpenConnectionReply2",
		"ACK", "NACK", "split fragment", "split message",
		"ConnectionRequest", "ConnectionRequestAccepted", "NewIncomingConnection",
		"ConnectedPing", "ConnectedPong", "DisconnectionNotification", "game payload",
	} {
		if c.counts[kind] == 0 {
			t.Errorf("%s: got 0, want at least 1", kind)
		}
	}
	// Every message sent was seen whole on the wire, in both directions.
	for _, dir := range []direction{toListener, fromListener} {
		for _, m := range msgs {
			if !slices.ContainsFunc(c.games[dir], func(g []byte) bool { return bytes.Equal(g, m) }) {
				t.Errorf("game payload of %d bytes %v: got none, want it", len(m), dir)
			}
		}
	}
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "\n%6d  %s", c.counts[k], k)
	}
	t.Logf("decoded %d recorded datagrams, %d failures:%s", len(rec), len(c.failures), sb.String())

	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("test ran into its deadline")
	}
}
