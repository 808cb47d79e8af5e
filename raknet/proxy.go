package raknet

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet/proxyproto"
)

// PROXY protocol version 2 (haproxy's proxy-protocol.txt, section 2.2)
// as tunnels and filters put it in front of a UDP datagram:
//
//	12 bytes  signature \r\n\r\n\0\r\nQUIT\n
//	 1 byte   version (high nibble, 2) and command (low: 0 LOCAL, 1 PROXY)
//	 1 byte   address family (high: 1 INET, 2 INET6) and transport (low: 2 DGRAM)
//	 2 bytes  length of what follows, big endian: addresses, then TLVs
//	          INET:  source 4, destination 4, source port 2, destination port 2
//	          INET6: source 16, destination 16, source port 2, destination port 2
//
// Then the datagram the client sent, as it sent it.
const (
	proxySigLen    = 12
	proxyFixedLen  = 16
	proxyAddrLenV4 = 12
	proxyAddrLenV6 = 36
	// maxProxyFlows bounds the flows a listener remembers (see
	// flowTable): one per client port of a tunnel that gives each client
	// its own, about 100 bytes each. A full table forgets its least
	// recently used flow.
	maxProxyFlows = 8192
)

// proxySig is the PROXY protocol v2 signature (the tests build headers
// with it). No RakNet datagram starts with 0x0D, so a datagram that
// carries one is never mistaken for one that does not.
var proxySig = [proxySigLen]byte{'\r', '\n', '\r', '\n', 0, '\r', '\n', 'Q', 'U', 'I', 'T', '\n'}

// The version-and-command and family-and-transport bytes accepted.
const (
	cmdLocal    = 0x20
	cmdProxy    = 0x21
	proxyUDPv4  = 0x12
	proxyUDPv6  = 0x22
	familyShift = 4
)

// Errors of parseProxyHeader: proxyproto's, values, so refusing a
// datagram allocates nothing.
var (
	errProxyShort   = proxyproto.ErrV2Short
	errProxyNone    = proxyproto.ErrV2None
	errProxyCommand = proxyproto.ErrV2Command
	errProxyFamily  = proxyproto.ErrV2Family
	errProxyLength  = proxyproto.ErrV2Length
)

// proxyHeader is what a PROXY v2 header says.
type proxyHeader struct {
	// local is set for the LOCAL command: the proxy's own traffic (a
	// health check), on behalf of no client.
	local bool
	// client is the source address of the client the proxy speaks for
	// (PROXY command).
	client netip.AddrPort
	// n is the header's length in bytes: the client's datagram follows.
	n int
}

// parseProxyHeader decodes the PROXY v2 header b starts with, for UDP
// (proxyproto.ParseV2): the PROXY command is accepted only for UDP over
// IPv4 or IPv6, the only addresses a RakNet client can have.
//
// go-proxyproto, whose encoder the tests use and whose ParseUDPDatagram
// FuzzProxyHeader holds this parser to, is not used here: it allocates
// about ten times per datagram (a bufio.Reader the size of the datagram,
// the Header, its addresses) and sizes its TLV buffer from the length
// field before checking it against the datagram, on a path that every
// datagram of a proxied player takes.
func parseProxyHeader(b []byte) (proxyHeader, error) {
	h, err := proxyproto.ParseV2(b, proxyproto.Datagram)
	return proxyHeader{local: h.Local, client: h.Client, n: h.Len}, err
}

// flowTable remembers, for each proxy address and port that sent a PROXY
// header, the client that header named, so that datagrams the proxy sends
// without a header (frp puts one on a flow's first datagram only) are
// known to be that client's. A header refreshes its flow, and so does any
// datagram of the flow; one unused for ttl is forgotten. The table holds
// at most max flows: a new one makes room by forgetting the least
// recently used. Entries live in one slice linked in order of use, so
// lookups, refreshes and evictions allocate nothing once it has grown.
// It is not safe for concurrent use: each of the listener's readers has
// its own.
type flowTable struct {
	ttl   time.Duration
	max   int
	index map[netip.AddrPort]int32
	slots []flow
	// head is the most recently used flow, tail the least; free is a
	// list of unused slots, linked by next. -1 ends each list.
	head, tail, free int32
}

// flow is one entry of a flowTable.
type flow struct {
	proxy, client netip.AddrPort
	seen          time.Time
	prev, next    int32
}

// newFlowTable returns a table that forgets a flow unused for ttl and
// holds at most max flows.
func newFlowTable(ttl time.Duration, max int) *flowTable {
	return &flowTable{ttl: ttl, max: max, index: make(map[netip.AddrPort]int32), head: -1, tail: -1, free: -1}
}

// len returns the number of flows held, expired ones not yet forgotten
// included.
func (t *flowTable) len() int { return len(t.index) }

// set records that proxy speaks for client at now.
func (t *flowTable) set(proxy, client netip.AddrPort, now time.Time) {
	t.expire(now)
	if i, ok := t.index[proxy]; ok {
		t.slots[i].client, t.slots[i].seen = client, now
		t.touch(i)
		return
	}
	if len(t.index) >= t.max {
		t.remove(t.tail)
	}
	var i int32
	if t.free >= 0 {
		i, t.free = t.free, t.slots[t.free].next
	} else {
		i = int32(len(t.slots))
		t.slots = append(t.slots, flow{})
	}
	t.slots[i] = flow{proxy: proxy, client: client, seen: now, prev: -1, next: t.head}
	if t.head >= 0 {
		t.slots[t.head].prev = i
	}
	t.head = i
	if t.tail < 0 {
		t.tail = i
	}
	t.index[proxy] = i
}

// get returns the client proxy speaks for, refreshing the flow, or false
// if no live flow is known.
func (t *flowTable) get(proxy netip.AddrPort, now time.Time) (netip.AddrPort, bool) {
	t.expire(now)
	i, ok := t.index[proxy]
	if !ok {
		return netip.AddrPort{}, false
	}
	t.slots[i].seen = now
	t.touch(i)
	return t.slots[i].client, true
}

// expire forgets the flows unused for ttl. The list is in order of use,
// so it stops at the first live one.
func (t *flowTable) expire(now time.Time) {
	for t.tail >= 0 && now.Sub(t.slots[t.tail].seen) >= t.ttl {
		t.remove(t.tail)
	}
}

// touch moves slot i to the head of the list.
func (t *flowTable) touch(i int32) {
	if t.head == i {
		return
	}
	t.unlink(i)
	t.slots[i].prev, t.slots[i].next = -1, t.head
	t.slots[t.head].prev = i
	t.head = i
}

// unlink takes slot i out of the list.
func (t *flowTable) unlink(i int32) {
	s := &t.slots[i]
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		t.head = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		t.tail = s.prev
	}
}

// remove forgets the flow in slot i.
func (t *flowTable) remove(i int32) {
	t.unlink(i)
	delete(t.index, t.slots[i].proxy)
	t.slots[i] = flow{next: t.free}
	t.free = i
}

// proxyGate applies a listener's PROXY protocol rules (see
// ListenConfig.ProxyProtocol) to each datagram before anything else sees
// it. Each of the listener's readers has its own (see withFlows): the
// trusted prefixes are shared and never change, the flows are the
// reader's. It is not safe for concurrent use.
type proxyGate struct {
	trusted trustedProxies
	flows   *flowTable
}

// proxyVerdict is what the gate decided for a datagram.
type proxyVerdict uint8

const (
	// proxyDirect: no header from an untrusted source, a client of its
	// own.
	proxyDirect proxyVerdict = iota
	// proxyClient: a client's datagram through a trusted proxy, named by
	// its header or its flow.
	proxyClient
	// The datagram is dropped:
	proxyUntrusted // a header from a source not trusted
	proxyNoFlow    // no header, from a trusted proxy with no flow
	proxyLocal     // a LOCAL header (health check)
	proxyMalformed // a header that does not parse, or nothing after it
)

// newProxyGate returns the gate for a listener that trusts the given
// prefixes, remembering flows for ttl; it returns an error for an empty
// list or a prefix that is not valid. IPv4-mapped IPv6 prefixes are taken as the IPv4
// prefixes they map.
func newProxyGate(trusted []netip.Prefix, ttl time.Duration) (*proxyGate, error) {
	if len(trusted) == 0 {
		return nil, errors.New("ProxyProtocol set without TrustedProxies")
	}
	g := &proxyGate{flows: newFlowTable(ttl, maxProxyFlows)}
	for _, p := range trusted {
		if !p.IsValid() {
			return nil, fmt.Errorf("trusted proxy %v is not a valid prefix", p)
		}
	}
	g.trusted = newTrustedProxies(trusted)
	return g, nil
}

// withFlows returns a gate with g's trusted proxies and a flow table of
// its own, of at most max flows, for one reader.
func (g *proxyGate) withFlows(max int) *proxyGate {
	return &proxyGate{trusted: g.trusted, flows: newFlowTable(g.flows.ttl, max)}
}

// isTrusted reports whether a datagram from src may carry a PROXY header.
func (g *proxyGate) isTrusted(src netip.Addr) bool { return g.trusted.contains(src) }

// unwrap applies the rules to datagram b from src at now. For proxyDirect
// it returns b and src as they are; for proxyClient, the client's
// datagram (never empty) and its address; otherwise nothing, and the
// datagram is to be dropped.
func (g *proxyGate) unwrap(b []byte, src netip.AddrPort, now time.Time) ([]byte, netip.AddrPort, proxyVerdict) {
	if !hasAnyProxySignature(b) {
		if !g.isTrusted(src.Addr()) {
			return b, src, proxyDirect
		}
		client, ok := g.flows.get(src, now)
		if !ok {
			return nil, netip.AddrPort{}, proxyNoFlow
		}
		return b, client, proxyClient
	}
	if !g.isTrusted(src.Addr()) {
		// Not parsed: an untrusted source gets no further than this.
		return nil, netip.AddrPort{}, proxyUntrusted
	}
	h, err := parseAnyProxyHeader(b)
	switch {
	case err != nil:
		return nil, netip.AddrPort{}, proxyMalformed
	case h.local:
		return nil, netip.AddrPort{}, proxyLocal
	}
	client := key(h.client)
	g.flows.set(src, client, now)
	if h.n == len(b) {
		return nil, netip.AddrPort{}, proxyMalformed
	}
	return b[h.n:], client, proxyClient
}

// unproxy runs the reader's gate over datagram b from src and counts
// what it drops. It returns the datagram to handle and whose it is, or a
// nil slice for one dropped.
func (r *reader) unproxy(b []byte, src netip.AddrPort, now time.Time) ([]byte, netip.AddrPort) {
	l := r.l
	// Only a trusted proxy's datagram may use the read room (see
	// proxyReadRoom), and only for a header: what it carries is held
	// to maxDatagramIn like any other datagram.
	if len(b) > maxDatagramIn && !r.proxy.isTrusted(src.Addr()) {
		l.n.oversize.Add(1)
		return nil, netip.AddrPort{}
	}
	b, from, v := r.proxy.unwrap(b, src, now)
	if len(b) > maxDatagramIn {
		l.n.oversize.Add(1)
		return nil, netip.AddrPort{}
	}
	switch v {
	case proxyUntrusted:
		l.n.proxyUntrusted.Add(1)
	case proxyNoFlow:
		l.n.proxyNoFlow.Add(1)
	case proxyLocal:
		l.n.proxyLocal.Add(1)
	case proxyMalformed:
		l.n.dropped.Add(1)
	}
	return b, from
}
