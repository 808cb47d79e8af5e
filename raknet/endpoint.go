package raknet

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Socket constants shared by listener and dialer.
const (
	// socketBuffer is the kernel buffer size requested for sockets.
	socketBuffer = 4 << 20
	// maxDatagramIn is the largest datagram read: the UDP payload of the
	// largest MTU, IP and UDP headers included, which leaves headroom for
	// peers that overshoot their MTU (some send ~1480 bytes at MTU 1492).
	// Anything larger is no RakNet datagram and is dropped before it is
	// decoded, so a peer cannot make us parse 64 KiB of ACK records.
	maxDatagramIn = MaxMTU
	// ipv4Overhead and ipv6Overhead are the IP + UDP header sizes an MTU
	// includes.
	ipv4Overhead = 28
	ipv6Overhead = 48
	// readErrorBackoff is the pause after a failed socket read that is not
	// a close, so an error that repeats (ICMP unreachable reported on
	// read) cannot spin the reader.
	readErrorBackoff = time.Millisecond
	// lingerTime is how long datagrams from a peer that closed the
	// connection are still acknowledged (without state), as TCP's
	// TIME_WAIT: a peer whose earlier ACKs were lost resends data we
	// already have, and would otherwise wait out its close timeout.
	lingerTime = time.Second
	// maxRecent bounds the peers remembered for lingerTime.
	maxRecent = 4096
)

// overhead returns the IP + UDP header size for a peer.
func overhead(ap netip.AddrPort) int {
	if ap.Addr().Unmap().Is4() {
		return ipv4Overhead
	}
	return ipv6Overhead
}

// clampMTU keeps an MTU within [MinMTU, limit].
func clampMTU(mtu, limit int) int { return min(max(mtu, MinMTU), limit) }

// maxMTUOr returns the configured MTU cap clamped to [MinMTU, MaxMTU], or
// def when none is configured.
func maxMTUOr(configured, def int) int {
	if configured == 0 {
		return def
	}
	return clampMTU(configured, MaxMTU)
}

// newGUID returns a random GUID. Client GUIDs are negative, as vanilla
// clients send them (some servers, go-raknet among them, refuse the
// others); server GUIDs are positive.
func newGUID(client bool) int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	v := binary.BigEndian.Uint64(b[:])
	if client {
		return int64(v | 1<<63)
	}
	return int64(v >> 1)
}

// key is how peers are looked up: IPv4-mapped addresses unmapped.
func key(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// addrPortOf converts a socket address to a netip.AddrPort.
func addrPortOf(addr net.Addr) netip.AddrPort {
	if ua, ok := addr.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(addr.String())
	return ap
}

// endpoint owns one UDP socket, for a Listener or for a dialed
// connection: its only reader, its writes, and the table of peers that
// closed recently, whose stale data is still acknowledged. Its methods
// are safe for concurrent use; connections write through it after
// releasing their locks.
type endpoint struct {
	pc    net.PacketConn
	udp   *net.UDPConn // pc as a UDPConn, for allocation-free I/O; nil for others
	local net.Addr
	done  chan struct{} // closed by close
	once  sync.Once

	writeErrs atomic.Uint32 // write errors seen, to log only the first few
	oversize  atomic.Uint64 // datagrams dropped for their size
	// traffic counts what the socket carried, for Listener.Stats.
	traffic traffic

	mu sync.Mutex
	// recent holds, until when, the peers that closed their connection:
	// their data datagrams are still acknowledged (see lingerTime).
	recent map[netip.AddrPort]time.Time
	// recentOrder holds recent's entries in the order they were added,
	// which is also the order they expire in, so expiry never scans.
	recentOrder []recentEntry
	// ack is the buffer stale data is acknowledged from; used only by the
	// reader.
	ack []byte
}

// recentEntry is an entry of endpoint.recent, in recentOrder.
type recentEntry struct {
	addr  netip.AddrPort
	until time.Time
}

// newEndpoint takes over pc, raising its kernel buffers so bursts from
// many peers do not overflow them (failing to is harmless).
func newEndpoint(pc net.PacketConn) *endpoint {
	e := &endpoint{pc: pc, local: pc.LocalAddr(), done: make(chan struct{})}
	if udp, ok := pc.(*net.UDPConn); ok {
		_ = udp.SetReadBuffer(socketBuffer)
		_ = udp.SetWriteBuffer(socketBuffer)
		e.udp = udp
	}
	return e
}

// read reads one datagram.
func (e *endpoint) read(buf []byte) (int, netip.AddrPort, error) {
	if e.udp != nil {
		return e.udp.ReadFromUDPAddrPort(buf)
	}
	n, addr, err := e.pc.ReadFrom(buf)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	return n, addrPortOf(addr), nil
}

// readLoop reads datagrams and hands each non-empty one of at most
// maxDatagramIn bytes to handle, with the time it was read, until the
// socket is closed. b is valid only during the call.
func (e *endpoint) readLoop(handle func(b []byte, from netip.AddrPort, now time.Time)) {
	// One byte more than the largest datagram taken: a datagram that
	// fills the buffer was larger (the kernel truncates it).
	buf := make([]byte, maxDatagramIn+1)
	for {
		n, from, err := e.read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-e.done:
				return
			default:
			}
			time.Sleep(readErrorBackoff)
			continue
		}
		e.traffic.in(n)
		if n == 0 {
			continue
		}
		if n > maxDatagramIn {
			e.oversize.Add(1)
			continue
		}
		handle(buf[:n], from, time.Now())
	}
}

// write sends one datagram to ap, as the socket reported the peer's
// address (IPv4-mapped on a dual-stack socket).
func (e *endpoint) write(b []byte, ap netip.AddrPort) error {
	var err error
	if e.udp != nil {
		_, err = e.udp.WriteToUDPAddrPort(b, ap)
	} else {
		_, err = e.pc.WriteTo(b, net.UDPAddrFromAddrPort(ap))
	}
	if err == nil {
		e.traffic.out(len(b))
	}
	return err
}

// logWriteError reports whether a write error is among the first few,
// which are worth a debug line: a socket that fails keeps failing.
func (e *endpoint) logWriteError() bool { return e.writeErrs.Add(1) <= 3 }

// close closes the socket, ending the read loop. It is safe to call more
// than once.
func (e *endpoint) close() {
	e.once.Do(func() {
		close(e.done)
		_ = e.pc.Close()
	})
}

// linger remembers a peer that closed its connection at now, so its data
// datagrams are acknowledged for lingerTime. The table is bounded: the
// oldest entry makes room.
func (e *endpoint) linger(peer netip.AddrPort, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.recent == nil {
		e.recent = make(map[netip.AddrPort]time.Time)
	}
	for len(e.recentOrder) > 0 && (!now.Before(e.recentOrder[0].until) || len(e.recent) >= maxRecent || len(e.recentOrder) >= 2*maxRecent) {
		e.forgetOldest()
	}
	until := now.Add(lingerTime)
	e.recent[peer] = until
	e.recentOrder = append(e.recentOrder, recentEntry{peer, until})
}

// forget drops a peer from the table: it connects again.
func (e *endpoint) forget(peer netip.AddrPort) {
	e.mu.Lock()
	delete(e.recent, peer)
	e.mu.Unlock()
}

// forgetOldest removes the oldest entry of recentOrder, and its peer from
// recent unless it was added again since. e.mu is held.
func (e *endpoint) forgetOldest() {
	o := e.recentOrder[0]
	if until, ok := e.recent[o.addr]; ok && until.Equal(o.until) {
		delete(e.recent, o.addr)
	}
	e.recentOrder[0] = recentEntry{}
	e.recentOrder = e.recentOrder[1:]
	if len(e.recentOrder) == 0 {
		e.recentOrder = nil
	}
}

// ackStale acknowledges data datagram b from a peer that closed recently
// and reports whether the peer is one. It is called by the reader only.
func (e *endpoint) ackStale(b []byte, from netip.AddrPort, now time.Time) bool {
	k := key(from)
	e.mu.Lock()
	until, ok := e.recent[k]
	e.mu.Unlock()
	if !ok || !now.Before(until) {
		return false
	}
	if ack := appendAckFor(e.ack[:0], b); ack != nil {
		e.ack = ack
		_ = e.write(ack, from)
	}
	return true
}

// appendAckFor appends an ACK of data datagram b to dst, or returns nil
// if b is not a data datagram.
func appendAckFor(dst, b []byte) []byte {
	var h wire.DatagramHeader
	if _, err := h.Decode(b); err != nil || b[0]&(wire.FlagACK|wire.FlagNACK) != 0 {
		return nil
	}
	var r [1]wire.AckRange
	r[0] = wire.AckRange{Start: h.Number, End: h.Number}
	a := wire.Ack{Ranges: r[:]}
	return a.Append(dst)
}
