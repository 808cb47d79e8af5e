package nethernet

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/basaltmc/basalt/raknet/proxyproto"
)

// Bounds of the signalling endpoint's TCP side. An honest client sends
// its request whole, at once: a connection that has not finished sending
// its request is the first to go when the endpoint is full.
const (
	// DefaultMaxSignalingConns caps the open signalling connections.
	DefaultMaxSignalingConns = 256
	// DefaultSignalingConnsPerSource caps one source's open signalling
	// connections (an IPv4 address, an IPv6 /64); trusted proxies have
	// no cap of their own.
	DefaultSignalingConnsPerSource = 8
	// headerTimeout bounds the reading of a request's header, and
	// requestTimeout of the whole request, body included.
	headerTimeout  = 3 * time.Second
	requestTimeout = 5 * time.Second
	// idleTimeout bounds a kept-alive connection's wait for its next
	// request.
	idleTimeout = 5 * time.Second
)

// connGuard admits signalling connections: at most perSource of one
// source's, at most max in all. When full, the oldest connection still
// sending its request is closed for a new one; a slow sender cannot hold
// the endpoint, and an honest request, sent whole, is read at once.
type connGuard struct {
	max, perSource int
	trusted        func(netip.Addr) bool
	proxied        bool // trusted sources send a PROXY header first
	stats          *counters

	mu       sync.Mutex
	open     int
	bySrc    map[netip.Addr]int
	unserved *list.List // *guardConn still sending their request, oldest first
}

func newConnGuard(max, perSource int, trusted func(netip.Addr) bool, proxied bool, stats *counters) *connGuard {
	return &connGuard{max: max, perSource: perSource, trusted: trusted, proxied: proxied, stats: stats,
		bySrc: make(map[netip.Addr]int), unserved: list.New()}
}

// guardListener is a net.Listener whose connections pass a connGuard.
type guardListener struct {
	net.Listener
	g *connGuard
}

// Accept returns the next connection the guard admits; it closes the
// ones it refuses and goes on.
func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// guardConn is an admitted connection; closing it frees its place. A
// trusted proxy's starts with a PROXY header (v1 or v2) naming the
// client: it is read before anything else, and RemoteAddr is the
// client's from then on. Anyone else's header is never read: it is the
// start of a request that does not parse.
type guardConn struct {
	net.Conn
	g       *connGuard
	src     netip.Addr
	trusted bool
	elem    *list.Element // in g.unserved until served
	closed  bool

	header sync.Once
	remote net.Addr // the client's, once the header is read
	rest   []byte   // what was read past the header
	err    error    // a header that did not parse
}

// readHeader reads a trusted proxy's PROXY header, within headerTimeout.
// A connection that does not start like one is the proxy's own; one
// whose header does not parse is closed.
func (gc *guardConn) readHeader() {
	gc.remote = gc.Conn.RemoteAddr()
	if !gc.trusted || !gc.g.proxied {
		return
	}
	_ = gc.Conn.SetReadDeadline(time.Now().Add(headerTimeout))
	defer gc.Conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 256)
	for {
		n, err := gc.Conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if !proxyproto.MaybeHeader(buf) {
			gc.rest = buf // no header: the proxy's own request
			return
		}
		h, perr := proxyproto.Parse(buf, proxyproto.Stream)
		if perr == nil {
			if !h.Local {
				gc.remote = net.TCPAddrFromAddrPort(netip.AddrPortFrom(h.Client.Addr().Unmap(), h.Client.Port()))
			}
			gc.rest = buf[h.Len:]
			return
		}
		if errors.Is(perr, io.ErrUnexpectedEOF) && err == nil {
			if len(buf) < cap(buf) {
				continue
			}
			if cap(buf) < proxyproto.MaxV2Len { // a v2 header with long TLVs
				nb := make([]byte, len(buf), proxyproto.MaxV2Len)
				copy(nb, buf)
				buf = nb
				continue
			}
		}
		gc.err = cmpOr(err, perr)
		gc.g.stats.proxyRefused.Add(1)
		return
	}
}

// RemoteAddr returns the client's address: the one a trusted proxy's
// header names, or the connection's.
func (gc *guardConn) RemoteAddr() net.Addr {
	gc.header.Do(gc.readHeader)
	return gc.remote
}

// Read reads what follows the PROXY header, if any.
func (gc *guardConn) Read(b []byte) (int, error) {
	gc.header.Do(gc.readHeader)
	if gc.err != nil {
		return 0, gc.err
	}
	if len(gc.rest) > 0 {
		n := copy(b, gc.rest)
		gc.rest = gc.rest[n:]
		return n, nil
	}
	return gc.Conn.Read(b)
}

// admit takes a place for c, or closes it.
func (g *connGuard) admit(c net.Conn) *guardConn {
	var src netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok { // the peer's own, never a header's
		src = ta.AddrPort().Addr().Unmap()
	}
	gc := &guardConn{Conn: c, g: g, trusted: g.trusted != nil && g.trusted(src)}
	gc.src, _ = sourceOf(src)
	var evict *guardConn
	g.mu.Lock()
	if !gc.trusted && g.perSource > 0 && g.bySrc[gc.src] >= g.perSource {
		g.mu.Unlock()
		g.stats.connsRefused.Add(1)
		_ = c.Close()
		return nil
	}
	if g.open >= g.max {
		e := g.unserved.Front()
		if e == nil {
			g.mu.Unlock()
			g.stats.connsRefused.Add(1)
			_ = c.Close()
			return nil
		}
		evict = e.Value.(*guardConn)
		g.releaseLocked(evict)
	}
	g.open++
	g.bySrc[gc.src]++
	gc.elem = g.unserved.PushBack(gc)
	g.mu.Unlock()
	if evict != nil {
		g.stats.connsEvicted.Add(1)
		_ = evict.Conn.Close()
	}
	return gc
}

// releaseLocked frees gc's place. g.mu is held.
func (g *connGuard) releaseLocked(gc *guardConn) {
	if gc.closed {
		return
	}
	gc.closed = true
	if gc.elem != nil {
		g.unserved.Remove(gc.elem)
		gc.elem = nil
	}
	g.open--
	if g.bySrc[gc.src]--; g.bySrc[gc.src] <= 0 {
		delete(g.bySrc, gc.src)
	}
}

// served marks gc's request read: it is no longer the first to go.
func (gc *guardConn) served() {
	g := gc.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if gc.elem != nil {
		g.unserved.Remove(gc.elem)
		gc.elem = nil
	}
}

// Close closes the connection and frees its place.
func (gc *guardConn) Close() error {
	gc.g.mu.Lock()
	gc.g.releaseLocked(gc)
	gc.g.mu.Unlock()
	return gc.Conn.Close()
}

// openConns returns the connections open now.
func (g *connGuard) openConns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// guardConnKey is the request context key of its guardConn.
type guardConnKey struct{}

// connContext is the http.Server's ConnContext: it keeps the request's
// guardConn where markServed finds it.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if gc, ok := c.(*guardConn); ok {
		return context.WithValue(ctx, guardConnKey{}, gc)
	}
	return ctx
}

// markServed marks req's connection as having sent its request.
func markServed(req *http.Request) {
	if gc, ok := req.Context().Value(guardConnKey{}).(*guardConn); ok {
		gc.served()
	}
}

// requestSource returns the address of the client that sent req.
func requestSource(req *http.Request) netip.Addr {
	return remoteIP(req.RemoteAddr)
}
