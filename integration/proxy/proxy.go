package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest UDP payload the proxy reads in one go.
const maxDatagram = 1 << 16

// defaultListen is where a Proxy listens when Opts.Listen is empty.
const defaultListen = "127.0.0.1:0"

// Opts configures a Proxy. The zero value of every field except RemoteAddr
// is usable: nil callbacks forward every datagram once, at once.
//
// The callbacks are called from the proxy's goroutines, concurrently for
// different clients and directions, so they must be safe for concurrent
// use. b is the proxy's own copy of the datagram: a callback may keep it but
// must not modify it.
type Opts struct {
	// RemoteAddr is the server's UDP address, "host:port". It is required.
	RemoteAddr string
	// Listen is the local address clients send to. Empty means
	// "127.0.0.1:0"; "[::1]:0" listens on IPv6 loopback.
	Listen string
	// DropPacket reports whether to discard a datagram. Nil drops nothing.
	DropPacket func(d Direction, b []byte) bool
	// DelayPacket returns how long to hold a datagram before forwarding
	// it; zero or less forwards it at once. Nil delays nothing.
	DelayPacket func(d Direction, b []byte) time.Duration
	// DuplicatePacket reports whether to forward a datagram twice. Both
	// copies share one delay. Nil duplicates nothing.
	DuplicatePacket func(d Direction, b []byte) bool
}

// Stats is a snapshot of one Direction's counters. Each field is read
// atomically, but the fields are read one after another, so a snapshot
// taken while traffic flows need not be consistent across fields.
type Stats struct {
	// Received counts datagrams the proxy read in this direction.
	Received uint64
	// Forwarded counts datagrams written onward, duplicate copies
	// included. A datagram still waiting out its delay is not counted.
	Forwarded uint64
	// Dropped counts datagrams DropPacket discarded.
	Dropped uint64
	// Duplicated counts datagrams DuplicatePacket chose to send twice.
	Duplicated uint64
	// Delayed counts datagrams DelayPacket held for a positive duration.
	Delayed uint64
}

// counters are the live, atomic form of Stats.
type counters struct {
	received, forwarded, dropped, duplicated, delayed atomic.Uint64
}

// Proxy forwards UDP datagrams between clients and one server, applying
// the drop, delay and duplicate policies of its Opts. All methods are safe
// for concurrent use. Create one with New; the zero value is not usable.
type Proxy struct {
	remote *net.UDPAddr
	conn   *net.UDPConn // the socket clients send to

	drop  func(Direction, []byte) bool
	delay func(Direction, []byte) time.Duration
	dup   func(Direction, []byte) bool

	stats [numDirections]counters

	closing   chan struct{} // closed by Close; stops every goroutine
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu     sync.Mutex
	closed bool
	conns  map[netip.AddrPort]*upstream
}

// upstream is one client's connection: its own socket to the server and a
// pipe per direction.
type upstream struct {
	client netip.AddrPort
	conn   *net.UDPConn // connected to the server
	in     *pipe        // client→server
	out    *pipe        // server→client
}

// New starts a Proxy that listens on opts.Listen and forwards to
// opts.RemoteAddr. Call Close to stop it.
func New(opts Opts) (*Proxy, error) {
	if opts.RemoteAddr == "" {
		return nil, errors.New("new proxy: empty RemoteAddr")
	}
	remote, err := net.ResolveUDPAddr("udp", opts.RemoteAddr)
	if err != nil {
		return nil, fmt.Errorf("resolve remote address: %w", err)
	}
	listen := opts.Listen
	if listen == "" {
		listen = defaultListen
	}
	laddr, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, fmt.Errorf("resolve listen address: %w", err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	p := &Proxy{
		remote:  remote,
		conn:    conn,
		drop:    opts.DropPacket,
		delay:   opts.DelayPacket,
		dup:     opts.DuplicatePacket,
		closing: make(chan struct{}),
		conns:   make(map[netip.AddrPort]*upstream),
	}
	p.wg.Add(1)
	go p.runListener()
	return p, nil
}

// LocalAddr returns the address clients should send to.
func (p *Proxy) LocalAddr() net.Addr { return p.conn.LocalAddr() }

// LocalPort returns the port of LocalAddr.
func (p *Proxy) LocalPort() int {
	return p.conn.LocalAddr().(*net.UDPAddr).Port
}

// Stats returns a snapshot of the counters for direction d. It panics if d
// is neither Incoming nor Outgoing.
func (p *Proxy) Stats(d Direction) Stats {
	if d != Incoming && d != Outgoing {
		panic("proxy: Stats of invalid " + d.String())
	}
	c := &p.stats[d]
	return Stats{
		Received:   c.received.Load(),
		Forwarded:  c.forwarded.Load(),
		Dropped:    c.dropped.Load(),
		Duplicated: c.duplicated.Load(),
		Delayed:    c.delayed.Load(),
	}
}

// Close closes every socket, discards datagrams still waiting out a delay
// and waits until every goroutine and timer the proxy started has stopped.
// It is idempotent: every call, concurrent or later, waits for the same
// shutdown and returns the same error.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		close(p.closing)
		p.mu.Lock()
		p.closed = true
		for _, u := range p.conns {
			u.conn.Close()
		}
		p.mu.Unlock()
		p.closeErr = p.conn.Close()
		p.wg.Wait()
	})
	return p.closeErr
}

// runListener reads datagrams from clients and hands each to its client's
// incoming pipe, creating the upstream connection on first contact.
func (p *Proxy) runListener() {
	defer p.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, addr, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error such as ECONNREFUSED
		}
		u := p.upstreamFor(addr)
		if u == nil {
			continue // closing, or the dial failed
		}
		u.in.handle(bytes.Clone(buf[:n]))
	}
}

// upstreamFor returns the connection for client, dialling the server on
// first contact. It returns nil once the proxy is closing or if the dial
// fails.
func (p *Proxy) upstreamFor(client netip.AddrPort) *upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if u, ok := p.conns[client]; ok {
		return u
	}
	conn, err := net.DialUDP("udp", nil, p.remote)
	if err != nil {
		return nil
	}
	u := &upstream{client: client, conn: conn}
	u.in = newPipe(p, Incoming, func(b []byte) error {
		_, err := conn.Write(b)
		return err
	})
	u.out = newPipe(p, Outgoing, func(b []byte) error {
		_, err := p.conn.WriteToUDPAddrPort(b, client)
		return err
	})
	p.conns[client] = u
	// runListener holds a wg count, so these Adds cannot race Wait.
	p.wg.Add(3)
	go u.run(p)
	go u.in.run()
	go u.out.run()
	return u
}

// run reads the server's replies on the upstream socket and hands each to
// the outgoing pipe.
func (u *upstream) run(p *Proxy) {
	defer p.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, err := u.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ECONNREFUSED after the server went away
		}
		u.out.handle(bytes.Clone(buf[:n]))
	}
}

// pipe is one direction of one connection: it applies the policies and
// owns the delay queue, which a single goroutine drains with one timer.
type pipe struct {
	p     *Proxy
	dir   Direction
	c     *counters
	write func([]byte) error

	wake chan struct{} // capacity 1: the queue head may have changed

	mu sync.Mutex
	q  delayQueue
}

func newPipe(p *Proxy, dir Direction, write func([]byte) error) *pipe {
	return &pipe{
		p:     p,
		dir:   dir,
		c:     &p.stats[dir],
		write: write,
		wake:  make(chan struct{}, 1),
	}
}

// handle decides the fate of one datagram, which the pipe now owns.
func (pp *pipe) handle(b []byte) {
	p := pp.p
	pp.c.received.Add(1)
	if p.drop != nil && p.drop(pp.dir, b) {
		pp.c.dropped.Add(1)
		return
	}
	copies := 1
	if p.dup != nil && p.dup(pp.dir, b) {
		pp.c.duplicated.Add(1)
		copies = 2
	}
	var d time.Duration
	if p.delay != nil {
		d = p.delay(pp.dir, b)
	}
	if d <= 0 {
		for range copies {
			pp.send(b)
		}
		return
	}
	pp.c.delayed.Add(1)
	at := time.Now().Add(d)
	pp.mu.Lock()
	for range copies {
		pp.q.push(at, b)
	}
	head, _ := pp.q.next()
	pp.mu.Unlock()
	if head.Equal(at) {
		select {
		case pp.wake <- struct{}{}:
		default:
		}
	}
}

// send writes b onward and counts it if the write succeeded.
func (pp *pipe) send(b []byte) {
	if pp.write(b) == nil {
		pp.c.forwarded.Add(1)
	}
}

// run drains the delay queue: each pass reads the clock once, sends what is
// due and sets the one timer to the next release time.
func (pp *pipe) run() {
	defer pp.p.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var due [][]byte
	for {
		pp.mu.Lock()
		now := time.Now()
		due = pp.q.popDue(now, due[:0])
		next, ok := pp.q.next()
		pp.mu.Unlock()
		for _, b := range due {
			pp.send(b)
		}
		clear(due)
		if ok {
			t.Reset(next.Sub(now))
		} else {
			t.Stop()
		}
		select {
		case <-t.C:
		case <-pp.wake:
		case <-pp.p.closing:
			return
		}
	}
}
