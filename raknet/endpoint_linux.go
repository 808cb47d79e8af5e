package raknet

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchSize is how many datagrams one recvmmsg takes and one sendmmsg
// sends at most on a listener's socket: enough to drain what a busy
// socket gathers between two wake-ups of its reader, at 48 KiB of receive
// buffers (and up to twice that to send) per socket. dialBatchSize is the
// same for a dialer's socket, which has one peer.
const (
	batchSize     = 32
	dialBatchSize = 8
)

// writeSlot is the size of a queued datagram's buffer: the largest MTU.
// Anything larger is written on its own.
const writeSlot = MaxMTU

// batchIO reads and writes one UDP socket with recvmmsg and sendmmsg,
// calling the kernel directly through golang.org/x/sys/unix rather than
// golang.org/x/net/ipv4's ReadBatch: that allocates a net.UDPAddr per
// datagram (BenchmarkBatchRead), this nothing. Reads are made by the
// socket's reader only; the write queues are guarded by socket.mu.
type batchIO struct {
	rc     syscall.RawConn
	family uint16 // unix.AF_INET or unix.AF_INET6: how destinations are written

	// Receiving: size messages, each one slot of rbuf and one name.
	rmsgs  []unix.Mmsghdr
	riov   []unix.Iovec
	rnames []unix.RawSockaddrInet6
	rbuf   []byte
	rn     int // messages the last recvmmsg took
	rerr   error
	readFn func(fd uintptr) bool
	// zones names IPv6 scope IDs (link-local peers), as package net
	// would; the reader fills it as peers appear.
	zones map[uint32]string

	// Sending: datagrams are added to q[active]; a flush swaps the queues
	// and sends the full one without the lock, while writers fill the
	// other. flushing is set while one is sent. All guarded by socket.mu
	// but the queue being sent, which only the flusher touches.
	q        [2]writeQueue
	active   int
	flushing bool
}

// writeQueue is a batch of datagrams to send with sendmmsg.
type writeQueue struct {
	b       *batchIO
	msgs    []unix.Mmsghdr
	iov     []unix.Iovec
	names   []unix.RawSockaddrInet6
	buf     []byte // allocated when first used
	n       int    // queued
	sent    int    // of them, taken by the kernel so far
	noWait  bool   // a full send buffer drops the rest instead of waiting
	writeFn func(fd uintptr) bool
}

// readSlot is the size of a received datagram's buffer: one byte more than
// the largest taken, so a datagram that fills it was larger.
const readSlot = maxReadIn + 1

// newBatchIO returns batched I/O for udp of size datagrams per call, or
// nil if its socket is not one recvmmsg can serve (a family other than
// IPv4 and IPv6).
func newBatchIO(udp *net.UDPConn, size int) *batchIO {
	rc, err := udp.SyscallConn()
	if err != nil {
		return nil
	}
	var family int
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		family, ferr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil || ferr != nil || (family != unix.AF_INET && family != unix.AF_INET6) {
		return nil
	}
	b := &batchIO{
		rc:     rc,
		family: uint16(family),
		rmsgs:  make([]unix.Mmsghdr, size),
		riov:   make([]unix.Iovec, size),
		rnames: make([]unix.RawSockaddrInet6, size),
		rbuf:   make([]byte, size*readSlot),
	}
	for i := range size {
		b.riov[i].Base = &b.rbuf[i*readSlot]
		b.riov[i].SetLen(readSlot)
		h := &b.rmsgs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.rnames[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Iov = &b.riov[i]
		h.SetIovlen(1)
	}
	for i := range b.q {
		q := &b.q[i]
		q.b = b
		q.msgs = make([]unix.Mmsghdr, size)
		q.iov = make([]unix.Iovec, size)
		q.names = make([]unix.RawSockaddrInet6, size)
		q.writeFn = q.send
	}
	// Made once: a method value passed to RawConn.Read on every call
	// would allocate.
	b.readFn = b.recv
	return b
}

// read waits for datagrams and takes up to batchSize of them in one
// system call; message returns each.
func (b *batchIO) read() (int, error) {
	if err := b.rc.Read(b.readFn); err != nil {
		return 0, err
	}
	return b.rn, b.rerr
}

// recv is the RawConn.Read callback: false asks to wait for the socket to
// be readable.
func (b *batchIO) recv(fd uintptr) bool {
	for i := range b.rn {
		b.rmsgs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
		b.rmsgs[i].Hdr.Flags = 0
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.rmsgs[0])),
			uintptr(len(b.rmsgs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			b.rn, b.rerr = int(n), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		b.rn, b.rerr = 0, errno
		return true
	}
}

// message returns datagram i of the last read, its sender, and whether
// the kernel truncated it. b is valid until the next read.
func (b *batchIO) message(i int) (p []byte, from netip.AddrPort, truncated bool) {
	m := &b.rmsgs[i]
	p = b.rbuf[i*readSlot : i*readSlot+int(m.Len)]
	return p, b.sender(&b.rnames[i]), m.Hdr.Flags&unix.MSG_TRUNC != 0
}

// sender converts a received socket address, as package net would:
// IPv4-mapped addresses stay mapped, scope IDs become zones.
func (b *batchIO) sender(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), portOf(sa4.Port))
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			a = a.WithZone(b.zone(sa.Scope_id))
		}
		return netip.AddrPortFrom(a, portOf(sa.Port))
	}
	return netip.AddrPort{}
}

// zone names an interface index as package net does: its name, or the
// number when it has none.
func (b *batchIO) zone(id uint32) string {
	if z, ok := b.zones[id]; ok {
		return z
	}
	z := strconv.FormatUint(uint64(id), 10)
	if ifi, err := net.InterfaceByIndex(int(id)); err == nil {
		z = ifi.Name
	}
	if b.zones == nil {
		b.zones = make(map[uint32]string)
	}
	if len(b.zones) < 64 {
		b.zones[id] = z
	}
	return z
}

// portOf reads a port in network byte order from a socket address.
func portOf(p uint16) uint16 {
	return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&p))[:])
}

// setPort writes a port in network byte order into a socket address.
func setPort(dst *uint16, port uint16) {
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(dst))[:], port)
}

// room returns the free slots of the queue writers add to.
func (b *batchIO) room() int {
	q := &b.q[b.active]
	return len(q.msgs) - q.n
}

// full reports whether the queue writers add to has no free slot.
func (b *batchIO) full() bool {
	q := &b.q[b.active]
	return q.n == len(q.msgs)
}

// add copies a datagram to ap into the queue and reports whether it did:
// a datagram over writeSlot bytes, a peer with a zone or one the socket's
// family cannot reach are left to an ordinary write, and so is any when
// the queue is full.
func (b *batchIO) add(p []byte, ap netip.AddrPort) bool {
	q := &b.q[b.active]
	a := ap.Addr()
	if len(p) > writeSlot || a.Zone() != "" || q.n == len(q.msgs) {
		return false
	}
	i := q.n
	sa := &q.names[i]
	h := &q.msgs[i].Hdr
	switch {
	case b.family == unix.AF_INET:
		if a = a.Unmap(); !a.Is4() {
			return false
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}
		setPort(&sa4.Port, ap.Port())
		h.Namelen = unix.SizeofSockaddrInet4
	default:
		*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.As16()}
		setPort(&sa.Port, ap.Port())
		h.Namelen = unix.SizeofSockaddrInet6
	}
	if q.buf == nil {
		q.buf = make([]byte, len(q.msgs)*writeSlot)
		for j := range q.msgs {
			q.iov[j].Base = &q.buf[j*writeSlot]
			q.msgs[j].Hdr.Iov = &q.iov[j]
			q.msgs[j].Hdr.SetIovlen(1)
			q.msgs[j].Hdr.Name = (*byte)(unsafe.Pointer(&q.names[j]))
		}
	}
	copy(q.buf[i*writeSlot:], p)
	q.iov[i].SetLen(len(p))
	q.n++
	return true
}

// flush sends what is queued, and what writers queue meanwhile, unless
// another flush is under way (which then sends it). mu, the socket's
// lock, is held on entry and on return, but not while sending: a send
// may wait for room in the socket's buffer, and nobody waits for it
// then.
func (b *batchIO) flush(mu *sync.Mutex) {
	for !b.flushing && b.q[b.active].n > 0 {
		b.flushing = true
		q := &b.q[b.active]
		b.active ^= 1
		mu.Unlock()
		q.sent = 0
		_ = b.rc.Write(q.writeFn)
		q.n, q.sent = 0, 0
		mu.Lock()
		b.flushing = false
	}
}

// flushNow sends what is queued without waiting for anything, dropping
// what the socket has no room for: the socket is about to close. mu is
// held; a flush under way is left to finish by itself.
func (b *batchIO) flushNow() {
	q := &b.q[b.active]
	if b.flushing || q.n == 0 {
		return
	}
	q.sent, q.noWait = 0, true
	_ = b.rc.Control(func(fd uintptr) { q.send(fd) })
	q.n, q.sent, q.noWait = 0, 0, false
}

// send is the RawConn.Write callback: false asks to wait for the socket to
// be writable (its send buffer is full).
func (q *writeQueue) send(fd uintptr) bool {
	for q.sent < q.n {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&q.msgs[q.sent])),
			uintptr(q.n-q.sent), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
		case errno == unix.EAGAIN:
			if q.noWait {
				q.sent = q.n
				return true
			}
			return false
		case errno != 0 || n == 0:
			// sendmmsg reports an error only for the first datagram
			// it could not send: skip that one.
			q.sent++
		default:
			q.sent += int(n)
		}
	}
	return true
}

// reusePortBalances reports whether SO_REUSEPORT spreads the datagrams of
// one address over the sockets bound to it: on Linux it does, by a hash
// of each flow's addresses.
const reusePortBalances = true

// listenReusePort opens a UDP socket with SO_REUSEPORT set, so that more
// sockets of this user can bind the same address. Other users cannot:
// Linux lets only sockets of the same effective UID share the port.
func listenReusePort(network, address string) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	return lc.ListenPacket(context.Background(), network, address)
}
