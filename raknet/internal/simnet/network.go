package simnet

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults and bounds.
const (
	// DefaultRecvBuffer is a socket's receive buffer in bytes unless
	// configured: Linux's net.core.rmem_default.
	DefaultRecvBuffer = 212992
	// DefaultQueueBytes bounds a bandwidth-limited link's queue unless its
	// Conditions say otherwise: a small router buffer.
	DefaultQueueBytes = 64 << 10
	// firstEphemeral and lastEphemeral are the ports port 0 picks from:
	// Linux's net.ipv4.ip_local_port_range.
	firstEphemeral = 32768
	lastEphemeral  = 60999
	// maxPayload4 and maxPayload6 are the largest UDP payloads: IPv4's
	// 65535-byte total length less its 20-byte header and UDP's 8, and
	// IPv6's 65535-byte payload length (its own header not counted) less
	// UDP's 8.
	maxPayload4 = 65507
	maxPayload6 = 65527
)

// Config configures a Network. The zero value is ready to use.
type Config struct {
	// Seed seeds every link's random generator.
	Seed uint64
	// Addr4 and Addr6 are the addresses that binding an unspecified
	// address (0.0.0.0, ::, or an empty host) gives a socket; the zero
	// values mean 127.0.0.1 and ::1.
	Addr4, Addr6 netip.Addr
	// RecvBuffer is each socket's receive buffer in bytes; 0 means
	// DefaultRecvBuffer.
	RecvBuffer int
}

// Conditions are what a link does to the datagrams that cross it. The
// zero value delivers every datagram at once, in order.
type Conditions struct {
	// Loss is the probability that a datagram is lost, in [0, 1].
	Loss float64
	// Delay is the one-way delay every datagram takes.
	Delay time.Duration
	// Jitter is an extra delay drawn uniformly from [0, Jitter] for each
	// datagram; datagrams sent closer together than it reorder.
	Jitter time.Duration
	// Duplicate is the probability that a datagram arrives twice, the
	// copy with its own jitter, in [0, 1].
	Duplicate float64
	// Bandwidth is the link's rate in bytes per second; 0 means
	// unlimited. Datagrams queue behind each other for it.
	Bandwidth int
	// QueueBytes bounds the bytes waiting for a limited Bandwidth;
	// datagrams that do not fit are dropped, as a router's tail drop
	// does. 0 means DefaultQueueBytes.
	QueueBytes int
	// Drop, if set, is called for every datagram written to the link
	// before anything else happens to it; true drops it. It runs without
	// the network's lock held, so it may call the Network, and b is valid
	// only during the call.
	Drop func(from, to netip.AddrPort, b []byte) bool
}

func (c *Conditions) check() {
	switch {
	case c.Loss < 0 || c.Loss > 1:
		panic(fmt.Sprintf("simnet: loss %v outside [0, 1]", c.Loss))
	case c.Duplicate < 0 || c.Duplicate > 1:
		panic(fmt.Sprintf("simnet: duplicate %v outside [0, 1]", c.Duplicate))
	case c.Delay < 0 || c.Jitter < 0:
		panic("simnet: negative delay or jitter")
	case c.Bandwidth < 0 || c.QueueBytes < 0:
		panic("simnet: negative bandwidth or queue")
	}
}

// Stats are counters of datagrams. A socket's Sent, Filtered, Lost,
// QueueDropped, Unreachable and Duplicated count datagrams it wrote; its
// Delivered and BufferDropped count datagrams addressed to it. A
// network's count every datagram.
type Stats struct {
	Sent, SentBytes uint64 // written
	// Delivered and DeliveredBytes count datagrams placed in a receive
	// buffer, duplicates included.
	Delivered, DeliveredBytes uint64
	Duplicated                uint64 // extra copies made (Conditions.Duplicate)
	Filtered                  uint64 // dropped by Conditions.Drop
	Lost                      uint64 // dropped at random (Conditions.Loss)
	QueueDropped              uint64 // dropped at a full bandwidth queue
	BufferDropped             uint64 // dropped at a full receive buffer
	Unreachable               uint64 // arrived where no socket was bound
}

// Network is a set of sockets and the links between them. Its methods are
// safe for concurrent use. Use it inside the synctest bubble that uses its
// sockets: the timers it arms belong to the bubble they are made in.
type Network struct {
	cfg Config

	mu      sync.Mutex
	sockets map[netip.AddrPort]*Conn
	// socketStats holds the counters of the socket last bound at each
	// address, kept after it closes.
	socketStats map[netip.AddrPort]*Stats
	nextPort    int
	def         Conditions
	conds       map[linkKey]Conditions
	links       map[linkKey]*link
	stats       Stats
	events      Queue[event]
	timer       *time.Timer
	timerAt     time.Time // when timer fires; zero when it is not armed
}

// New returns a network without sockets whose links deliver at once.
func New(cfg Config) *Network {
	if !cfg.Addr4.IsValid() {
		cfg.Addr4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if !cfg.Addr6.IsValid() {
		cfg.Addr6 = netip.IPv6Loopback()
	}
	if !cfg.Addr4.Is4() || !cfg.Addr6.Is6() || cfg.Addr6.Is4In6() {
		panic("simnet: Addr4 must be IPv4 and Addr6 IPv6")
	}
	if cfg.RecvBuffer <= 0 {
		cfg.RecvBuffer = DefaultRecvBuffer
	}
	return &Network{
		cfg:         cfg,
		sockets:     make(map[netip.AddrPort]*Conn),
		socketStats: make(map[netip.AddrPort]*Stats),
		nextPort:    firstEphemeral,
		conds:       make(map[linkKey]Conditions),
		links:       make(map[linkKey]*link),
	}
}

// SetConditions sets the conditions of every link that has none of its
// own. Datagrams already on their way are not affected.
func (n *Network) SetConditions(c Conditions) {
	c.check()
	n.mu.Lock()
	n.def = c
	n.mu.Unlock()
}

// SetLink sets the conditions of the link from one address to another,
// overriding SetConditions for it.
func (n *Network) SetLink(from, to netip.AddrPort, c Conditions) {
	c.check()
	n.mu.Lock()
	n.conds[linkKey{norm(from), norm(to)}] = c
	n.mu.Unlock()
}

// ClearLink makes the link from one address to another follow
// SetConditions again.
func (n *Network) ClearLink(from, to netip.AddrPort) {
	n.mu.Lock()
	delete(n.conds, linkKey{norm(from), norm(to)})
	n.mu.Unlock()
}

// Stats returns the network's counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// SocketStats returns the counters of the socket bound at ap, or of the
// last one bound there if it is closed; false if none ever was.
func (n *Network) SocketStats(ap netip.AddrPort) (Stats, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.socketStats[norm(ap)]
	if !ok {
		return Stats{}, false
	}
	return *s, true
}

// Sockets returns the addresses of the open sockets, sorted.
func (n *Network) Sockets() []netip.AddrPort {
	n.mu.Lock()
	defer n.mu.Unlock()
	aps := make([]netip.AddrPort, 0, len(n.sockets))
	for ap := range n.sockets {
		aps = append(aps, ap)
	}
	slices.SortFunc(aps, netip.AddrPort.Compare)
	return aps
}

// InFlight returns how many datagrams are on their way.
func (n *Network) InFlight() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.events.Len()
}

// ListenPacket opens a socket, as net.ListenPacket does for "udp", "udp4"
// and "udp6". The host must be empty or an IP literal ("localhost" is
// Addr4, or Addr6 for udp6); an unspecified or empty one binds Addr4 (or
// Addr6 for an IPv6 literal or udp6). Any other address is bound as
// given: every address belongs to the simulated host. Port 0 picks a free
// port; a taken one fails with an error wrapping syscall.EADDRINUSE. The
// socket exchanges datagrams only with its own address family.
func (n *Network) ListenPacket(network, address string) (net.PacketConn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "listen", Net: network, Err: err}
	}
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, opErr(net.UnknownNetworkError(network))
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, opErr(err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, opErr(&net.AddrError{Err: "invalid port", Addr: address})
	}
	var ip netip.Addr
	switch host {
	case "", "localhost":
		ip = n.cfg.Addr4
		if network == "udp6" {
			ip = n.cfg.Addr6
		}
	default:
		ip, err = netip.ParseAddr(host)
		if err != nil {
			return nil, opErr(&net.AddrError{Err: "no such host (simnet takes IP literals)", Addr: host})
		}
		ip = ip.Unmap().WithZone("")
		if ip.IsUnspecified() {
			if ip.Is6() || network == "udp6" {
				ip = n.cfg.Addr6
			} else {
				ip = n.cfg.Addr4
			}
		}
	}
	switch {
	case network == "udp4" && !ip.Is4():
		return nil, opErr(&net.AddrError{Err: "non-IPv4 address", Addr: host})
	case network == "udp6" && ip.Is4():
		return nil, opErr(&net.AddrError{Err: "non-IPv6 address", Addr: host})
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	ap := netip.AddrPortFrom(ip, uint16(port))
	if port == 0 {
		var ok bool
		if ap, ok = n.freePort(ip); !ok {
			return nil, opErr(os.NewSyscallError("bind", syscall.EADDRINUSE))
		}
	} else if n.sockets[ap] != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: net.UDPAddrFromAddrPort(ap), Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	c := &Conn{
		n:       n,
		network: network,
		local:   ap,
		laddr:   net.UDPAddrFromAddrPort(ap),
		stats:   new(Stats),
		recvBuf: n.cfg.RecvBuffer,
	}
	n.sockets[ap] = c
	n.socketStats[ap] = c.stats
	return c, nil
}

// freePort returns the next free ephemeral port on ip, as the kernel
// hands them out. n.mu is held.
func (n *Network) freePort(ip netip.Addr) (netip.AddrPort, bool) {
	for range lastEphemeral - firstEphemeral + 1 {
		p := n.nextPort
		n.nextPort++
		if n.nextPort > lastEphemeral {
			n.nextPort = firstEphemeral
		}
		ap := netip.AddrPortFrom(ip, uint16(p))
		if n.sockets[ap] == nil {
			return ap, true
		}
	}
	return netip.AddrPort{}, false
}

// norm returns ap with an IPv4-mapped address unmapped and no zone.
func norm(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

// linkKey names a link: datagrams from one address to another.
type linkKey struct{ from, to netip.AddrPort }

// link is a link's state: its generator and its bandwidth queue.
type link struct {
	rng *rand.Rand
	// busyUntil is when the datagrams queued for the bandwidth have all
	// left; queue holds when each leaves and its size, oldest first.
	busyUntil time.Time
	queue     []queued
	queueHead int
	backlog   int // bytes in queue from queueHead on
}

type queued struct {
	done time.Time
	size int
}

// link returns the state of the link k, creating it. n.mu is held.
func (n *Network) link(k linkKey) *link {
	if l := n.links[k]; l != nil {
		return l
	}
	h := fnv.New64a()
	for _, ap := range [2]netip.AddrPort{k.from, k.to} {
		b, _ := ap.MarshalBinary()
		_, _ = h.Write(b)
	}
	l := &link{rng: rand.New(rand.NewPCG(n.cfg.Seed, h.Sum64()))}
	n.links[k] = l
	return l
}

// conditions returns the conditions of link k. n.mu is held.
func (n *Network) conditions(k linkKey) Conditions {
	if c, ok := n.conds[k]; ok {
		return c
	}
	return n.def
}

// send puts a datagram written by src on its way. n.mu is held.
func (n *Network) send(src *Conn, k linkKey, c *Conditions, b []byte, now time.Time) {
	l := n.link(k)
	if c.Loss > 0 && l.rng.Float64() < c.Loss {
		src.stats.Lost++
		n.stats.Lost++
		return
	}
	copies := 1
	if c.Duplicate > 0 && l.rng.Float64() < c.Duplicate {
		copies = 2
	}
	depart := now
	if c.Bandwidth > 0 {
		for l.queueHead < len(l.queue) && !l.queue[l.queueHead].done.After(now) {
			l.backlog -= l.queue[l.queueHead].size
			l.queueHead++
		}
		if l.queueHead == len(l.queue) {
			l.queue, l.queueHead = l.queue[:0], 0
		}
		limit := c.QueueBytes
		if limit == 0 {
			limit = DefaultQueueBytes
		}
		if l.backlog > 0 && l.backlog+len(b) > limit {
			src.stats.QueueDropped++
			n.stats.QueueDropped++
			return
		}
		start := now
		if l.busyUntil.After(start) {
			start = l.busyUntil
		}
		depart = start.Add(time.Duration(int64(len(b)) * int64(time.Second) / int64(c.Bandwidth)))
		l.busyUntil = depart
		l.queue = append(l.queue, queued{depart, len(b)})
		l.backlog += len(b)
	}
	p := append([]byte(nil), b...)
	for i := range copies {
		at := depart.Add(c.Delay)
		if c.Jitter > 0 {
			at = at.Add(time.Duration(l.rng.Int64N(int64(c.Jitter) + 1)))
		}
		if i > 0 {
			src.stats.Duplicated++
			n.stats.Duplicated++
		}
		n.events.Push(at, event{from: k.from, to: k.to, b: p, src: src.stats})
	}
	n.arm(now)
}

// arm makes the timer fire by the earliest arrival. n.mu is held.
func (n *Network) arm(now time.Time) {
	if n.events.Len() == 0 {
		return
	}
	next := n.events.Next()
	if !n.timerAt.IsZero() && !next.Before(n.timerAt) {
		return
	}
	n.timerAt = next
	if n.timer == nil {
		n.timer = time.AfterFunc(next.Sub(now), n.fire)
		return
	}
	n.timer.Reset(next.Sub(now))
}

// fire delivers every datagram that has arrived.
func (n *Network) fire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	n.timerAt = time.Time{}
	for e, ok := n.events.PopDue(now); ok; e, ok = n.events.PopDue(now) {
		n.deliver(&e)
	}
	n.arm(now)
}

// deliver places an arrived datagram in its socket's buffer. n.mu is
// held.
func (n *Network) deliver(e *event) {
	c := n.sockets[e.to]
	if c == nil {
		e.src.Unreachable++
		n.stats.Unreachable++
		return
	}
	if c.queued > 0 && c.queued+len(e.b) > c.recvBuf {
		c.stats.BufferDropped++
		n.stats.BufferDropped++
		return
	}
	c.queue = append(c.queue, datagram{from: e.from, b: e.b})
	c.queued += len(e.b)
	c.stats.Delivered++
	c.stats.DeliveredBytes += uint64(len(e.b))
	n.stats.Delivered++
	n.stats.DeliveredBytes += uint64(len(e.b))
	c.wake()
}

// event is a datagram on its way.
type event struct {
	from, to netip.AddrPort
	b        []byte
	src      *Stats // the sender's counters
}

// errMissingAddress is returned by WriteTo without an address, as net's.
var errMissingAddress = errors.New("missing address")
