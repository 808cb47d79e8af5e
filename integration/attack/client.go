package attack

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Client defaults and bounds.
const (
	// DefaultClientMTU is the MTU a Client asks for.
	DefaultClientMTU = 1400
	// DefaultRetry is how often a Client resends an unanswered handshake
	// message.
	DefaultRetry = 250 * time.Millisecond
	// offlineQueue and messageQueue bound what the reader keeps for the
	// caller; more is dropped, as a full socket buffer would.
	offlineQueue = 64
	messageQueue = 1024
	// DefaultWindow is how many data datagrams a Client's floods keep
	// unacknowledged at once: enough to fill the link, few enough that
	// the listener's socket buffer does not overflow and drop them.
	DefaultWindow = 256
	// stallTimeout is how long a flood waits for acknowledgements before
	// it sends on regardless: a listener that stopped acknowledging (a
	// budget refusing the datagrams) must not stall the attack forever.
	stallTimeout = 200 * time.Millisecond
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Local is the address to bind; it must be in 127.0.0.0/8. A zero port
	// picks a free one; the zero value means 127.0.0.1 and a free port.
	Local netip.AddrPort
	// Server is the listener to connect to, in 127.0.0.0/8.
	Server netip.AddrPort
	// GUID is the client GUID; 0 picks a random negative one.
	GUID int64
	// MTU is the MTU asked for in OpenConnectionRequest1 and 2; 0 means
	// DefaultClientMTU.
	MTU int
	// Protocol is the RakNet protocol version; 0 means 11.
	Protocol byte
	// Retry is how often an unanswered handshake message is resent; 0
	// means DefaultRetry.
	Retry time.Duration
}

// RefusedError is a handshake the server answered with a refusal, such
// as AlreadyConnected (0x12) or NoFreeIncomingConnections (0x14).
type RefusedError struct{ ID byte }

func (e *RefusedError) Error() string { return "attack: handshake refused: " + IDName(e.ID) }

// ClientStats are a Client's counters.
type ClientStats struct {
	// Sent are data, ACK and offline datagrams sent; DataSent counts the
	// data datagrams among them.
	Sent     Counts
	DataSent int
	// Acked and NACKed are the distinct data datagram numbers the server
	// acknowledged or reported missing (and never acknowledged).
	Acked, NACKed int
	// Received are the datagrams read from the server.
	Received Counts
	// PeerClosed reports a DisconnectionNotification from the server.
	PeerClosed bool
}

// Client is a RakNet client whose every frame is the caller's to choose:
// it completes the handshake itself over its own socket, then sends what
// it is told, including what no honest client sends. Its reader
// acknowledges every data datagram and answers connected pings, so the
// connection stays up while the caller attacks. Its methods are safe for
// concurrent use.
type Client struct {
	cfg     ClientConfig
	conn    *net.UDPConn
	local   netip.AddrPort
	created time.Time

	offline  chan []byte
	messages chan []byte
	accepted chan struct{}
	acceptOK sync.Once
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	mtu atomic.Int32

	mu       sync.Mutex // guards what follows
	number   uint32     // next datagram number
	reliable uint32     // next reliable index
	order    uint32     // next order index on channel 0
	splitID  uint16
	buf      []byte
	stats    ClientStats
	// ackedBit and doneBit hold, modulo 2^16, the data datagram numbers
	// acknowledged, and those acknowledged or NACKed: the server may name
	// a number more than once, and each counts once.
	ackedBit, doneBit [1 << 10]uint64
	resolved          int // numbers in doneBit
	// writtenOff is the in-flight count when the last window stalled.
	writtenOff int

	stalls atomic.Int32 // windows in a row that went unacknowledged
}

// Open binds a Client's socket and starts its reader without any
// handshake: the caller drives the handshake, or sends what it likes,
// with WriteRaw and reads the answers from Offline.
func Open(cfg ClientConfig) (*Client, error) {
	if !cfg.Local.IsValid() {
		cfg.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
	}
	if err := checkLoopback("client address", cfg.Local.Addr()); err != nil {
		return nil, err
	}
	if err := checkLoopback("server", cfg.Server.Addr()); err != nil {
		return nil, err
	}
	if cfg.GUID == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.GUID = int64(binary.BigEndian.Uint64(b[:]) | 1<<63)
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultClientMTU
	}
	if cfg.Protocol == 0 {
		cfg.Protocol = 11
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(cfg.Local))
	if err != nil {
		return nil, fmt.Errorf("attack: bind %v: %w", cfg.Local, err)
	}
	_ = conn.SetReadBuffer(1 << 20)
	c := &Client{
		cfg: cfg, conn: conn, local: conn.LocalAddr().(*net.UDPAddr).AddrPort(), created: time.Now(),
		offline: make(chan []byte, offlineQueue), messages: make(chan []byte, messageQueue),
		accepted: make(chan struct{}), done: make(chan struct{}),
	}
	c.mtu.Store(int32(cfg.MTU))
	c.wg.Go(c.read)
	return c, nil
}

// Dial opens a Client and completes the handshake as a RakNet client
// does: OpenConnectionRequest1 padded to the MTU, Request2 echoing
// Reply1's cookie, ConnectionRequest, and NewIncomingConnection once the
// server accepted. It returns once the server acknowledged the
// NewIncomingConnection, so the listener has the connection established.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	c, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.handshake(ctx); err != nil {
		c.Abandon()
		return nil, err
	}
	return c, nil
}

func (c *Client) handshake(ctx context.Context) error {
	mtu := c.cfg.MTU
	b, err := c.offlineRound(ctx, AppendOCR1(nil, c.cfg.Protocol, mtu-ipv4Overhead), IDOpenConnectionReply1)
	if err != nil {
		return err
	}
	r1, err := ParseReply1(b)
	if err != nil {
		return err
	}
	mtu = min(mtu, int(r1.MTU))
	ocr2 := AppendOCR2(nil, r1.Security, r1.Cookie, c.cfg.Server, uint16(mtu), c.cfg.GUID)
	if b, err = c.offlineRound(ctx, ocr2, IDOpenConnectionReply2); err != nil {
		return err
	}
	granted, err := ParseReply2MTU(b)
	if err != nil {
		return err
	}
	c.mtu.Store(int32(granted))

	// ConnectionRequest, resent (same reliable index, new datagram) until
	// ConnectionRequestAccepted arrives.
	cr := AppendConnectionRequest(nil, c.cfg.GUID, c.timestamp())
	c.mu.Lock()
	crFrame := Frame{Reliability: Reliable, ReliableIndex: c.nextReliable(), Payload: cr}
	c.mu.Unlock()
	for {
		c.mu.Lock()
		c.sendLocked(crFrame)
		c.mu.Unlock()
		select {
		case <-c.accepted:
		case <-time.After(c.cfg.Retry):
			if ctx.Err() == nil {
				continue
			}
		case <-ctx.Done():
		case <-c.done:
			return net.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("attack: ConnectionRequest: %w", err)
		}
		break
	}

	nic := AppendNewIncomingConnection(nil, c.cfg.Server, c.timestamp(), c.timestamp())
	c.mu.Lock()
	nicFrame := Frame{Reliability: ReliableOrdered, ReliableIndex: c.nextReliable(), OrderIndex: c.order, Payload: nic}
	c.order++
	c.mu.Unlock()
	for {
		c.mu.Lock()
		n := c.sendLocked(nicFrame)
		c.mu.Unlock()
		deadline := time.Now().Add(c.cfg.Retry)
		for time.Now().Before(deadline) {
			if c.Acked(n) {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("attack: NewIncomingConnection: %w", err)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// offlineRound sends req until a reply with ID want (or a refusal)
// arrives.
func (c *Client) offlineRound(ctx context.Context, req []byte, want byte) ([]byte, error) {
	for {
		if err := c.WriteRaw(req); err != nil {
			return nil, err
		}
		timer := time.NewTimer(c.cfg.Retry)
	wait:
		for {
			select {
			case b := <-c.offline:
				switch b[0] {
				case want:
					timer.Stop()
					return b, nil
				case IDAlreadyConnected, IDNoFreeIncomingConnections, IDConnectionBanned, IDIncompatibleProtocolVersion, IDIPRecentlyConnected:
					timer.Stop()
					return nil, &RefusedError{ID: b[0]}
				}
			case <-timer.C:
				break wait
			case <-ctx.Done():
				timer.Stop()
				return nil, fmt.Errorf("attack: waiting for %s: %w", IDName(want), ctx.Err())
			case <-c.done:
				timer.Stop()
				return nil, net.ErrClosed
			}
		}
	}
}

// timestamp is RakNet's millisecond clock of this connection.
func (c *Client) timestamp() int64 { return time.Since(c.created).Milliseconds() }

// Local returns the client's address.
func (c *Client) Local() netip.AddrPort { return c.local }

// GUID returns the client GUID.
func (c *Client) GUID() int64 { return c.cfg.GUID }

// MTU returns the MTU the server granted (the one asked for before then).
func (c *Client) MTU() int { return int(c.mtu.Load()) }

// Offline returns the offline datagrams the server sent (copies), as a
// channel that drops what the caller does not read in time.
func (c *Client) Offline() <-chan []byte { return c.offline }

// Messages returns the unsplit application messages the server sent
// (copies), as a channel that drops what the caller does not read in
// time. Split messages from the server are acknowledged, not reassembled.
func (c *Client) Messages() <-chan []byte { return c.messages }

// Stats returns the client's counters.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Acked reports whether data datagram n was acknowledged (numbers are
// remembered modulo 2^16).
func (c *Client) Acked(n uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n &= 0xffff
	return c.ackedBit[n/64]&(1<<(n%64)) != 0
}

// WriteRaw sends b as it is through the client's socket to the server.
func (c *Client) WriteRaw(b []byte) error {
	if err := checkLoopback("server", c.cfg.Server.Addr()); err != nil {
		return err
	}
	_, err := c.conn.WriteToUDPAddrPort(b, c.cfg.Server)
	c.mu.Lock()
	c.stats.Sent.add(len(b))
	c.mu.Unlock()
	return err
}

// Send sends p as one ReliableOrdered message on channel 0, the next in
// order. It must fit in one datagram (MaxPayload).
func (c *Client) Send(p []byte) error {
	if len(p) > c.MaxPayload(ReliableOrdered, false) {
		return fmt.Errorf("attack: message of %d bytes exceeds %d", len(p), c.MaxPayload(ReliableOrdered, false))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := Frame{Reliability: ReliableOrdered, ReliableIndex: c.nextReliable(), OrderIndex: c.order, Payload: p}
	c.order++
	c.sendLocked(f)
	return nil
}

// MaxPayload returns the largest payload one frame of reliability r
// (split or not) carries in one datagram at the granted MTU.
func (c *Client) MaxPayload(r Reliability, split bool) int {
	return c.MTU() - ipv4Overhead - datagramHeaderSize - frameHeaderSize(r, split)
}

func (c *Client) nextReliable() uint32 {
	r := c.reliable
	c.reliable = (c.reliable + 1) & 0xffffff
	return r
}

// sendLocked sends frames in the next data datagram and returns its
// number. c.mu is held.
func (c *Client) sendLocked(frames ...Frame) uint32 {
	n := c.number
	c.number = (c.number + 1) & 0xffffff
	k := n & 0xffff
	c.ackedBit[k/64] &^= 1 << (k % 64)
	if c.doneBit[k/64]&(1<<(k%64)) != 0 {
		c.doneBit[k/64] &^= 1 << (k % 64)
		c.resolved--
	}
	c.buf = AppendDatagram(c.buf[:0], n, frames...)
	_, _ = c.conn.WriteToUDPAddrPort(c.buf, c.cfg.Server)
	c.stats.Sent.add(len(c.buf))
	c.stats.DataSent++
	return n
}

// inFlight returns the data datagrams neither acknowledged nor NACKed.
func (c *Client) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, min(c.stats.DataSent, 1<<16)-c.resolved-c.writtenOff)
}

// ErrUnacknowledged ends a flood of data datagrams whose last windows the
// listener did not acknowledge: it refuses what the attack sends (a
// budget applying backpressure), so sending more would only be dropped.
var ErrUnacknowledged = errors.New("attack: the listener stopped acknowledging")

// maxStalls is how many windows in a row may go unacknowledged before a
// flood gives up with ErrUnacknowledged.
const maxStalls = 3

// pace waits until fewer than window data datagrams are in flight. A
// full window during which nothing new is acknowledged for stallTimeout
// (NACKs do not count: a listener refusing datagrams NACKs them to ask for
// them again later) is written off; after maxStalls such windows in a row
// it returns ErrUnacknowledged.
func (c *Client) pace(ctx context.Context, window int) error {
	acked := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.stats.Acked
	}
	last, since := acked(), time.Now()
	for {
		if a := acked(); a != last {
			last, since = a, time.Now()
			c.stalls.Store(0)
		}
		if c.inFlight() < window {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-c.done:
			return net.ErrClosed
		default:
		}
		if time.Since(since) > stallTimeout {
			if c.stalls.Add(1) >= maxStalls {
				return ErrUnacknowledged
			}
			c.writeOff()
			return nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// writeOff counts every datagram in flight as lost, so pacing starts a
// new window.
func (c *Client) writeOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writtenOff = min(c.stats.DataSent, 1<<16) - c.resolved
}

// Abandon closes the socket without a word, as a crashed or restarted
// client does: the server learns of it only by its timeout.
func (c *Client) Abandon() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
	c.wg.Wait()
}

// Close sends DisconnectionNotification, then abandons the socket.
func (c *Client) Close() error {
	select {
	case <-c.done:
	default:
		c.mu.Lock()
		c.sendLocked(Frame{Reliability: Reliable, ReliableIndex: c.nextReliable(), Payload: []byte{IDDisconnectionNotification}})
		c.mu.Unlock()
	}
	c.Abandon()
	return nil
}

// read is the socket's reader: it acknowledges data, answers connected
// pings and hands the rest to the caller.
func (c *Client) read() {
	buf := make([]byte, MaxUDPPayload)
	var out []byte
	for {
		n, from, err := c.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-c.done:
				return
			default:
				continue
			}
		}
		if n == 0 || netip.AddrPortFrom(from.Addr().Unmap(), from.Port()) != c.cfg.Server {
			continue
		}
		b := buf[:n]
		c.mu.Lock()
		c.stats.Received.add(n)
		c.mu.Unlock()
		switch {
		case b[0]&flagValid == 0:
			select {
			case c.offline <- append([]byte(nil), b...):
			default:
			}
		case b[0]&flagACK != 0:
			c.onAck(b, false)
		case b[0]&flagNACK != 0:
			c.onAck(b, true)
		default:
			if n < datagramHeaderSize {
				continue
			}
			out = AppendAck(out[:0], false, AckRange{readU24(b[1:]), readU24(b[1:])})
			_, _ = c.conn.WriteToUDPAddrPort(out, c.cfg.Server)
			_ = parseFrames(b, c.onFrame)
		}
	}
}

func (c *Client) onAck(b []byte, nack bool) {
	if countAck(b) < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	records := int(binary.BigEndian.Uint16(b[1:]))
	b = b[3:]
	for range records {
		start, end := readU24(b[1:]), readU24(b[1:])
		if b[0] == 0 {
			end = readU24(b[4:])
			b = b[7:]
		} else {
			b = b[4:]
		}
		for v := start; ; v = (v + 1) & 0xffffff {
			c.mark(v, nack)
			if v == end || (v-start)&0xffffff >= 1<<16 {
				break
			}
		}
	}
}

// mark records data datagram v as acknowledged or NACKed. c.mu is held.
func (c *Client) mark(v uint32, nack bool) {
	k := v & 0xffff
	w, bit := k/64, uint64(1)<<(k%64)
	if !nack && c.ackedBit[w]&bit == 0 {
		c.ackedBit[w] |= bit
		c.stats.Acked++
		if c.doneBit[w]&bit != 0 {
			c.stats.NACKed-- // NACKed first, acknowledged after all
		}
	}
	if c.doneBit[w]&bit == 0 {
		c.doneBit[w] |= bit
		c.resolved++
		if nack {
			c.stats.NACKed++
		}
	}
}

func (c *Client) onFrame(f *Frame) {
	if f.SplitCount != 0 || len(f.Payload) == 0 {
		return
	}
	switch f.Payload[0] {
	case IDConnectionRequestAccepted:
		c.acceptOK.Do(func() { close(c.accepted) })
	case IDConnectedPing:
		if len(f.Payload) < 9 {
			return
		}
		ping := int64(binary.BigEndian.Uint64(f.Payload[1:]))
		c.mu.Lock()
		c.sendLocked(Frame{Reliability: Unreliable, Payload: AppendConnectedPong(nil, ping, c.timestamp())})
		c.mu.Unlock()
	case IDConnectedPong:
	case IDDisconnectionNotification:
		c.mu.Lock()
		c.stats.PeerClosed = true
		c.mu.Unlock()
	default:
		select {
		case c.messages <- append([]byte(nil), f.Payload...):
		default:
		}
	}
}
