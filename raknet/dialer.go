package raknet

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// DialMTUs are the MTUs a dialer probes, largest first, like the vanilla
// client.
var DialMTUs = []int{1492, 1200, 576}

const (
	// dialAttempts is how many times each MTU is probed.
	dialAttempts = 3
	// dialRetry is the wait between handshake attempts.
	dialRetry = 500 * time.Millisecond
	// pingRetry is the wait between unconnected pings.
	pingRetry = 250 * time.Millisecond
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

// randomGUID returns a random negative client GUID: vanilla clients send
// negative ones and some servers (go-raknet) refuse the others.
func randomGUID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) | 1<<63)
}

// open resolves address and opens a socket for it.
func (d Dialer) open(address string) (net.PacketConn, *net.UDPAddr, error) {
	ua, err := net.ResolveUDPAddr("udp", address)
	if err != nil {
		return nil, nil, err
	}
	// Work with the unmapped form throughout: ResolveUDPAddr returns
	// IPv4 addresses in 16-byte form.
	ua = net.UDPAddrFromAddrPort(key(ua.AddrPort()))
	network, local := "udp4", "0.0.0.0:0"
	if ua.IP.To4() == nil {
		network, local = "udp6", "[::]:0"
	}
	listen := d.ListenPacket
	if listen == nil {
		listen = net.ListenPacket
	}
	pc, err := listen(network, local)
	if err != nil {
		return nil, nil, err
	}
	tuneSocket(pc)
	return pc, ua, nil
}

// PingContext sends unconnected pings until a pong from address arrives or
// ctx ends (10 s without a deadline) and returns the pong data. Pong data
// is returned as the server sent it, with or without a valid length
// prefix.
func (d Dialer) PingContext(ctx context.Context, address string) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultDialTimeout)
		defer cancel()
	}
	pc, ua, err := d.open(address)
	if err != nil {
		return nil, &net.OpError{Op: "ping", Net: "raknet", Err: err}
	}
	defer pc.Close()
	opErr := func(err error) error {
		return &net.OpError{Op: "ping", Net: "raknet", Source: pc.LocalAddr(), Addr: ua, Err: err}
	}
	guid := d.GUID
	if guid == 0 {
		guid = randomGUID()
	}
	start := time.Now()
	r := &offlineReader{pc: pc, buf: make([]byte, maxDatagramSize)}
	send := func() error {
		ping := wire.UnconnectedPing{Time: time.Since(start).Milliseconds(), ClientGUID: guid}
		_, err := pc.WriteTo(ping.Append(nil), ua)
		return err
	}
	var data []byte
	handle := func(b []byte) (bool, error) {
		var pong wire.UnconnectedPong
		if b[0] != wire.IDUnconnectedPong {
			return false, nil
		}
		if _, err := pong.Decode(b); err != nil {
			return false, nil
		}
		data = slices.Clone(pong.Data)
		return true, nil
	}
	// Pings go out every pingRetry until ctx ends, which ends the
	// exchange with its error.
	if _, err := r.exchange(ctx, ua, math.MaxInt, pingRetry, send, handle); err != nil {
		return nil, opErr(err)
	}
	return data, nil
}

// DialContext connects to a RakNet server: it probes the MTU, completes the
// offline and connected handshakes and returns the connection. ctx bounds
// the handshake only.
func (d Dialer) DialContext(ctx context.Context, address string) (*Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultDialTimeout)
		defer cancel()
	}
	pc, ua, err := d.open(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "raknet", Err: err}
	}
	c, err := d.handshake(ctx, pc, ua)
	if err != nil {
		_ = pc.Close()
		return nil, &net.OpError{Op: "dial", Net: "raknet", Source: pc.LocalAddr(), Addr: ua, Err: err}
	}
	return c, nil
}

// offlineReader reads offline replies from the server during the
// handshake.
type offlineReader struct {
	pc  net.PacketConn
	buf []byte
}

// next returns the next non-empty datagram from the server before
// deadline or ctx's deadline, whichever comes first.
func (r *offlineReader) next(ctx context.Context, deadline time.Time, from *net.UDPAddr) ([]byte, error) {
	ctxDeadline := false
	if dl, ok := ctx.Deadline(); ok && !dl.After(deadline) {
		deadline, ctxDeadline = dl, true
	}
	_ = r.pc.SetReadDeadline(deadline)
	want := key(from.AddrPort())
	for {
		n, addr, err := r.pc.ReadFrom(r.buf)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			if ctxDeadline && isTimeout(err) {
				// The socket's deadline may fire before ctx's timer.
				return nil, context.DeadlineExceeded
			}
			return nil, err
		}
		if n == 0 || key(addrPortOf(addr)) != want {
			continue
		}
		return r.buf[:n], nil
	}
}

// exchange sends a request up to attempts times, retry apart, and hands
// every reply to handle until handle reports done or an error. It reports
// whether handle finished.
func (r *offlineReader) exchange(ctx context.Context, from *net.UDPAddr, attempts int, retry time.Duration, send func() error, handle func(b []byte) (bool, error)) (bool, error) {
	for range attempts {
		if err := send(); err != nil {
			return false, err
		}
		deadline := time.Now().Add(retry)
		for {
			b, err := r.next(ctx, deadline, from)
			if err != nil {
				if retryable(ctx, err) {
					break
				}
				return false, err
			}
			if done, err := handle(b); done || err != nil {
				return done, err
			}
		}
	}
	return false, nil
}

// retryable reports whether err from offlineReader.next only means that
// this attempt's wait is over.
func retryable(ctx context.Context, err error) bool {
	return isTimeout(err) && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (d Dialer) handshake(ctx context.Context, pc net.PacketConn, ua *net.UDPAddr) (*Conn, error) {
	guid := d.GUID
	if guid == 0 {
		guid = randomGUID()
	}
	proto := d.ProtocolVersion
	if proto == 0 {
		proto = 11
	}
	ap := ua.AddrPort()
	hdr := overhead(ap)
	maxMTU := MaxMTU
	if d.MaxMTU > 0 {
		maxMTU = min(max(d.MaxMTU, MinMTU), MaxMTU)
	}
	r := &offlineReader{pc: pc, buf: make([]byte, maxDatagramSize)}
	retry := orDefault(d.limits.dialRetry, dialRetry)

	// Phase 1: MTU discovery with OpenConnectionRequest1, largest MTU
	// first, a few tries each.
	var reply1 wire.OpenConnectionReply1
	var probed int
	retriedVersion := false
	for _, mtu := range DialMTUs {
		if mtu > maxMTU {
			continue
		}
		send := func() error {
			req := wire.OpenConnectionRequest1{Protocol: proto, Size: mtu - hdr}
			_, err := pc.WriteTo(req.Append(nil), ua)
			return err
		}
		done, err := r.exchange(ctx, ua, dialAttempts, retry, send, func(b []byte) (bool, error) {
			switch {
			case b[0] == wire.IDOpenConnectionReply1:
				if _, err := reply1.Decode(b); err != nil {
					return false, nil
				}
				probed = mtu
				return true, nil
			case b[0] == wire.IDIncompatibleProtocolVersion:
				var m wire.IncompatibleProtocolVersion
				if _, err := m.Decode(b); err != nil {
					return false, nil
				}
				if m.Protocol == proto && retriedVersion {
					// A late answer to a probe sent before the switch.
					return false, nil
				}
				if retriedVersion || (m.Protocol != 10 && m.Protocol != 11) || m.Protocol == proto {
					return false, fmt.Errorf("%w: server speaks %d", ErrIncompatibleProtocol, m.Protocol)
				}
				retriedVersion, proto = true, m.Protocol
				return false, send()
			case wire.IsNotice(b[0]):
				return false, refusal(b[0])
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if probed == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("no reply to OPEN_CONNECTION_REQUEST_1")
	}
	mtu := max(min(int(reply1.MTU), probed), MinMTU)

	// Phase 2: OpenConnectionRequest2 fixes the MTU.
	req2 := wire.OpenConnectionRequest2{ServerAddr: ap, MTU: uint16(mtu), ClientGUID: guid}
	if reply1.Security {
		req2.HasCookie, req2.Cookie = true, reply1.Cookie
	}
	var reply2 wire.OpenConnectionReply2
	send2 := func() error {
		_, err := pc.WriteTo(req2.Append(nil), ua)
		return err
	}
	got2, err := r.exchange(ctx, ua, dialAttempts*2, retry, send2, func(b []byte) (bool, error) {
		switch {
		case b[0] == wire.IDOpenConnectionReply2:
			_, err := reply2.Decode(b)
			return err == nil, nil
		case wire.IsNotice(b[0]):
			return false, refusal(b[0])
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !got2 {
		return nil, errors.New("no reply to OPEN_CONNECTION_REQUEST_2")
	}
	if reply2.MTU >= MinMTU && int(reply2.MTU) < mtu {
		mtu = int(reply2.MTU)
	}
	_ = pc.SetReadDeadline(time.Time{})

	// Phase 3: the connected handshake runs inside the Conn.
	var log zerolog.Logger = zerolog.Nop()
	if d.Log != nil {
		log = d.Log.With().Str("src", "raknet").Str("raddr", ap.String()).Logger()
	}
	cfg := newConnConfig(d.Timeout, d.PingInterval, d.CloseTimeout, log, d.limits)
	now := time.Now()
	c := newConn(pc, ua, ap, mtu, cfg, true, now)
	c.guid = reply2.ServerGUID
	c.onClose = func(c *Conn) {
		if c.lingering {
			// The read loop acknowledges stale data until the deadline,
			// then closes the socket.
			_ = c.pc.SetReadDeadline(time.Now().Add(lingerTime))
			return
		}
		_ = c.pc.Close()
	}
	c.start(now)
	go dialReadLoop(pc, c, ap, r.buf)

	c.mu.Lock()
	req := wire.ConnectionRequest{ClientGUID: guid, Time: c.timestamp(now)}
	var b [wire.ConnectionRequestSize]byte
	c.sendControl(now, req.Append(b[:0]), wire.Reliable)
	c.flush(now)
	c.arm(now)
	c.unlock()

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
	err = c.closeErr
	c.mu.Unlock()
	return nil, err
}

// dialReadLoop feeds a dialed connection from its own socket until the
// socket closes (or, once the connection closed, a read fails), then
// closes the connection and the socket and releases the connection. buf
// is the handshake's read buffer, which it takes over.
func dialReadLoop(pc net.PacketConn, c *Conn, ap netip.AddrPort, buf []byte) {
	defer c.release()
	defer pc.Close()
	defer c.closeNow(net.ErrClosed, false)
	udp, _ := pc.(*net.UDPConn)
	want := key(ap)
	for {
		var n int
		var from netip.AddrPort
		var err error
		if udp != nil {
			n, from, err = udp.ReadFromUDPAddrPort(buf)
		} else {
			var addr net.Addr
			n, addr, err = pc.ReadFrom(buf)
			if err == nil {
				from = addrPortOf(addr)
			}
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-c.closed:
				return
			default:
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if n == 0 || key(from) != want || buf[0]&wire.FlagValid == 0 {
			// Offline messages (late handshake replies) and strangers.
			continue
		}
		c.handle(buf[:n], time.Now())
	}
}

// refusal maps an offline refusal to an error.
func refusal(id byte) error {
	switch id {
	case wire.IDNoFreeIncomingConnections:
		return fmt.Errorf("%w: server full", ErrConnectionRefused)
	case wire.IDAlreadyConnected:
		return fmt.Errorf("%w: already connected", ErrConnectionRefused)
	case wire.IDConnectionBanned:
		return fmt.Errorf("%w: banned", ErrConnectionRefused)
	default:
		return fmt.Errorf("%w: connected too recently", ErrConnectionRefused)
	}
}
