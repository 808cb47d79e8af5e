//go:build linux

package raknet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	"golang.org/x/net/ipv4"
)

// withBatching runs f with batched socket I/O switched on or off for the
// endpoints it opens.
func withBatching(on bool, f func()) {
	old := batching
	batching = on
	defer func() { batching = old }()
	f()
}

// processCPU returns the CPU time the process used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pinger floods a listener with unconnected pings from one socket, window
// in flight, and counts the pongs. It reads and writes in batches itself,
// so that what it costs stays small and the same whatever the listener
// does.
type pinger struct {
	conn   *net.UDPConn
	bio    *batchIO
	to     netip.AddrPort
	ping   []byte
	window int
	got    int        // pongs read but not yet consumed by next
	mu     sync.Mutex // for bio's flush
}

func newPinger(tb testing.TB, to netip.AddrPort, src netip.Addr, window int) *pinger {
	tb.Helper()
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	p := &pinger{conn: conn, bio: newBatchIO(conn, batchSize), to: to, window: window}
	if p.bio == nil {
		tb.Fatal("no batched I/O")
	}
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	p.ping = ping.Append(nil)
	p.send(window)
	return p
}

// send sends n pings in as few calls as it can.
func (p *pinger) send(n int) {
	for n > 0 {
		for ; n > 0 && !p.bio.full(); n-- {
			p.bio.add(p.ping, p.to)
		}
		p.mu.Lock()
		p.bio.flush(&p.mu)
		p.mu.Unlock()
	}
}

// next waits for one pong, sending a ping for each pong it reads; it puts
// the window back when nothing came for a while (a datagram was dropped).
func (p *pinger) next(tb testing.TB) {
	for p.got == 0 {
		_ = p.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := p.bio.read()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.send(p.window)
			continue
		case err != nil:
			tb.Fatal(err)
		}
		for i := range n {
			if b, _, _ := p.bio.message(i); len(b) > 0 && b[0] == wire.IDUnconnectedPong {
				p.got++
			}
		}
		p.send(p.got)
	}
	p.got--
}

// BenchmarkListenerPongs measures a listener answering unconnected pings
// over loopback, with one datagram per system call (batch=off, as before
// batching and on other systems) and with recvmmsg/sendmmsg (batch=on):
// one op is one pong. cpu-ns/pong is the CPU time of the whole process,
// the pinger's included, per pong; window is the pings in flight.
// Compare with benchstat over repeated runs (-count): the machine's noise
// is larger than one run shows.
func BenchmarkListenerPongs(b *testing.B) {
	for _, window := range []int{1, 32} {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("window=%d/batch=%s", window, map[bool]string{false: "off", true: "on"}[on])
			b.Run(name, func(b *testing.B) {
				l := listenBench(b, on, ListenConfig{})
				benchPongs(b, l, window, 1)
			})
		}
	}
}

// BenchmarkListenerPongsSockets measures pongs from a listener with one
// socket and with two on one address (SO_REUSEPORT, a reader each), for
// eight pingers from distinct addresses, whose flows the kernel spreads
// over the sockets. One op is one pong; batching is on.
func BenchmarkListenerPongsSockets(b *testing.B) {
	for _, sockets := range []int{1, 2} {
		b.Run(fmt.Sprintf("sockets=%d", sockets), func(b *testing.B) {
			l := listenBench(b, true, ListenConfig{Sockets: sockets})
			if len(l.ep.socks) != sockets {
				b.Fatalf("got %d sockets, want %d", len(l.ep.socks), sockets)
			}
			benchPongs(b, l, 32, 8)
		})
	}
}

// listenBench starts a listener on 127.0.0.1 with or without batched
// I/O, its offline rate limits off, answering pings with MOTD-sized pong
// data; it is closed when the benchmark ends.
func listenBench(tb testing.TB, batch bool, lc ListenConfig) *Listener {
	tb.Helper()
	lc.OfflineRate, lc.OfflineBytes = -1, -1
	var l *Listener
	var err error
	withBatching(batch, func() { l, err = lc.Listen("127.0.0.1:0") })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	l.PongData([]byte("MCPE;Basalt bench;924;1.21.90;0;5000;0;bench;Survival;1;19132;19133;"))
	return l
}

// benchPongs runs the pong benchmark against l with pingers pingers, each
// from its own address and window pings in flight.
func benchPongs(b *testing.B, l *Listener, window, pingers int) {
	to := netip.MustParseAddrPort(l.Addr().String())
	ps := make([]*pinger, pingers)
	for i := range ps {
		ps[i] = newPinger(b, to, netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)}), window)
	}
	cpu0 := processCPU(b)
	start := time.Now()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		ps[i].next(b)
		if i++; i == len(ps) {
			i = 0
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pongs/s")
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/pong")
}

// BenchmarkBatchRead compares what it costs to read a batch of datagrams
// with golang.org/x/net/ipv4's ReadBatch and with the endpoint's own
// recvmmsg: one op is one batch of batchSize datagrams sent and read.
func BenchmarkBatchRead(b *testing.B) {
	open := func() (*net.UDPConn, *batchIO) {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		_ = c.SetReadBuffer(socketBuffer)
		return c, newBatchIO(c, batchSize)
	}
	_, tx := open()
	rx, rbio := open()
	to := netip.MustParseAddrPort(rx.LocalAddr().String())
	payload := make([]byte, 100)
	var mu sync.Mutex
	fill := func() {
		for range batchSize {
			tx.add(payload, to)
		}
		mu.Lock()
		tx.flush(&mu)
		mu.Unlock()
	}
	b.Run("x-net-ipv4", func(b *testing.B) {
		pc := ipv4.NewPacketConn(rx)
		ms := make([]ipv4.Message, batchSize)
		for i := range ms {
			ms[i].Buffers = [][]byte{make([]byte, readSlot)}
		}
		b.ReportAllocs()
		for b.Loop() {
			fill()
			for got := 0; got < batchSize; {
				n, err := pc.ReadBatch(ms, 0)
				if err != nil {
					b.Fatal(err)
				}
				got += n
			}
		}
	})
	b.Run("x-sys-unix", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fill()
			for got := 0; got < batchSize; {
				n, err := rbio.read()
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					_, _, _ = rbio.message(i)
				}
				got += n
			}
		}
	})
}
