package raknet

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

const (
	// dialAttempts is how many times each MTU is probed.
	dialAttempts = 3
	// dialRetry is the wait between handshake attempts.
	dialRetry = 500 * time.Millisecond
	// defaultDialTimeout bounds Dial and Ping without a context deadline.
	defaultDialTimeout = 10 * time.Second
)

// Dialer dials RakNet servers. The zero value is ready to use.
type Dialer struct {
	// Log receives per-connection debug lines; nil discards.
	Log *zerolog.Logger
	// ListenPacket opens the client socket; nil means net.ListenPacket.
	ListenPacket func(network, address string) (net.PacketConn, error)
	// ProtocolVersion is the RakNet protocol offered first; 0 means 11. On
	// IncompatibleProtocolVersion the dialer retries once with the server's
	// version if it is 10 or 11.
	ProtocolVersion byte
	// MaxMTU caps the MTUs probed; 0 means MaxMTU (1492).
	MaxMTU int
	// Timeout, PingInterval and CloseTimeout are as in ListenConfig.
	Timeout, PingInterval, CloseTimeout time.Duration
	// GUID is the client GUID; 0 picks a random one.
	GUID int64

	// limits overrides connection limits and the retry interval in tests.
	limits limits
}

// Dial connects to a RakNet server with the default Dialer. ctx bounds the
// handshake; without a deadline it is bounded by 10 s.
func Dial(ctx context.Context, address string) (*Conn, error) {
	var d Dialer
	return d.DialContext(ctx, address)
}

// Ping sends unconnected pings to address with the default Dialer until a
// pong arrives or ctx ends (10 s without a deadline) and returns the pong
// data.
func Ping(ctx context.Context, address string) ([]byte, error) {
	var d Dialer
	return d.PingContext(ctx, address)
}

// open resolves address and opens a socket for it.
func (d Dialer) open(address string) (*endpoint, netip.AddrPort, error) {
	ua, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	// Work with the unmapped form throughout: ResolveUDPAddr returns
	// IPv4 addresses in 16-byte form.
	ap := key(ua.AddrPort())
	network, local := "udp4", "0.0.0.0:0"
	if !ap.Addr().Is4() {
		network, local = "udp6", "[::]:0"
	}
	listen := d.ListenPacket
	if listen == nil {
		listen = net.ListenPacket
	}
	pc, err := listen(network, local)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	return newEndpoint(pc), ap, nil
}

// withDefaultTimeout bounds ctx by defaultDialTimeout unless it has a
// deadline.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultDialTimeout)
}

// PingContext sends unconnected pings until a pong from address arrives or
// ctx ends (10 s without a deadline) and returns the pong data. Pong data
// is returned as the server sent it, with or without a valid length
// prefix.
func (d Dialer) PingContext(ctx context.Context, address string) ([]byte, error) {
	p, err := d.PingPong(ctx, address)
	return p.Data, err
}

// PingPong is PingContext returning the whole answer: the server's GUID
// and the round trip besides the data.
func (d Dialer) PingPong(ctx context.Context, address string) (Pong, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ep, ap, err := d.open(address)
	if err != nil {
		return Pong{}, &net.OpError{Op: "ping", Net: "raknet", Err: err}
	}
	defer ep.close()
	pongs, err := discover(ctx, ep, []netip.AddrPort{ap}, d.GUID, 1)
	if len(pongs) == 0 {
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			// discover stops at the deadline, maybe before ctx's timer.
			err = context.DeadlineExceeded
		}
		return Pong{}, &net.OpError{Op: "ping", Net: "raknet", Source: ep.local, Addr: net.UDPAddrFromAddrPort(ap), Err: err}
	}
	return pongs[0], nil
}

// DialContext connects to a RakNet server: it probes the MTU, completes the
// offline and connected handshakes and returns the connection. ctx bounds
// the handshake only.
func (d Dialer) DialContext(ctx context.Context, address string) (*Conn, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ep, ap, err := d.open(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "raknet", Err: err}
	}
	c, err := d.handshake(ctx, ep, ap)
	if err != nil {
		ep.close()
		return nil, &net.OpError{Op: "dial", Net: "raknet", Source: ep.local, Addr: net.UDPAddrFromAddrPort(ap), Err: err}
	}
	return c, nil
}

// dialPeer routes what a dialed socket reads: offline datagrams from the
// server to the handshake while it runs, data to the connection once it
// exists, stale data to the after-close table once it is gone.
type dialPeer struct {
	server  netip.AddrPort
	offline chan []byte // copies of offline datagrams; the handshake reads them
	conn    atomic.Pointer[Conn]
}

// dialOfflineQueue bounds the offline datagrams waiting for the
// handshake; more are dropped, as a full socket buffer would.
const dialOfflineQueue = 16

func (p *dialPeer) handle(ep *endpoint) func(b []byte, from netip.AddrPort, now time.Time) {
	return func(b []byte, from netip.AddrPort, now time.Time) {
		if key(from) != p.server {
			return // a stranger
		}
		if b[0]&wire.FlagValid == 0 {
			select {
			case p.offline <- append([]byte(nil), b...):
			default:
			}
			return
		}
		if c := p.conn.Load(); c != nil && !ep.ackStale(b, from, now) {
			c.handle(b, now)
		}
	}
}

// dialOwner is the owner of a dialed connection: the socket is the
// connection's alone, and closes with it.
type dialOwner struct {
	ep     *endpoint
	server netip.AddrPort
}

func (dialOwner) established(*Conn) {}

func (o dialOwner) closed(c *Conn) {
	if c.lingering {
		// The read loop acknowledges stale data for lingerTime, then
		// the socket closes.
		o.ep.linger(o.server, time.Now())
		time.AfterFunc(lingerTime, o.ep.close)
		return
	}
	o.ep.close()
}

func (d Dialer) handshake(ctx context.Context, ep *endpoint, ap netip.AddrPort) (*Conn, error) {
	guid := d.GUID
	if guid == 0 {
		guid = newGUID(true)
	}
	proto := d.ProtocolVersion
	if proto == 0 {
		proto = 11
	}
	peer := &dialPeer{server: ap, offline: make(chan []byte, dialOfflineQueue)}
	readDone := make(chan struct{})
	go func() {
		ep.readLoop(peer.handle(ep))
		close(readDone)
		if c := peer.conn.Load(); c != nil {
			// Once the socket is closed the connection is gone for good.
			c.closeNow(net.ErrClosed, false)
			c.release()
		}
	}()
	h := newInitiator(ap, guid, proto, maxMTUOr(d.MaxMTU, MaxMTU), dialAttempts, orDefault(d.limits.dialRetry, dialRetry))
	if err := runInitiator(ctx, ep, h, peer.offline); err != nil {
		ep.close()
		<-readDone
		return nil, err
	}

	// The connected handshake runs inside the Conn.
	var log zerolog.Logger = zerolog.Nop()
	if d.Log != nil {
		log = d.Log.With().Str("src", "raknet").Str("raddr", ap.String()).Logger()
	}
	cfg := newConnConfig(d.Timeout, d.PingInterval, d.CloseTimeout, log, d.limits)
	now := time.Now()
	c := newConn(ep, ap, h.mtu, cfg, true, now)
	c.guid = h.reply2.ServerGUID
	c.owner = dialOwner{ep: ep, server: ap}
	c.start(now)
	peer.conn.Store(c)
	select {
	case <-readDone:
		// The socket closed before the connection was stored.
		c.closeNow(net.ErrClosed, false)
		c.release()
	default:
	}

	c.mu.Lock()
	c.sendControl(now, c.ctl.request(guid, now))
	c.end(now)

	select {
	case <-c.established:
		return c, nil
	case <-c.closed:
	case <-ctx.Done():
		c.closeNow(net.ErrClosed, true)
	}
	<-c.released
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	err := c.closeErr
	c.mu.Unlock()
	return nil, err
}

// runInitiator drives the offline handshake: it writes what h asks for,
// feeds it the server's replies and waits until h is done, fails, or ctx
// ends.
func runInitiator(ctx context.Context, ep *endpoint, h *initiator, replies <-chan []byte) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return h.failure(err)
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			// The context's timer and a due request may fire together:
			// nothing leaves at the deadline.
			return h.failure(context.DeadlineExceeded)
		}
		out, next := h.poll(buf[:0], time.Now())
		if out != nil {
			buf = out
			if err := ep.write(out, h.server); err != nil {
				return err
			}
		}
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return h.failure(ctx.Err())
		case <-timer.C:
		case b := <-replies:
			done, err := h.handle(b, time.Now())
			if err != nil || done {
				return err
			}
		}
	}
}
