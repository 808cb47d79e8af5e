package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/raknet/internal/wire"
	"golang.org/x/sys/unix"
)

// echoEndpoint starts an endpoint on network/address whose reader writes
// every datagram back to its sender; it is closed when the test ends.
func echoEndpoint(t *testing.T, network, address string) *endpoint {
	t.Helper()
	pc, err := net.ListenPacket(network, address)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, address, err)
	}
	e := batchedEndpoint(t, pc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) { _ = e.write(b, from) })
	}()
	t.Cleanup(func() {
		e.close()
		<-done
	})
	return e
}

// batchedEndpoint returns an endpoint for pc with batched I/O, or skips
// the test when batching is switched off.
func batchedEndpoint(t *testing.T, pc net.PacketConn) *endpoint {
	t.Helper()
	if !batching {
		pc.Close()
		t.Skip("batching is switched off (BASALT_RAKNET_BATCH=0)")
	}
	e := newEndpoint(pc)
	if e.socks[0].bio == nil {
		t.Fatal("no batched I/O on a UDP socket")
	}
	return e
}

// udpClient opens a client socket on network/address that gives up
// reading after a few seconds.
func udpClient(t *testing.T, network, address string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(address)))
	if err != nil {
		t.Skipf("listen %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A batched endpoint reads from, and writes to, IPv4 and IPv6 peers on
// every kind of socket, reporting the peer as package net does (an IPv4
// peer of a dual-stack socket IPv4-mapped).
func TestBatchIOFamilies(t *testing.T) {
	for _, tc := range []struct {
		name, network, listen, clientNet, client string
		mapped                                   bool
	}{
		{"udp4", "udp4", "127.0.0.1:0", "udp4", "127.0.0.1:0", false},
		{"udp6", "udp6", "[::1]:0", "udp6", "[::1]:0", false},
		{"dual-stack, IPv4 peer", "udp", "[::]:0", "udp4", "127.0.0.1:0", true},
		{"dual-stack, IPv6 peer", "udp", "[::]:0", "udp6", "[::1]:0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []netip.AddrPort
			pc, err := net.ListenPacket(tc.network, tc.listen)
			if err != nil {
				t.Skipf("listen: %v", err)
			}
			e := batchedEndpoint(t, pc)
			got := make(chan netip.AddrPort, 8)
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) {
					got <- from
					_ = e.write(b, from)
				})
			}()
			defer func() { e.close(); <-done }()
			c := udpClient(t, tc.clientNet, tc.client)
			port := netip.MustParseAddrPort(pc.LocalAddr().String()).Port()
			host := netip.MustParseAddr(c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().String())
			to := netip.AddrPortFrom(host, port)
			for i := range 3 {
				msg := []byte{0x01, byte(i)}
				if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
					t.Fatal(err)
				}
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 64)
				n, _, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("echo %d: %v", i, err)
				}
				if !bytes.Equal(buf[:n], msg) {
					t.Errorf("echo %d: got % x, want % x", i, buf[:n], msg)
				}
				seen = append(seen, <-got)
			}
			want := c.LocalAddr().(*net.UDPAddr).AddrPort()
			if tc.mapped {
				want = netip.AddrPortFrom(netip.AddrFrom16(want.Addr().As16()), want.Port())
			}
			for _, from := range seen {
				if from != want {
					t.Errorf("sender: got %v, want %v", from, want)
				}
			}
		})
	}
}

// The replies a reader writes while it handles a batch leave together
// once the batch is handled, not one by one.
func TestBatchRepliesWaitForBatch(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := batchedEndpoint(t, pc)
	c := udpClient(t, "udp4", "127.0.0.1:0")
	to := netip.MustParseAddrPort(pc.LocalAddr().String())
	// Queued in the socket before the reader starts: one batch.
	const n = 4
	for i := range n {
		if _, err := c.WriteToUDPAddrPort([]byte{byte(i)}, to); err != nil {
			t.Fatal(err)
		}
	}
	early := make(chan bool, 1)
	handled := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) {
			_ = e.write(b, from)
			if handled++; handled == n {
				// Three replies are written by now; none may have left.
				_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				_, _, err := c.ReadFromUDPAddrPort(make([]byte, 16))
				early <- err == nil
			}
		})
	}()
	defer func() { e.close(); <-done }()
	select {
	case got := <-early:
		if got {
			t.Fatal("a reply left before its batch was handled")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("handled %d datagrams, want %d in one batch", handled, n)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range n {
		buf := make([]byte, 16)
		k, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if k != 1 || buf[0] != byte(i) {
			t.Errorf("reply %d: got % x, want %02x", i, buf[:k], i)
		}
	}
}

// A write from outside the reader leaves at once, even while the reader
// is collecting a batch: it waits for nothing.
func TestBatchOutsideWriteNotHeld(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := batchedEndpoint(t, pc)
	a := udpClient(t, "udp4", "127.0.0.1:0")
	other := udpClient(t, "udp4", "127.0.0.1:0")
	otherAddr := other.LocalAddr().(*net.UDPAddr).AddrPort()
	arrived := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) {
			// Mid-batch: another goroutine writes to another peer, and
			// it arrives before this handler returns.
			go func() { _ = e.write([]byte("outside"), otherAddr) }()
			_ = other.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _, err := other.ReadFromUDPAddrPort(make([]byte, 16))
			arrived <- err == nil
		})
	}()
	defer func() { e.close(); <-done }()
	if _, err := a.WriteToUDPAddrPort([]byte{1}, netip.MustParseAddrPort(pc.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-arrived:
		if !ok {
			t.Error("an outside write waited for the reader's batch")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram handled")
	}
}

// A reply too large for a queue slot, and more replies than a batch
// holds, still all leave.
func TestBatchOverflow(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := batchedEndpoint(t, pc)
	c := udpClient(t, "udp4", "127.0.0.1:0")
	_ = c.SetReadBuffer(socketBuffer)
	big := bytes.Repeat([]byte{0xab}, writeSlot+100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) {
			_ = e.write(big, from)
			for i := range 2 * batchSize {
				_ = e.write([]byte{byte(i)}, from)
			}
		})
	}()
	defer func() { e.close(); <-done }()
	if _, err := c.WriteToUDPAddrPort([]byte{1}, netip.MustParseAddrPort(pc.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var sizes []int
	small := 0
	for range 2*batchSize + 1 {
		buf := make([]byte, 2*writeSlot)
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("after %d replies: %v", len(sizes), err)
		}
		sizes = append(sizes, n)
		if n == 1 && int(buf[0]) == small {
			small++
		}
	}
	if small != 2*batchSize {
		t.Errorf("got %d small replies in order, want %d", small, 2*batchSize)
	}
	found := false
	for _, n := range sizes {
		found = found || n == len(big)
	}
	if !found {
		t.Errorf("no reply of %d bytes among %v", len(big), sizes)
	}
}

// Reading a batch of datagrams and writing the replies allocates nothing
// once the endpoint is warm.
func TestBatchIOAllocs(t *testing.T) {
	e := echoEndpoint(t, "udp4", "127.0.0.1:0")
	c := udpClient(t, "udp4", "127.0.0.1:0")
	to := netip.MustParseAddrPort(e.local.String())
	msg := make([]byte, 100)
	buf := make([]byte, 2048)
	round := func() {
		for range batchSize {
			if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for range batchSize {
			if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Errorf("got %v allocations per %d datagrams echoed, want 0", n, batchSize)
	}
}

// exchange writes a message each way over a connection and checks both
// arrive.
func exchange(t *testing.T, client, server *Conn, tag string) {
	t.Helper()
	for _, dir := range []struct {
		name     string
		from, to *Conn
	}{{"to server", client, server}, {"to client", server, client}} {
		msg := []byte(tag + " " + dir.name)
		if _, err := dir.from.Write(msg); err != nil {
			t.Fatalf("%s: write %s: %v", tag, dir.name, err)
		}
		_ = dir.to.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := dir.to.ReadPacket()
		if err != nil {
			t.Fatalf("%s: read %s: %v", tag, dir.name, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("%s: got %q, want %q", tag, got, msg)
		}
	}
}

// dialFrom is a Dialer whose socket is bound to ip.
func dialFrom(ip netip.Addr) Dialer {
	return Dialer{ListenPacket: func(network, _ string) (net.PacketConn, error) {
		return net.ListenPacket(network, netip.AddrPortFrom(ip, 0).String())
	}}
}

// A listener with two sockets accepts clients from many addresses, which
// the kernel spreads over both sockets, and every connection works.
// Closing the listener closes both sockets and ends both readers.
func TestListenerSockets(t *testing.T) {
	leaktest.Check(t)
	l, err := ListenConfig{Sockets: 2}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := len(l.ep.socks); n != 2 {
		t.Fatalf("got %d sockets, want 2", n)
	}
	const clients = 24
	for i := range clients {
		// Each from its own /24, so no source prefix is rate limited.
		ip := netip.AddrFrom4([4]byte{127, 0, byte(10 + i), 1})
		client, server := dialTest(t, dialFrom(ip), l)
		if got := server.RemoteAddr().(*net.UDPAddr).AddrPort().Addr(); got != ip {
			t.Errorf("client %d: server sees %v, want %v", i, got, ip)
		}
		exchange(t, client, server, ip.String())
	}
	for i, s := range l.ep.socks {
		if s.received.Load() == 0 {
			t.Errorf("socket %d received nothing from %d clients, want a share", i, clients)
		}
	}
	if st := l.Stats(); st.Accepted != clients {
		t.Errorf("accepted %d connections, want %d", st.Accepted, clients)
	}
	addr := l.Addr().String()
	l.Close()
	// A socket without SO_REUSEPORT binds the port only once no socket
	// of the listener holds it.
	pc, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatalf("port still bound after Close: %v", err)
	}
	pc.Close()
}

// steerOffline makes the kernel hand the offline datagrams of every flow
// to socket 1 of the listener's reuseport group and the connected ones to
// socket 0, by their first byte: offline IDs used by clients (0x01, 0x05,
// 0x07) are odd, connected datagrams' flags (0x80 and up, bit 0 clear)
// even.
func steerOffline(t *testing.T, l *Listener) {
	t.Helper()
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 0},  // A = payload[0]
		{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 1}, // A &= 1
		{Code: unix.BPF_RET | unix.BPF_A},                      // socket A
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	rc, err := l.ep.socks[0].udp.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &fprog)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Skipf("attach a reuseport program: %v", serr)
	}
}

// A connection whose handshake arrived on one socket and whose connected
// datagrams arrive on the other is found there: the listener keeps one
// table for all its sockets.
func TestListenerSocketsCrossSocket(t *testing.T) {
	leaktest.Check(t)
	l := listenTest(t, ListenConfig{Sockets: 2})
	steerOffline(t, l)
	// The program steers: pings all reach socket 1.
	r := newRawClient(t, l.Addr())
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	for range 5 {
		r.send(ping.Append(nil))
		r.expect(wire.IDUnconnectedPong, 5*time.Second)
	}
	if got0, got1 := l.ep.socks[0].received.Load(), l.ep.socks[1].received.Load(); got0 != 0 || got1 != 5 {
		t.Fatalf("5 pings: socket 0 got %d, socket 1 %d; want 0 and 5", got0, got1)
	}
	for i := range 3 {
		client, server := dialTest(t, Dialer{}, l)
		exchange(t, client, server, fmt.Sprint("client ", i))
	}
	offline, connected := l.ep.socks[1].received.Load()-5, l.ep.socks[0].received.Load()
	// Each handshake is at least OpenConnectionRequest1 and 2 offline,
	// then the connected handshake and the data.
	if offline < 6 || connected < 6 {
		t.Errorf("socket 1 got %d datagrams, socket 0 %d; want both at least 6", offline, connected)
	}
	if st := l.Stats(); st.Accepted != 3 || st.Dropped != 0 {
		t.Errorf("stats: accepted %d, dropped %d, want 3 and 0", st.Accepted, st.Dropped)
	}
}

// With a ListenPacket hook, a listener of n sockets calls it n times, the
// later ones with the address the first socket got.
func TestListenSocketsHook(t *testing.T) {
	var calls []string
	hook := func(network, address string) (net.PacketConn, error) {
		calls = append(calls, address)
		return listenReusePort(network, address)
	}
	l := listenTest(t, ListenConfig{Sockets: 3, ListenPacket: hook})
	want := []string{"127.0.0.1:0", l.Addr().String(), l.Addr().String()}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("hook called with %v, want %v", calls, want)
	}
	if n := len(l.ep.socks); n != 3 {
		t.Errorf("got %d sockets, want 3", n)
	}
	// A hook that fails on the second socket fails Listen, and the first
	// is closed again.
	var first net.PacketConn
	failing := func(network, address string) (net.PacketConn, error) {
		if first == nil {
			var err error
			first, err = net.ListenPacket(network, address)
			return first, err
		}
		return net.ListenPacket(network, address) // the port is taken
	}
	if _, err := (ListenConfig{Sockets: 2, ListenPacket: failing}).Listen("127.0.0.1:0"); err == nil {
		t.Fatal("Listen: no error for a second socket that cannot bind")
	}
	if _, err := first.WriteTo([]byte{1}, first.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("first socket after a failed Listen: write error %v, want net.ErrClosed", err)
	}
}

// Replies queued when the endpoint closes (a listener's goodbyes) still
// leave.
func TestBatchCloseSendsQueued(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := batchedEndpoint(t, pc)
	c := udpClient(t, "udp4", "127.0.0.1:0")
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, from netip.AddrPort, _ time.Time) {
			_ = e.write([]byte("goodbye"), from)
			e.close()
		})
	}()
	if _, err := c.WriteToUDPAddrPort([]byte{1}, netip.MustParseAddrPort(pc.LocalAddr().String())); err != nil {
		t.Fatal(err)
	}
	<-done
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "goodbye" {
		t.Fatalf("got %q, %v, want the queued goodbye", buf[:n], err)
	}
}
