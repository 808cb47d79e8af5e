package raknet

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Socket constants shared by listener and dialer.
const (
	// socketBuffer is the kernel buffer size requested for sockets.
	socketBuffer = 4 << 20
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
	// maxSockets bounds ListenConfig.Sockets: more sockets than cores buy
	// nothing, and each holds its reader and its buffers.
	maxSockets = 64
)

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

// endpoint owns the UDP sockets of a Listener or of a dialed connection:
// their only readers, their writes, and the table of peers that closed
// recently, whose stale data is still acknowledged. A Listener may have
// several sockets on one address (ListenConfig.Sockets), each with its
// reader; a dialer has one. Its methods are safe for concurrent use;
// connections write through it after releasing their locks.
//
// On Linux a UDP socket is read and written in batches (recvmmsg,
// sendmmsg; see endpoint_linux.go): a reader takes what the socket holds
// in one call, and the replies produced while it handles them (pongs,
// ACKs, a connection's data) leave together in one call once it is done.
// Writes from anywhere else leave at once: a connection's pass of several
// datagrams (a reply and its ACK) in one sendmmsg, or joining a reader's
// batch while one is collected (endpoint_outbox.go); a lone datagram in
// one call.
type endpoint struct {
	socks []*socket
	local net.Addr
	done  chan struct{} // closed by close
	once  sync.Once

	writeErrs atomic.Uint32 // write errors seen, to log only the first few
	// maxIn is the largest datagram handed on: maxDatagramIn, or
	// maxReadIn for a listener that takes PROXY headers, whose gate holds
	// sources other than its trusted proxies to maxDatagramIn. Set before
	// the readers start.
	maxIn int
	// closing stops the readers from collecting writes into their
	// batches: set by stopBatching, before the last datagrams leave.
	closing atomic.Bool
	// n counts what the sockets carried and what they dropped for its
	// size; a Listener counts into the same set.
	n *counters

	mu sync.Mutex
	// recent holds, until when, the peers that closed their connection:
	// their data datagrams are still acknowledged (see lingerTime).
	recent map[netip.AddrPort]time.Time
	// recentOrder holds recent's entries in the order they were added,
	// which is also the order they expire in, so expiry never scans.
	recentOrder []recentEntry
}

// socket is one of an endpoint's sockets and the state of its reader.
type socket struct {
	pc  net.PacketConn
	udp *net.UDPConn // pc as a UDPConn, for allocation-free I/O; nil for others
	// bio batches the socket's reads and the reader's writes; nil reads
	// and writes one datagram per call (other systems, PacketConns that
	// are not a *net.UDPConn, or batching switched off).
	bio *batchIO

	// received counts the datagrams read from the socket.
	received atomic.Uint64

	// cur tags the peer whose datagram the reader is handling (peerTag),
	// 0 when none: a cheap filter for the writes to collect.
	cur atomic.Uint64
	// mu guards collecting and bio's write queue. While collecting is set
	// (the reader is handling a batch), writes to the peer tagged in cur
	// are queued and sent together when the batch is handled.
	mu         sync.Mutex
	collecting bool
}

// recentEntry is an entry of endpoint.recent, in recentOrder.
type recentEntry struct {
	addr  netip.AddrPort
	until time.Time
}

// batching switches batched socket I/O on; BASALT_RAKNET_BATCH=0 turns it
// off (one datagram per system call, as on other systems), to compare the
// two or to rule batching out when diagnosing a problem.
var batching = os.Getenv("BASALT_RAKNET_BATCH") != "0"

// newEndpoint takes over pc, a dialer's socket; see newEndpointSize.
func newEndpoint(pc net.PacketConn) *endpoint { return newEndpointSize(dialBatchSize, pc) }

// newEndpointSize takes over pcs, sockets bound to one address, to be read
// and written in batches of up to batch datagrams, raising their kernel
// buffers so bursts from many peers do not overflow them (failing to is
// harmless).
func newEndpointSize(batch int, pcs ...net.PacketConn) *endpoint {
	e := &endpoint{local: pcs[0].LocalAddr(), done: make(chan struct{}), n: new(counters), maxIn: maxDatagramIn}
	for _, pc := range pcs {
		s := &socket{pc: pc}
		if udp, ok := pc.(*net.UDPConn); ok {
			_ = udp.SetReadBuffer(socketBuffer)
			_ = udp.SetWriteBuffer(socketBuffer)
			s.udp = udp
			if batching {
				s.bio = newBatchIO(udp, batch)
			}
		}
		e.socks = append(e.socks, s)
	}
	return e
}

// openSockets opens a listener's sockets on address: one, or n bound to
// the same address with SO_REUSEPORT where the kernel spreads datagrams
// over them by flow (Linux). Elsewhere n > 1 opens one socket. A listen
// hook is called n times, after the first with the first socket's own
// address (its port chosen), and must open sockets that can share it.
func openSockets(listen func(network, address string) (net.PacketConn, error), network, address string, n int) ([]net.PacketConn, error) {
	n = min(max(n, 1), maxSockets)
	if listen == nil {
		listen = net.ListenPacket
		if n > 1 && reusePortBalances {
			listen = listenReusePort
		} else {
			n = 1
		}
	}
	pcs := make([]net.PacketConn, 0, n)
	for range n {
		pc, err := listen(network, address)
		if err != nil {
			for _, pc := range pcs {
				_ = pc.Close()
			}
			return nil, err
		}
		if len(pcs) == 0 {
			address = pc.LocalAddr().String()
		}
		pcs = append(pcs, pc)
	}
	return pcs, nil
}

// read reads one datagram.
func (s *socket) read(buf []byte) (int, netip.AddrPort, error) {
	if s.udp != nil {
		return s.udp.ReadFromUDPAddrPort(buf)
	}
	n, addr, err := s.pc.ReadFrom(buf)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	return n, addrPortOf(addr), nil
}

// handler takes one datagram read from a socket, with the time it was
// read; b is valid only during the call.
type handler func(b []byte, from netip.AddrPort, now time.Time)

// readLoop reads datagrams from every socket, one reader each, and hands
// each non-empty one of at most maxIn bytes to handle, until the
// sockets are closed. With several sockets handle runs on each reader at
// once; see readEach for a handler per reader.
func (e *endpoint) readLoop(handle handler) {
	e.readEach(func() handler { return handle })
}

// readEach is readLoop with a handler of each reader's own: each socket's
// reader calls newReader once, before its first read, and hands its
// datagrams to the handler it returned, from that goroutine only. So the
// scratch state a handler keeps (a reply buffer, a table) belongs to one
// reader and needs no lock; what the handlers share must be safe for
// concurrent use.
func (e *endpoint) readEach(newReader func() handler) {
	var wg sync.WaitGroup
	for _, s := range e.socks[1:] {
		wg.Go(func() { e.readSocket(s, newReader()) })
	}
	e.readSocket(e.socks[0], newReader())
	wg.Wait()
}

// readSocket is the reader of one socket.
func (e *endpoint) readSocket(s *socket, handle handler) {
	if s.bio != nil {
		e.readBatches(s, handle)
		return
	}
	// One byte more than the largest datagram taken: a datagram that
	// fills the buffer was larger (the kernel truncates it).
	buf := make([]byte, maxReadIn+1)
	for {
		n, from, err := s.read(buf)
		if err != nil {
			if e.readFailed(err) {
				return
			}
			continue
		}
		s.received.Add(1)
		e.n.in(n)
		if n == 0 {
			continue
		}
		if n > e.maxIn {
			e.n.oversize.Add(1)
			continue
		}
		handle(buf[:n], from, time.Now())
	}
}

// readBatches is the reader of a socket with batched I/O: it takes up to
// its batch size of datagrams per wake-up, handles them, then sends the replies
// they produced in one go.
func (e *endpoint) readBatches(s *socket, handle handler) {
	for {
		n, err := s.bio.read()
		if err != nil {
			if e.readFailed(err) {
				return
			}
			continue
		}
		now := time.Now()
		s.received.Add(uint64(n))
		s.mu.Lock()
		s.collecting = !e.closing.Load()
		s.mu.Unlock()
		for i := range n {
			b, from, truncated := s.bio.message(i)
			e.n.in(len(b))
			if len(b) == 0 {
				continue
			}
			if truncated || len(b) > e.maxIn {
				e.n.oversize.Add(1)
				continue
			}
			s.cur.Store(peerTag(from))
			handle(b, from, now)
		}
		s.cur.Store(0)
		s.mu.Lock()
		s.collecting = false
		s.bio.flush(&s.mu)
		s.mu.Unlock()
	}
}

// readFailed reports whether a read error ends the reader: the socket was
// closed. Other errors (ICMP unreachable reported on read) are retried
// after a pause, so one that repeats cannot spin the reader.
func (e *endpoint) readFailed(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return true
	}
	select {
	case <-e.done:
		return true
	default:
	}
	time.Sleep(readErrorBackoff)
	return false
}

// peerTag returns a non-zero tag for a peer address, the same for its
// IPv4-mapped and plain forms. Tags of IPv4 peers are unique; those of
// IPv6 peers are a hash, whose rare collisions only make a write wait for
// the end of a reader's batch.
func peerTag(ap netip.AddrPort) uint64 {
	a := ap.Addr().Unmap()
	if a.Is4() {
		v4 := a.As4()
		return 1<<63 | uint64(binary.BigEndian.Uint32(v4[:]))<<16 | uint64(ap.Port())
	}
	v6 := a.As16()
	h := binary.BigEndian.Uint64(v6[:8])*0x9e3779b97f4a7c15 ^ binary.BigEndian.Uint64(v6[8:])
	return 1<<62 | (h*0xff51afd7ed558ccd^uint64(ap.Port()))>>2
}

// write sends one datagram to ap, as the socket reported the peer's
// address (IPv4-mapped on a dual-stack socket). A write the reader makes
// while it handles a datagram from ap is queued, b copied, and sent with
// the rest of its batch's replies; any other leaves at once. An error of
// a queued write is counted when it is sent, not returned.
func (e *endpoint) write(b []byte, ap netip.AddrPort) error {
	e.n.out(len(b))
	tag := peerTag(ap)
	for _, s := range e.socks {
		if s.bio != nil && s.cur.Load() == tag && e.queue(s, b, ap) {
			return nil
		}
	}
	return e.socks[tag%uint64(len(e.socks))].write(b, ap)
}

// queue adds a datagram to s's batch if its reader is collecting one, and
// reports whether it did. A full batch is sent first.
func (e *endpoint) queue(s *socket, b []byte, ap netip.AddrPort) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.collecting {
		return false
	}
	if s.bio.full() {
		s.bio.flush(&s.mu)
	}
	return s.collecting && s.bio.add(b, ap)
}

// write sends one datagram at once.
func (s *socket) write(b []byte, ap netip.AddrPort) error {
	var err error
	if s.udp != nil {
		_, err = s.udp.WriteToUDPAddrPort(b, ap)
	} else {
		_, err = s.pc.WriteTo(b, net.UDPAddrFromAddrPort(ap))
	}
	return err
}

// logWriteError reports whether a write error is among the first few,
// which are worth a debug line: a socket that fails keeps failing.
func (e *endpoint) logWriteError() bool { return e.writeErrs.Add(1) <= 3 }

// stopBatching makes every write from now on leave at once rather than
// join a reader's batch, and sends what the batches hold: the goodbyes a
// closing listener writes next then never wait on a batch that close could
// cut short.
func (e *endpoint) stopBatching() {
	e.closing.Store(true)
	for _, s := range e.socks {
		if s.bio == nil {
			continue
		}
		s.mu.Lock()
		s.collecting = false
		s.bio.flushNow()
		s.mu.Unlock()
	}
}

// close closes the sockets, ending the read loops; replies still queued
// leave first if the sockets have room for them (close waits for
// nothing). It is safe to call more than once.
func (e *endpoint) close() {
	e.once.Do(func() {
		close(e.done)
		for _, s := range e.socks {
			if s.bio != nil {
				s.mu.Lock()
				s.collecting = false
				s.bio.flushNow()
				s.mu.Unlock()
			}
			_ = s.pc.Close()
		}
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
// and reports whether the peer is one. It is called by the readers.
func (e *endpoint) ackStale(b []byte, from netip.AddrPort, now time.Time) bool {
	k := key(from)
	e.mu.Lock()
	until, ok := e.recent[k]
	e.mu.Unlock()
	if !ok || !now.Before(until) {
		return false
	}
	bp := datagramBuffers.Get().(*[]byte)
	if ack := appendAckFor((*bp)[:0], b); ack != nil {
		*bp = ack
		_ = e.write(ack, from)
	}
	datagramBuffers.Put(bp)
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
