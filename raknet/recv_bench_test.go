package raknet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// The receive path's cost per datagram: a hand-driven peer on a loopback
// socket sends data datagrams to a Listener, and the benchmark reads each
// message from the accepted Conn with ReadPacket. One op is one datagram,
// so allocs/op and B/op are per datagram, the reader goroutine's, the
// Conn's ACKs and the delivered message's own buffer included. The peer
// builds every datagram in one reused buffer and never reads the server's
// ACKs (the kernel drops them once its socket buffer is full), so it
// allocates nothing itself.

// benchPeer is a RakNet client driven by hand over a UDP socket.
type benchPeer struct {
	tb     testing.TB
	pc     *net.UDPConn
	server netip.AddrPort
	buf    []byte // datagrams are built here
	in     []byte // datagrams are read here

	seq, rel, ord uint32 // next datagram number, reliable and order index
	splitID       uint16
}

// benchConnect connects a benchPeer to a new listener and returns it with
// the accepted connection. Both are closed when the benchmark ends.
func benchConnect(tb testing.TB) (*benchPeer, *Conn) {
	tb.Helper()
	l, err := ListenConfig{}.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = pc.Close() })
	p := &benchPeer{tb: tb, pc: pc, server: l.Addr().(*net.UDPAddr).AddrPort(),
		buf: make([]byte, 0, MaxMTU), in: make([]byte, maxDatagramSize)}

	const mtu, guid = 1400, -7
	req1 := wire.OpenConnectionRequest1{Protocol: 11, Size: mtu - ipv4Overhead}
	p.send(req1.Append(nil))
	var rep1 wire.OpenConnectionReply1
	if _, err := rep1.Decode(p.expect(wire.IDOpenConnectionReply1)); err != nil {
		tb.Fatal(err)
	}
	req2 := wire.OpenConnectionRequest2{ServerAddr: p.server, MTU: mtu, ClientGUID: guid,
		HasCookie: rep1.Security, Cookie: rep1.Cookie}
	p.send(req2.Append(nil))
	p.expect(wire.IDOpenConnectionReply2)
	cr := wire.ConnectionRequest{ClientGUID: guid, Time: 1}
	p.sendMessage(wire.Reliable, cr.Append(nil))
	p.acceptMessage(wire.IDConnectionRequestAccepted)
	nic := wire.NewIncomingConnection{ServerAddr: p.server}
	p.sendMessage(wire.ReliableOrdered, nic.Append(nil))

	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := l.AcceptConn()
		accepted <- c
	}()
	select {
	case c := <-accepted:
		if c == nil {
			tb.Fatal("accept failed")
		}
		tb.Cleanup(func() { _ = c.Close() })
		return p, c
	case <-time.After(5 * time.Second):
		tb.Fatal("accept: no connection within 5 s")
		return nil, nil
	}
}

func (p *benchPeer) send(b []byte) {
	if _, err := p.pc.WriteToUDPAddrPort(b, p.server); err != nil {
		p.tb.Fatalf("send: %v", err)
	}
}

// read returns the next datagram from the server, failing after a second.
func (p *benchPeer) read() []byte {
	_ = p.pc.SetReadDeadline(time.Now().Add(time.Second))
	for {
		n, from, err := p.pc.ReadFromUDPAddrPort(p.in)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				p.tb.Fatal("no datagram from the server within 1 s")
			}
			p.tb.Fatalf("read: %v", err)
		}
		if key(from) == p.server && n > 0 {
			return p.in[:n]
		}
	}
}

// expect reads until a datagram starting with id arrives.
func (p *benchPeer) expect(id byte) []byte {
	for {
		if b := p.read(); b[0] == id {
			return b
		}
	}
}

// acceptMessage reads data datagrams, acknowledging each, until one
// carries an unsplit message starting with id.
func (p *benchPeer) acceptMessage(id byte) {
	for {
		b := p.read()
		if b[0]&wire.FlagValid == 0 || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
			continue
		}
		var h wire.DatagramHeader
		n, err := h.Decode(b)
		if err != nil {
			p.tb.Fatal(err)
		}
		ack := wire.Ack{Ranges: []wire.AckRange{{Start: h.Number, End: h.Number}}}
		found := false
		for rest := b[n:]; len(rest) > 0; {
			var f wire.Frame
			k, err := f.Decode(rest)
			if err != nil {
				p.tb.Fatal(err)
			}
			rest = rest[k:]
			found = found || !f.Split && f.Payload[0] == id
		}
		p.send(ack.Append(nil))
		if found {
			return
		}
	}
}

// frame returns the next frame of reliability rel carrying payload, with
// the next indexes on channel 0.
func (p *benchPeer) frame(rel wire.Reliability, payload []byte) wire.Frame {
	f := wire.Frame{Reliability: rel, Payload: payload}
	if rel.Reliable() {
		f.ReliableIndex = wire.Uint24(p.rel)
		p.rel++
	}
	if rel.Ordered() {
		f.OrderIndex = wire.Uint24(p.ord)
		p.ord++
	}
	return f
}

// datagram builds data datagram number seq holding f in p.buf.
func (p *benchPeer) datagram(seq uint32, f *wire.Frame) []byte {
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(seq)}
	p.buf = f.Append(h.Append(p.buf[:0]))
	return p.buf
}

// sendMessage sends payload in one frame of one datagram.
func (p *benchPeer) sendMessage(rel wire.Reliability, payload []byte) {
	f := p.frame(rel, payload)
	p.send(p.datagram(p.seq, &f))
	p.seq++
}

// stallGuard closes c if no datagram has been delivered for 10 s, so that
// a benchmark whose datagram was lost fails instead of hanging in
// ReadPacket. progress is bumped by the benchmark.
func stallGuard(tb testing.TB, c *Conn, progress *atomic.Uint64) {
	done := make(chan struct{})
	tb.Cleanup(func() { close(done) })
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		last := progress.Load()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				now := progress.Load()
				if now == last {
					_ = c.Close()
					return
				}
				last = now
			}
		}
	}()
}

// perDatagram reports the allocations per op (one datagram) as a
// fraction, which allocs/op rounds down: a split message's buffer is one
// allocation spread over its fragments. Call it just before the loop and
// the function it returns just after.
func perDatagram(b *testing.B) func() {
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	return func() {
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/datagram")
	}
}

// benchPayload returns a message of size bytes starting with 0xfe, as
// Bedrock's do.
func benchPayload(size int) []byte {
	b := make([]byte, size)
	b[0] = 0xfe
	for i := 1; i < size; i++ {
		b[i] = byte(i)
	}
	return b
}

// BenchmarkConnReceive is the steady state: every datagram carries one
// reliable ordered message that fits in it, in order, each read before
// the next is sent.
func BenchmarkConnReceive(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"100B", 100}, {"1KiB", 1024}} {
		b.Run(size.name, func(b *testing.B) {
			p, c := benchConnect(b)
			var progress atomic.Uint64
			stallGuard(b, c, &progress)
			msg := benchPayload(size.n)
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			report := perDatagram(b)
			for b.Loop() {
				p.sendMessage(wire.ReliableOrdered, msg)
				got, err := c.ReadPacket()
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != size.n {
					b.Fatalf("got %d bytes, want %d", len(got), size.n)
				}
				progress.Add(1)
			}
			report()
		})
	}
	// Read into the caller's buffer: the buffer a message arrived in is
	// reused, so the steady state allocates nothing.
	b.Run("100B-Read", func(b *testing.B) {
		p, c := benchConnect(b)
		var progress atomic.Uint64
		stallGuard(b, c, &progress)
		msg := benchPayload(100)
		buf := make([]byte, 1500)
		b.SetBytes(100)
		b.ReportAllocs()
		report := perDatagram(b)
		for b.Loop() {
			p.sendMessage(wire.ReliableOrdered, msg)
			n, err := c.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			if n != 100 {
				b.Fatalf("got %d bytes, want 100", n)
			}
			progress.Add(1)
		}
		report()
	})
}

// BenchmarkConnReceiveSplit is a 4 KiB message split over four datagrams
// (1200-byte fragments), read once its last fragment is in. One op is
// one fragment's datagram.
func BenchmarkConnReceiveSplit(b *testing.B) {
	const size, fragment = 4096, 1200
	const count = (size + fragment - 1) / fragment
	p, c := benchConnect(b)
	var progress atomic.Uint64
	stallGuard(b, c, &progress)
	msg := benchPayload(size)
	b.SetBytes(fragment)
	b.ReportAllocs()
	report := perDatagram(b)
	i := 0
	for b.Loop() {
		k := i % count
		if k == 0 {
			p.splitID++
		}
		f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(p.rel),
			OrderIndex: wire.Uint24(p.ord), Split: true, SplitCount: count, SplitID: p.splitID,
			SplitIndex: uint32(k), Payload: msg[k*fragment : min((k+1)*fragment, size)]}
		p.rel++
		p.send(p.datagram(p.seq, &f))
		p.seq++
		if k == count-1 {
			p.ord++
			got, err := c.ReadPacket()
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != size {
				b.Fatalf("got %d bytes, want %d", len(got), size)
			}
			progress.Add(1)
		}
		i++
	}
	report()
}

// BenchmarkConnReceiveOutOfOrder swaps every pair of datagrams: the
// second of each pair arrives first and is held until the first fills
// the gap (and the gap may be NACKed), then both are read. One op is one
// datagram.
func BenchmarkConnReceiveOutOfOrder(b *testing.B) {
	const size = 100
	p, c := benchConnect(b)
	var progress atomic.Uint64
	stallGuard(b, c, &progress)
	msg := benchPayload(size)
	var held wire.Frame
	b.SetBytes(size)
	b.ReportAllocs()
	report := perDatagram(b)
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			// The first of the pair waits; the second goes now.
			held = p.frame(wire.ReliableOrdered, msg)
			second := p.frame(wire.ReliableOrdered, msg)
			p.send(p.datagram(p.seq+1, &second))
		} else {
			p.send(p.datagram(p.seq, &held))
			p.seq += 2
			for range 2 {
				got, err := c.ReadPacket()
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != size {
					b.Fatalf("got %d bytes, want %d", len(got), size)
				}
			}
			progress.Add(1)
		}
		i++
	}
	report()
}
