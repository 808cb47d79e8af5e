package nethernet

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDemuxQueue is how many datagrams a Demux holds for ICE before it
// drops the next: about 1.5 MB of full-size datagrams at most.
const DefaultDemuxQueue = 1024

// maxDatagram is the largest datagram a Demux keeps whole; DTLS and STUN
// stay within the path MTU.
const maxDatagram = 1500

// Demux is the net.PacketConn ICE runs on when it shares the RakNet
// listener's UDP socket: the listener hands it the STUN and DTLS
// datagrams it reads (raknet.ListenConfig.Foreign, through Deliver), and
// its writes leave from the listener's socket. Datagrams wait in a
// bounded queue; when ICE falls behind, the newest are dropped and
// counted, never the listener's reader blocked. Closing a Demux does not
// close the socket.
type Demux struct {
	local net.Addr
	write atomic.Pointer[func([]byte, netip.AddrPort) error]

	in      chan datagram
	pool    sync.Pool
	closed  chan struct{}
	once    sync.Once
	dropped atomic.Uint64

	mu       sync.Mutex
	deadline time.Time
}

// datagram is one queued datagram; b is from the pool.
type datagram struct {
	b    *[]byte
	from netip.AddrPort
}

// NewDemux returns a Demux whose queue holds queue datagrams (0 means
// DefaultDemuxQueue). Bind it to the listener once it is open.
func NewDemux(queue int) *Demux {
	if queue <= 0 {
		queue = DefaultDemuxQueue
	}
	d := &Demux{in: make(chan datagram, queue), closed: make(chan struct{})}
	d.pool.New = func() any {
		b := make([]byte, 0, maxDatagram)
		return &b
	}
	return d
}

// Bind sets the socket's address and the function that writes from it
// (raknet.Listener.WriteForeign). It must be called before ICE uses the
// Demux.
func (d *Demux) Bind(local net.Addr, write func([]byte, netip.AddrPort) error) {
	d.local = local
	d.write.Store(&write)
}

// Deliver queues datagram b from a peer, copying it; it never blocks. It
// is raknet.ListenConfig.Foreign.
func (d *Demux) Deliver(b []byte, from netip.AddrPort) {
	select {
	case <-d.closed:
		return
	default:
	}
	var p *[]byte
	if len(b) <= maxDatagram {
		p = d.pool.Get().(*[]byte)
		*p = append((*p)[:0], b...)
	} else {
		c := append([]byte(nil), b...)
		p = &c
	}
	select {
	case d.in <- datagram{b: p, from: from}:
	default:
		d.dropped.Add(1)
		d.put(p)
	}
}

func (d *Demux) put(p *[]byte) {
	if cap(*p) == maxDatagram {
		d.pool.Put(p)
	}
}

// Dropped returns how many datagrams were dropped for a full queue.
func (d *Demux) Dropped() uint64 { return d.dropped.Load() }

// errTimeout is a read past the deadline.
type errTimeout struct{}

func (errTimeout) Error() string   { return "i/o timeout" }
func (errTimeout) Timeout() bool   { return true }
func (errTimeout) Temporary() bool { return true }

// ReadFrom returns the next queued datagram.
func (d *Demux) ReadFrom(b []byte) (int, net.Addr, error) {
	d.mu.Lock()
	dl := d.deadline
	d.mu.Unlock()
	var timeout <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-d.closed:
		return 0, nil, io.EOF
	case <-timeout:
		return 0, nil, errTimeout{}
	case g := <-d.in:
		n := copy(b, *g.b)
		d.put(g.b)
		return n, net.UDPAddrFromAddrPort(g.from), nil
	}
}

// WriteTo sends b to addr from the shared socket.
func (d *Demux) WriteTo(b []byte, addr net.Addr) (int, error) {
	select {
	case <-d.closed:
		return 0, net.ErrClosed
	default:
	}
	w := d.write.Load()
	if w == nil {
		return 0, errors.New("nethernet: demux not bound")
	}
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		var err error
		if ap, err = netip.ParseAddrPort(addr.String()); err != nil {
			return 0, err
		}
	}
	if err := (*w)(b, ap); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close stops the Demux: reads return io.EOF, writes fail and datagrams
// delivered later are dropped. The shared socket stays open.
func (d *Demux) Close() error {
	d.once.Do(func() {
		close(d.closed)
		for {
			select {
			case g := <-d.in:
				d.put(g.b)
			default:
				return
			}
		}
	})
	return nil
}

// LocalAddr returns the shared socket's address.
func (d *Demux) LocalAddr() net.Addr { return d.local }

// SetDeadline sets the read deadline; writes do not block.
func (d *Demux) SetDeadline(t time.Time) error { return d.SetReadDeadline(t) }

// SetReadDeadline bounds the reads that start after it.
func (d *Demux) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	d.deadline = t
	d.mu.Unlock()
	return nil
}

// SetWriteDeadline does nothing: writes do not block.
func (d *Demux) SetWriteDeadline(time.Time) error { return nil }
