//go:build unix

package raknet

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// idlePeer is a connected client by hand that behaves as an idle
// go-raknet client does: it pings every 500 ms and acknowledges what it
// received every 100 ms, and nothing else. Many of them share one
// goroutine for sending, so that what a benchmark of them measures is
// mostly the listener's side.
type idlePeer struct {
	pc     *net.UDPConn
	server netip.AddrPort
	buf    []byte
	seq    uint32 // next datagram number
	rel    uint32 // next reliable index
	ord    uint32 // next order index

	mu   sync.Mutex
	acks []wire.AckRange // data datagrams received since the last ACK
}

func newIdlePeer(server netip.AddrPort, ip netip.Addr) (*idlePeer, error) {
	pc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return nil, err
	}
	return &idlePeer{pc: pc, server: server, buf: make([]byte, 1500)}, nil
}

// read returns the next datagram from the server within timeout.
func (p *idlePeer) read(timeout time.Duration) ([]byte, error) {
	_ = p.pc.SetReadDeadline(time.Now().Add(timeout))
	n, _, err := p.pc.ReadFromUDPAddrPort(p.buf)
	return p.buf[:n], err
}

func (p *idlePeer) send(b []byte) error {
	_, err := p.pc.WriteToUDPAddrPort(b, p.server)
	return err
}

// sendFrame sends one frame of reliability rel carrying m in a datagram
// of its own.
func (p *idlePeer) sendFrame(rel wire.Reliability, m []byte) error {
	f := wire.Frame{Reliability: rel, Payload: m}
	if rel.Reliable() {
		f.ReliableIndex = wire.Uint24(p.rel)
		p.rel++
	}
	if rel.Ordered() {
		f.OrderIndex = wire.Uint24(p.ord)
		p.ord++
	}
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(p.seq)}
	p.seq++
	return p.send(f.Append(h.Append(p.buf[:0:0])))
}

// connect runs both handshakes.
func (p *idlePeer) connect(guid int64) error {
	const mtu = 1400
	expect := func(id byte) ([]byte, error) {
		for {
			b, err := p.read(2 * time.Second)
			if err != nil {
				return nil, err
			}
			if len(b) > 0 && b[0] == id {
				return b, nil
			}
		}
	}
	req1 := wire.OpenConnectionRequest1{Protocol: 11, Size: mtu - ipv4Overhead}
	if err := p.send(req1.Append(nil)); err != nil {
		return err
	}
	b, err := expect(wire.IDOpenConnectionReply1)
	if err != nil {
		return err
	}
	var r1 wire.OpenConnectionReply1
	if _, err := r1.Decode(b); err != nil {
		return err
	}
	req2 := wire.OpenConnectionRequest2{ServerAddr: p.server, MTU: mtu, ClientGUID: guid, HasCookie: r1.Security, Cookie: r1.Cookie}
	if err := p.send(req2.Append(nil)); err != nil {
		return err
	}
	if _, err := expect(wire.IDOpenConnectionReply2); err != nil {
		return err
	}
	cr := wire.ConnectionRequest{ClientGUID: guid, Time: 1}
	if err := p.sendFrame(wire.Reliable, cr.Append(nil)); err != nil {
		return err
	}
	for {
		b, err := p.read(2 * time.Second)
		if err != nil {
			return err
		}
		if !simCarries(b, wire.IDConnectionRequestAccepted) {
			continue
		}
		var h wire.DatagramHeader
		if _, err := h.Decode(b); err != nil {
			return err
		}
		ack := wire.Ack{Ranges: []wire.AckRange{{Start: h.Number, End: h.Number}}}
		if err := p.send(ack.Append(nil)); err != nil {
			return err
		}
		break
	}
	nic := wire.NewIncomingConnection{ServerAddr: p.server}
	nic.SystemAddrs.N = wire.MaxSystemAddresses
	return p.sendFrame(wire.ReliableOrdered, nic.Append(nil))
}

// readLoop records the data datagrams the server sends, to acknowledge
// them on the next tick, until the socket is closed.
func (p *idlePeer) readLoop() {
	_ = p.pc.SetReadDeadline(time.Time{})
	buf := make([]byte, 1500)
	for {
		n, _, err := p.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		b := buf[:n]
		if n == 0 || b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
			continue
		}
		var h wire.DatagramHeader
		if _, err := h.Decode(b); err != nil {
			continue
		}
		p.mu.Lock()
		p.acks = append(p.acks, wire.AckRange{Start: h.Number, End: h.Number})
		p.mu.Unlock()
	}
}

// tick sends the ACK of what arrived since the last one and, if ping is
// set, a connected ping.
func (p *idlePeer) tick(ping bool, now int64, scratch []byte) {
	p.mu.Lock()
	if len(p.acks) > 0 {
		a := wire.Ack{Ranges: p.acks}
		_ = p.send(a.Append(scratch[:0]))
		p.acks = p.acks[:0]
	}
	p.mu.Unlock()
	if ping {
		m := wire.ConnectedPing{Time: now}
		_ = p.sendFrame(wire.Unreliable, m.Append(scratch[:0]))
	}
}

// cpuTime returns the process's user and system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIdleConns holds 500 idle connections to a listener, each
// pinged every 500 ms and acknowledged every 100 ms by its peer as an
// idle go-raknet client does. One op is one 500 ms ping round.
// cpu-ms/s is the process's CPU time per second of the rounds (the
// peers' work, the same code however the listener changes, included);
// heap-B/conn is the heap the listener holds per connection once they
// are all established; wakeups/s/conn counts the connections' timer
// callbacks.
// settle waits until each connection has had everything it sent
// acknowledged: the handshakes' ACKs and resends are over.
func settle(b *testing.B, conns []*Conn) {
	b.Helper()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(5 * time.Second)
	for _, c := range conns {
		for c.Stats().InFlight != 0 {
			select {
			case <-poll.C:
			case <-deadline:
				b.Fatalf("a connection still has %d bytes in flight 5 s after its handshake", c.Stats().InFlight)
			}
		}
	}
}

func BenchmarkIdleConns(b *testing.B) {
	const conns = 500
	peers := make([]*idlePeer, conns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range peers {
		ip := netip.AddrFrom4([4]byte{127, 0, 1 + byte(i/250), 1 + byte(i%250)})
		p, err := newIdlePeer(netip.AddrPort{}, ip)
		if err != nil {
			b.Fatal(err)
		}
		defer p.pc.Close()
		peers[i] = p
	}
	lc := ListenConfig{MaxConnectionsPerIP: -1, HandshakesPerIP: -1, OfflineRate: -1, OfflineBytes: -1}
	before := heapAlloc()
	l, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	addr := key(l.Addr().(*net.UDPAddr).AddrPort())
	accepted := make(chan *Conn, conns)
	go func() {
		for {
			c, err := l.AcceptConn()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for i, p := range peers {
		p.server = addr
		if err := p.connect(-1 - int64(i)); err != nil {
			b.Fatalf("peer %d: %v", i, err)
		}
	}
	server := make([]*Conn, 0, conns)
	for range conns {
		select {
		case c := <-accepted:
			server = append(server, c)
		case <-time.After(5 * time.Second):
			b.Fatal("not every connection was accepted")
		}
	}
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.readLoop()
		}()
	}
	settle(b, server)
	after := heapAlloc()
	scratch := make([]byte, 0, 1500)
	// The peers tick as game clients do, every 100 ms of real time: the
	// benchmark measures the server's CPU per second of that.
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	round := func() {
		for t := range 5 {
			now := time.Now()
			for _, p := range peers {
				p.tick(t == 0, now.UnixMilli(), scratch)
			}
			<-ticker.C
		}
	}
	round()
	wakeups := func() (n uint64) {
		for _, c := range server {
			n += c.wakeups.Load()
		}
		return n
	}
	b.ResetTimer()
	cpu0, wall0, wake0 := cpuTime(b), time.Now(), wakeups()
	for b.Loop() {
		round()
	}
	cpu, wall, wake := cpuTime(b)-cpu0, time.Since(wall0), wakeups()-wake0
	b.ReportMetric(float64(cpu.Milliseconds())/wall.Seconds(), "cpu-ms/s")
	b.ReportMetric(float64(after-before)/conns, "heap-B/conn")
	b.ReportMetric(float64(wake)/wall.Seconds()/conns, "wakeups/s/conn")
	st := l.Stats()
	if st.Connections != conns || st.Handshaking != 0 {
		b.Fatalf("got %d connections, %d in their handshake, want %d, 0", st.Connections, st.Handshaking, conns)
	}
}
