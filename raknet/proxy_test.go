package raknet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	proxyproto "github.com/pires/go-proxyproto"
)

// proxyDst is the destination the test headers name: the server as the
// proxy reached it.
var proxyDst = netip.MustParseAddrPort("127.0.0.1:19132")

// proxyHeader returns the PROXY v2 header go-proxyproto writes for a
// datagram from client, followed by payload.
func proxied(t testing.TB, client netip.AddrPort, payload []byte) []byte {
	t.Helper()
	h := &proxyproto.Header{
		Version: 2, Command: proxyproto.PROXY, TransportProtocol: proxyproto.UDPv4,
		SourceAddr: net.UDPAddrFromAddrPort(client), DestinationAddr: net.UDPAddrFromAddrPort(proxyDst),
	}
	if !client.Addr().Is4() {
		h.TransportProtocol = proxyproto.UDPv6
		h.DestinationAddr = &net.UDPAddr{IP: net.IPv6loopback, Port: 19133}
	}
	b, err := h.FormatUDPDatagram(payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// localHeader returns a LOCAL header (a proxy's health check) followed by
// payload, as go-proxyproto writes it.
func localHeader(t testing.TB, payload []byte) []byte {
	t.Helper()
	h := &proxyproto.Header{Version: 2, Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}
	b, err := h.FormatUDPDatagram(payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawProxyHeader builds a v2 header by hand: command, family, the length
// field and what follows it.
func rawProxyHeader(cmd, fam byte, length uint16, rest []byte) []byte {
	b := append(append([]byte(nil), proxySig[:]...), cmd, fam)
	b = binary.BigEndian.AppendUint16(b, length)
	return append(b, rest...)
}

func TestParseProxyHeader(t *testing.T) {
	payload := []byte{wire.IDUnconnectedPing, 1, 2, 3}
	v4 := netip.MustParseAddrPort("203.0.113.7:5000")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:6000")
	withTLV := &proxyproto.Header{
		Version: 2, Command: proxyproto.PROXY, TransportProtocol: proxyproto.UDPv4,
		SourceAddr: net.UDPAddrFromAddrPort(v4), DestinationAddr: net.UDPAddrFromAddrPort(proxyDst),
	}
	if err := withTLV.SetTLVs([]proxyproto.TLV{{Type: proxyproto.PP2_TYPE_UNIQUE_ID, Value: []byte("flow-1")}}); err != nil {
		t.Fatal(err)
	}
	tlv, err := withTLV.FormatUDPDatagram(payload)
	if err != nil {
		t.Fatal(err)
	}
	tcp := &proxyproto.Header{
		Version: 2, Command: proxyproto.PROXY, TransportProtocol: proxyproto.TCPv4,
		SourceAddr: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5000}, DestinationAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19132},
	}
	tcpb, err := tcp.FormatUDPDatagram(payload)
	if err != nil {
		t.Fatal(err)
	}
	addrs4 := make([]byte, proxyAddrLenV4)
	for _, tc := range []struct {
		name   string
		b      []byte
		client netip.AddrPort
		local  bool
		n      int
		err    error
	}{
		{name: "UDPv4", b: proxied(t, v4, payload), client: v4, n: 28},
		{name: "UDPv6", b: proxied(t, v6, payload), client: v6, n: 52},
		{name: "UDPv4 with TLV", b: tlv, client: v4, n: 28 + 3 + len("flow-1")},
		{name: "LOCAL", b: localHeader(t, payload), local: true, n: 16},
		{name: "LOCAL with an address block", b: rawProxyHeader(cmdLocal, proxyUDPv4, 12, append(addrs4, payload...)), local: true, n: 28},
		{name: "TCPv4", b: tcpb, err: errProxyFamily},
		{name: "PROXY UNSPEC", b: rawProxyHeader(cmdProxy, 0, 0, payload), err: errProxyFamily},
		{name: "PROXY unix", b: rawProxyHeader(cmdProxy, 0x32, 216, make([]byte, 216)), err: errProxyFamily},
		{name: "LOCAL unknown family", b: rawProxyHeader(cmdLocal, 0x13, 0, payload), err: errProxyFamily},
		{name: "version 1 command", b: rawProxyHeader(0x11, proxyUDPv4, 12, addrs4), err: errProxyCommand},
		{name: "unknown command", b: rawProxyHeader(0x22, proxyUDPv4, 12, addrs4), err: errProxyCommand},
		{name: "address block too short", b: rawProxyHeader(cmdProxy, proxyUDPv4, 11, addrs4), err: errProxyLength},
		{name: "IPv6 block too short", b: rawProxyHeader(cmdProxy, proxyUDPv6, 12, addrs4), err: errProxyLength},
		{name: "length over the datagram", b: rawProxyHeader(cmdProxy, proxyUDPv4, 1000, addrs4), err: errProxyShort},
		{name: "length over 4096", b: rawProxyHeader(cmdLocal, 0, 4097, make([]byte, 4097)), err: errProxyLength},
		{name: "no signature", b: payload, err: errProxyShort},
		{name: "damaged signature", b: append([]byte{'\r', '\n', '\r', '\n', 0, '\r', '\n', 'Q', 'U', 'I', 'T', 'X'}, 0x21, 0x12, 0, 0), err: errProxyNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseProxyHeader(tc.b)
			if !errors.Is(err, tc.err) {
				t.Fatalf("got error %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if h.local != tc.local || h.client != tc.client || h.n != tc.n {
				t.Errorf("got local %v client %v n %d, want %v %v %d", h.local, h.client, h.n, tc.local, tc.client, tc.n)
			}
			// go-proxyproto reads the same header.
			lh, rest, err := proxyproto.ParseUDPDatagram(tc.b)
			if err != nil {
				t.Fatalf("go-proxyproto: %v", err)
			}
			if !bytes.Equal(rest, tc.b[h.n:]) {
				t.Errorf("got payload % x, go-proxyproto % x", tc.b[h.n:], rest)
			}
			if lh.Command.IsLocal() != h.local {
				t.Errorf("got local %v, go-proxyproto %v", h.local, lh.Command.IsLocal())
			}
		})
	}
}

// Every truncation of a valid header fails, whatever the family.
func TestParseProxyHeaderTruncated(t *testing.T) {
	for _, client := range []netip.AddrPort{netip.MustParseAddrPort("127.0.9.1:4000"), netip.MustParseAddrPort("[::1]:4000")} {
		b := proxied(t, client, nil)
		for n := range len(b) {
			if _, err := parseProxyHeader(b[:n]); err == nil {
				t.Errorf("%v: %d of %d bytes parsed, want an error", client, n, len(b))
			}
		}
		if _, err := parseProxyHeader(b); err != nil {
			t.Errorf("%v: whole header: %v", client, err)
		}
	}
}

// ap returns the address 127.0.0.1:port.
func ap(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
}

// checkFlowList checks the table's list: every flow once, linked both
// ways, most recently used first.
func checkFlowList(t *testing.T, ft *flowTable) {
	t.Helper()
	n, prev := 0, int32(-1)
	for i := ft.head; i >= 0; i = ft.slots[i].next {
		s := ft.slots[i]
		if s.prev != prev {
			t.Fatalf("slot %d: prev %d, want %d", i, s.prev, prev)
		}
		if prev >= 0 && s.seen.After(ft.slots[prev].seen) {
			t.Fatalf("slot %d used at %v after slot %d at %v", i, s.seen, prev, ft.slots[prev].seen)
		}
		if j, ok := ft.index[s.proxy]; !ok || j != i {
			t.Fatalf("slot %d (%v) not indexed", i, s.proxy)
		}
		prev = i
		n++
		if n > len(ft.slots) {
			t.Fatal("the list loops")
		}
	}
	if ft.tail != prev {
		t.Fatalf("tail %d, want %d", ft.tail, prev)
	}
	if n != ft.len() {
		t.Fatalf("%d flows listed, %d indexed", n, ft.len())
	}
}

// A full table forgets its least recently used flow: set and get both
// count as use.
func TestFlowTableBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ft := newFlowTable(time.Minute, 3)
	client := func(i uint16) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("127.0.9.1"), i) }
	for i := range uint16(3) {
		ft.set(ap(i), client(i), t0.Add(time.Duration(i)*time.Second))
	}
	// Flow 0 is used again; 1 is now the least recent.
	if c, ok := ft.get(ap(0), t0.Add(3*time.Second)); !ok || c != client(0) {
		t.Fatalf("get flow 0: got %v %v, want %v true", c, ok, client(0))
	}
	ft.set(ap(3), client(3), t0.Add(4*time.Second))
	checkFlowList(t, ft)
	if ft.len() != 3 {
		t.Fatalf("got %d flows, want 3", ft.len())
	}
	if _, ok := ft.get(ap(1), t0.Add(5*time.Second)); ok {
		t.Error("flow 1, the least recently used, was kept")
	}
	for _, i := range []uint16{0, 2, 3} {
		if c, ok := ft.get(ap(i), t0.Add(5*time.Second)); !ok || c != client(i) {
			t.Errorf("flow %d: got %v %v, want %v true", i, c, ok, client(i))
		}
	}
	// A header naming another client moves the flow to it.
	ft.set(ap(2), client(9), t0.Add(6*time.Second))
	if c, _ := ft.get(ap(2), t0.Add(6*time.Second)); c != client(9) {
		t.Errorf("got %v, want %v", c, client(9))
	}
	// However many flows come, the table holds three in three slots.
	for i := range uint16(1000) {
		ft.set(ap(100+i), client(i), t0.Add(7*time.Second))
	}
	checkFlowList(t, ft)
	if ft.len() != 3 || len(ft.slots) != 3 {
		t.Errorf("got %d flows in %d slots, want 3 in 3", ft.len(), len(ft.slots))
	}
}

// A flow unused for the TTL is forgotten, and any use keeps it.
func TestFlowTableExpiry(t *testing.T) {
	const ttl = 10 * time.Second
	t0 := time.Unix(1000, 0)
	ft := newFlowTable(ttl, 100)
	c := netip.MustParseAddrPort("127.0.9.1:4000")
	ft.set(ap(1), c, t0)
	ft.set(ap(2), c, t0.Add(5*time.Second))
	for _, at := range []time.Duration{9 * time.Second, 18 * time.Second, 27 * time.Second} {
		if _, ok := ft.get(ap(1), t0.Add(at)); !ok {
			t.Fatalf("flow 1 gone at t0+%v, used %v before", at, 9*time.Second)
		}
	}
	// Flow 2, unused since t0+5s, is gone by t0+15s.
	if _, ok := ft.get(ap(2), t0.Add(15*time.Second)); ok {
		t.Error("flow 2 kept 10 s after its last use")
	}
	if ft.len() != 1 {
		t.Errorf("got %d flows, want 1", ft.len())
	}
	if _, ok := ft.get(ap(1), t0.Add(27*time.Second+ttl)); ok {
		t.Error("flow 1 kept 10 s after its last use")
	}
	if ft.len() != 0 {
		t.Errorf("got %d flows, want 0", ft.len())
	}
	// Freed slots are used again.
	for i := range uint16(2) {
		ft.set(ap(10+i), c, t0.Add(time.Minute))
	}
	checkFlowList(t, ft)
	if len(ft.slots) != 2 {
		t.Errorf("got %d slots, want the 2 freed ones used again", len(ft.slots))
	}
	// A set expires what it passes, not only a get.
	ft.set(ap(20), c, t0.Add(time.Minute+ttl))
	if ft.len() != 1 {
		t.Errorf("got %d flows, want only the new one", ft.len())
	}
}

// The table agrees with a plain LRU model under random use.
func TestFlowTableModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const max, ttl = 8, 50 * time.Millisecond
	ft := newFlowTable(ttl, max)
	// use orders entries by last use: several uses share a time.
	type entry struct {
		client netip.AddrPort
		seen   time.Time
		use    int
	}
	model := map[netip.AddrPort]entry{}
	now := time.Unix(1000, 0)
	evict := func() {
		for p, e := range model {
			if now.Sub(e.seen) >= ttl {
				delete(model, p)
			}
		}
	}
	for i := range 20000 {
		now = now.Add(time.Duration(rng.IntN(5)) * time.Millisecond)
		p := ap(uint16(rng.IntN(16)))
		evict()
		if rng.IntN(2) == 0 {
			c := netip.AddrPortFrom(netip.MustParseAddr("127.0.9.1"), uint16(i))
			ft.set(p, c, now)
			if _, ok := model[p]; !ok && len(model) >= max {
				var oldest netip.AddrPort
				use := -1
				for q, e := range model {
					if use < 0 || e.use < use {
						oldest, use = q, e.use
					}
				}
				delete(model, oldest)
			}
			model[p] = entry{c, now, i}
		} else {
			c, ok := ft.get(p, now)
			e, want := model[p]
			if ok != want || (ok && c != e.client) {
				t.Fatalf("op %d: get %v: got %v %v, want %v %v", i, p, c, ok, e.client, want)
			}
			if ok {
				model[p] = entry{c, now, i}
			}
		}
		if ft.len() != len(model) {
			t.Fatalf("op %d: got %d flows, want %d", i, ft.len(), len(model))
		}
	}
	checkFlowList(t, ft)
}

func TestNewProxyGate(t *testing.T) {
	if _, err := newProxyGate(nil, time.Second); err == nil {
		t.Error("no trusted proxies: got no error")
	}
	if _, err := newProxyGate([]netip.Prefix{{}}, time.Second); err == nil {
		t.Error("invalid prefix: got no error")
	}
	g, err := newProxyGate([]netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/120"), netip.MustParsePrefix("10.1.2.3/8")}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.5", true}, {"::ffff:127.0.0.5", true}, {"127.0.1.5", false},
		{"10.200.0.1", true}, {"11.0.0.1", false}, {"::1", false},
	} {
		if got := g.isTrusted(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("isTrusted(%s): got %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// The gate's rules, datagram by datagram, in order: flows carry from one
// case to the next.
func TestProxyGateRules(t *testing.T) {
	g, err := newProxyGate([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	p1, p2 := ap(30001), ap(30002)
	p1mapped := netip.AddrPortFrom(netip.AddrFrom16(p1.Addr().As16()), p1.Port())
	lan := netip.MustParseAddrPort("127.0.5.1:4000")
	c1, c2 := netip.MustParseAddrPort("127.0.9.1:4000"), netip.MustParseAddrPort("[2001:db8::9]:4000")
	for _, tc := range []struct {
		name   string
		at     time.Duration
		src    netip.AddrPort
		b      []byte
		want   proxyVerdict
		client netip.AddrPort
	}{
		{"untrusted without header is direct", 0, lan, ping, proxyDirect, lan},
		{"untrusted header is refused", 0, lan, proxied(t, c1, ping), proxyUntrusted, netip.AddrPort{}},
		{"trusted without header or flow", 0, p1, ping, proxyNoFlow, netip.AddrPort{}},
		{"trusted header", 0, p1, proxied(t, c1, ping), proxyClient, c1},
		{"flow without header", time.Second, p1, ping, proxyClient, c1},
		{"flow as IPv4-mapped source", time.Second, p1mapped, proxied(t, c2, ping), proxyClient, c2},
		{"another port has no flow", time.Second, p2, ping, proxyNoFlow, netip.AddrPort{}},
		{"LOCAL", time.Second, p2, localHeader(t, ping), proxyLocal, netip.AddrPort{}},
		{"LOCAL makes no flow", time.Second, p2, ping, proxyNoFlow, netip.AddrPort{}},
		{"malformed", time.Second, p2, rawProxyHeader(cmdProxy, proxyUDPv4, 3, []byte{1, 2, 3}), proxyMalformed, netip.AddrPort{}},
		{"header alone", time.Second, p2, proxied(t, c1, nil), proxyMalformed, netip.AddrPort{}},
		{"header alone makes a flow", time.Second, p2, ping, proxyClient, c1},
		{"flow kept by its use", 10 * time.Second, p2, ping, proxyClient, c1},
		{"flow gone after the timeout", 20 * time.Second, p2, ping, proxyNoFlow, netip.AddrPort{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, client, v := g.unwrap(tc.b, tc.src, t0.Add(tc.at))
			if v != tc.want || client != tc.client {
				t.Fatalf("got verdict %d client %v, want %d %v", v, client, tc.want, tc.client)
			}
			switch {
			case v > proxyClient && b != nil:
				t.Errorf("dropped, but got %d bytes", len(b))
			case v <= proxyClient && !bytes.Equal(b, ping):
				t.Errorf("got payload % x, want the ping % x", b, ping)
			}
		})
	}
}

// The gate allocates nothing per datagram once a flow exists.
func TestProxyGateAllocs(t *testing.T) {
	g, err := newProxyGate([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	hdr := proxied(t, netip.MustParseAddrPort("127.0.9.1:4000"), ping)
	bad := rawProxyHeader(cmdProxy, proxyUDPv4, 4000, nil)
	now := time.Unix(1000, 0)
	g.unwrap(hdr, ap(1), now)
	for _, tc := range []struct {
		name string
		b    []byte
		src  netip.AddrPort
	}{
		{"header", hdr, ap(1)}, {"flow", ping, ap(1)}, {"no flow", ping, ap(2)},
		{"direct", ping, netip.MustParseAddrPort("127.0.5.1:1")}, {"untrusted header", hdr, netip.MustParseAddrPort("127.0.5.1:1")},
		{"length over the datagram", bad, ap(1)},
	} {
		if n := testing.AllocsPerRun(100, func() { g.unwrap(tc.b, tc.src, now) }); n != 0 {
			t.Errorf("%s: got %v allocations, want 0", tc.name, n)
		}
	}
}

func TestListenProxyProtocolConfig(t *testing.T) {
	for _, lc := range []ListenConfig{
		{ProxyProtocol: true},
		{ProxyProtocol: true, TrustedProxies: []netip.Prefix{{}}},
	} {
		if l, err := lc.Listen("127.0.0.1:0"); err == nil {
			_ = l.Close()
			t.Errorf("Listen with TrustedProxies %v: got no error", lc.TrustedProxies)
		}
	}
	// Without ProxyProtocol, TrustedProxies is ignored and a header is no
	// RakNet datagram.
	l := listenTest(t, ListenConfig{ListenPacket: sinkListen, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	l.handle(proxied(t, netip.MustParseAddrPort("127.0.9.1:4000"), ping), ap(1), time.Now())
	if st := l.Stats(); st.Dropped != 1 || st.Pings != 0 || st.ProxyUntrusted != 0 {
		t.Errorf("got dropped %d pings %d untrusted %d, want 1 0 0", st.Dropped, st.Pings, st.ProxyUntrusted)
	}
}

// recordConn is a PacketConn that records what is written and where, and
// blocks reads until closed: the listener is fed by calling its handler.
type recordConn struct {
	sinkConn
	mu     sync.Mutex
	writes []sent
}

// sent is a datagram a recordConn was given.
type sent struct {
	b  []byte
	to netip.AddrPort
}

func (r *recordConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, sent{bytes.Clone(b), addrPortOf(addr)})
	r.mu.Unlock()
	return len(b), nil
}

// take returns and forgets what was written.
func (r *recordConn) take() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// proxyListener returns a listener on a recordConn that trusts
// 127.0.0.1.
func proxyListener(t *testing.T, perIP int) (*Listener, *recordConn) {
	t.Helper()
	rc := &recordConn{sinkConn: *newSinkConn()}
	l := listenTest(t, ListenConfig{
		ListenPacket:        func(string, string) (net.PacketConn, error) { return rc, nil },
		ProxyProtocol:       true,
		TrustedProxies:      []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		OfflineRate:         -1,
		MaxConnectionsPerIP: perIP,
		// Nobody acknowledges a goodbye: Close need not wait for one.
		CloseTimeout: 10 * time.Millisecond,
	})
	return l, rc
}

// proxiedPeer is a client behind a proxy, driven through the listener's
// handler: its datagrams come from via, with a header naming client on
// each one or, if first is set, on the first only.
type proxiedPeer struct {
	t           *testing.T
	l           *Listener
	rc          *recordConn
	client, via netip.AddrPort
	first, sent bool
	v1          bool // PROXY v1 text headers instead of v2
	seq, rel    uint32
}

// send hands b to the listener as the proxy forwards it and returns what
// the listener wrote.
func (p *proxiedPeer) send(b []byte, now time.Time) []sent {
	p.t.Helper()
	switch {
	case p.first && p.sent:
	case p.v1:
		b = proxiedV1(p.t, p.client, proxyDst, b)
	default:
		b = proxied(p.t, p.client, b)
	}
	p.sent = true
	p.l.handle(b, p.via, now)
	// Another peer's connection may send an ACK from its own timer
	// meanwhile (real time passes between handle and take on a busy
	// machine); that is not this peer's answer.
	w := p.rc.take()
	kept := w[:0]
	for _, d := range w {
		ack := len(d.b) > 0 && d.b[0]&wire.FlagValid != 0 && d.b[0]&(wire.FlagACK|wire.FlagNACK) != 0
		if ack && d.to != p.via {
			continue
		}
		kept = append(kept, d)
	}
	return kept
}

// reply returns the one datagram in w, which must have gone to the
// proxy.
func (p *proxiedPeer) reply(w []sent) []byte {
	p.t.Helper()
	if len(w) != 1 {
		p.t.Fatalf("got %d datagrams written, want 1", len(w))
	}
	if w[0].to != p.via {
		p.t.Fatalf("reply went to %v, want the proxy %v", w[0].to, p.via)
	}
	return w[0].b
}

// data returns a data datagram carrying msg as a reliable message.
func (p *proxiedPeer) data(msg []byte) []byte {
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: wire.Uint24(p.seq)}
	f := wire.Frame{Reliability: wire.Reliable, ReliableIndex: wire.Uint24(p.rel), Payload: msg}
	p.seq++
	p.rel++
	return f.Append(h.Append(nil))
}

// open runs the offline handshake and checks that Reply2 names the
// client.
func (p *proxiedPeer) open(guid int64, now time.Time) {
	p.t.Helper()
	var r1 wire.OpenConnectionReply1
	req1 := wire.OpenConnectionRequest1{Protocol: 11, Size: 1200}
	if _, err := r1.Decode(p.reply(p.send(req1.Append(nil), now))); err != nil {
		p.t.Fatal(err)
	}
	req2 := wire.OpenConnectionRequest2{HasCookie: r1.Security, Cookie: r1.Cookie, ServerAddr: proxyDst, MTU: 1200, ClientGUID: guid}
	var r2 wire.OpenConnectionReply2
	if _, err := r2.Decode(p.reply(p.send(req2.Append(nil), now))); err != nil {
		p.t.Fatal(err)
	}
	if r2.ClientAddr != p.client {
		p.t.Errorf("Reply2 names %v, want the client %v", r2.ClientAddr, p.client)
	}
}

// connect completes the connected handshake; the connection is then
// waiting for Accept.
func (p *proxiedPeer) connect(guid int64, now time.Time) {
	p.t.Helper()
	req := wire.ConnectionRequest{ClientGUID: guid, Time: 1}
	var acc wire.ConnectionRequestAccepted
	w := p.send(p.data(req.Append(nil)), now)
	var found bool
	for _, d := range w {
		if d.to != p.via {
			p.t.Fatalf("datagram went to %v, want the proxy %v", d.to, p.via)
		}
		if m := findMessage(p.t, d.b, wire.IDConnectionRequestAccepted); m != nil {
			if _, err := acc.Decode(m); err != nil {
				p.t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		p.t.Fatal("no ConnectionRequestAccepted")
	}
	if acc.ClientAddr != p.client {
		p.t.Errorf("ConnectionRequestAccepted names %v, want the client %v", acc.ClientAddr, p.client)
	}
	nic := wire.NewIncomingConnection{ServerAddr: proxyDst, PingTime: 1, PongTime: 1}
	for _, d := range p.send(p.data(nic.Append(nil)), now) {
		if d.to != p.via {
			p.t.Fatalf("datagram went to %v, want the proxy %v", d.to, p.via)
		}
	}
}

// Clients behind one proxy address and port, a header on each datagram,
// and behind one proxy port each, a header on the first only: each is
// its own peer, known by its own address, and every reply goes to the
// proxy.
func TestListenerProxyClients(t *testing.T) {
	l, rc := proxyListener(t, 0)
	now := time.Now()
	shared := ap(30000)
	var peers []*proxiedPeer
	for i := range 3 {
		// Two of the three share an IP address.
		client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 9, byte(1 + i/2)}), uint16(4000+i))
		peers = append(peers, &proxiedPeer{t: t, l: l, rc: rc, client: client, via: shared})
		peers = append(peers, &proxiedPeer{t: t, l: l, rc: rc, client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 10, byte(1 + i)}), 5000), via: ap(uint16(31000 + i)), first: true})
	}
	// The handshakes interleave: a shared proxy port's header always
	// names the client it carries.
	for i, p := range peers {
		p.open(int64(-1-i), now)
	}
	for i, p := range peers {
		p.connect(int64(-1-i), now)
	}
	want := map[netip.AddrPort]bool{}
	for _, p := range peers {
		want[p.client] = true
	}
	for range peers {
		c := acceptTest(t, l)
		ra := c.RemoteAddr().(*net.UDPAddr).AddrPort()
		if !want[ra] {
			t.Fatalf("accepted %v, want one of the clients %v", ra, want)
		}
		delete(want, ra)
	}
	if st := l.Stats(); st.Handshakes != uint64(len(peers)) || st.Accepted != uint64(len(peers)) || st.ProxyNoFlow != 0 || st.Dropped != 0 {
		t.Errorf("got %+v, want %d handshakes and accepted, nothing dropped", st, len(peers))
	}
}

// Cookies, per-IP limits and live connections are the client's, not the
// proxy's; a client's address sending directly is not its connection.
func TestListenerProxyClientIdentity(t *testing.T) {
	l, rc := proxyListener(t, 1)
	now := time.Now()
	c1 := netip.MustParseAddrPort("127.0.9.1:4000")
	a := &proxiedPeer{t: t, l: l, rc: rc, client: c1, via: ap(30000)}
	a.open(-1, now)

	// A Reply1 cookie is good for the client it was issued to only.
	var r1 wire.OpenConnectionReply1
	req1 := wire.OpenConnectionRequest1{Protocol: 11, Size: 1200}
	if _, err := r1.Decode(a.reply(a.send(req1.Append(nil), now))); err != nil {
		t.Fatal(err)
	}
	other := &proxiedPeer{t: t, l: l, rc: rc, client: netip.MustParseAddrPort("127.0.9.2:4000"), via: ap(30000)}
	req2 := wire.OpenConnectionRequest2{HasCookie: true, Cookie: r1.Cookie, ServerAddr: proxyDst, MTU: 1200, ClientGUID: -2}
	if w := other.send(req2.Append(nil), now); len(w) != 0 {
		t.Errorf("another client's cookie: got %d replies, want none", len(w))
	}
	if st := l.Stats(); st.CookieFailures != 1 {
		t.Errorf("got %d cookie failures, want 1", st.CookieFailures)
	}

	// The client's own address, sending without the proxy, is not the
	// connection: what it sends is dropped, and nothing is written.
	req := wire.ConnectionRequest{ClientGUID: -1, Time: 1}
	dropped := l.Stats().Dropped
	l.handle(a.data(req.Append(nil)), c1, now)
	if w := rc.take(); len(w) != 0 {
		t.Errorf("direct datagram from the client's address: got %d datagrams written, want none", len(w))
	}
	if got := l.Stats().Dropped; got != dropped+1 {
		t.Errorf("got %d dropped, want %d", got, dropped+1)
	}
	a.seq-- // that datagram number was never taken
	a.rel--
	a.connect(-1, now)
	acceptTest(t, l)

	// The same IP behind another proxy port is over the per-IP cap; the
	// proxy's own address is not what counts.
	b := &proxiedPeer{t: t, l: l, rc: rc, client: netip.MustParseAddrPort("127.0.9.1:4001"), via: ap(30001)}
	var r1b wire.OpenConnectionReply1
	if _, err := r1b.Decode(b.reply(b.send(req1.Append(nil), now))); err != nil {
		t.Fatal(err)
	}
	req2b := wire.OpenConnectionRequest2{HasCookie: true, Cookie: r1b.Cookie, ServerAddr: proxyDst, MTU: 1200, ClientGUID: -3}
	if id := b.reply(b.send(req2b.Append(nil), now))[0]; id != wire.IDNoFreeIncomingConnections {
		t.Errorf("second connection of 127.0.9.1: got %#x, want NoFreeIncomingConnections", id)
	}
	c := &proxiedPeer{t: t, l: l, rc: rc, client: netip.MustParseAddrPort("127.0.9.3:4000"), via: ap(30001)}
	c.open(-4, now)
	if st := l.Stats(); st.PerIPLimited != 1 || st.Handshakes != 2 {
		t.Errorf("got per-IP limited %d handshakes %d, want 1 2", st.PerIPLimited, st.Handshakes)
	}
}

// Refusals are counted, never answered.
func TestListenerProxyRefusals(t *testing.T) {
	l, rc := proxyListener(t, 0)
	now := time.Now()
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	c1 := netip.MustParseAddrPort("127.0.9.1:4000")
	lan := netip.MustParseAddrPort("127.0.5.1:4000")
	for _, tc := range []struct {
		name string
		b    []byte
		src  netip.AddrPort
		want func(ListenerStats) uint64
	}{
		{"untrusted header", proxied(t, c1, ping), lan, func(s ListenerStats) uint64 { return s.ProxyUntrusted }},
		{"no flow", ping, ap(30000), func(s ListenerStats) uint64 { return s.ProxyNoFlow }},
		{"LOCAL", localHeader(t, ping), ap(30000), func(s ListenerStats) uint64 { return s.ProxyLocal }},
		{"malformed", rawProxyHeader(cmdProxy, proxyUDPv4, 40, nil), ap(30000), func(s ListenerStats) uint64 { return s.Dropped }},
		{"empty", proxied(t, c1, nil), ap(30001), func(s ListenerStats) uint64 { return s.Dropped }},
	} {
		before := tc.want(l.Stats())
		l.handle(tc.b, tc.src, now)
		if w := rc.take(); len(w) != 0 {
			t.Errorf("%s: got %d datagrams written, want none", tc.name, len(w))
		}
		if got := tc.want(l.Stats()); got != before+1 {
			t.Errorf("%s: counter went from %d to %d, want one more", tc.name, before, got)
		}
	}
	if st := l.Stats(); st.Pings != 0 {
		t.Errorf("got %d pings answered, want 0", st.Pings)
	}
	// A direct client, not in TrustedProxies, is answered where it is.
	l.handle(ping, lan, now)
	if w := rc.take(); len(w) != 1 || w[0].to != lan || w[0].b[0] != wire.IDUnconnectedPong {
		t.Errorf("direct ping: got %v, want one pong to %v", w, lan)
	}
}

// A query through a proxy is the client's, and its reply goes to the
// proxy.
func TestListenerProxyQuery(t *testing.T) {
	rc := &recordConn{sinkConn: *newSinkConn()}
	var asked netip.AddrPort
	l := listenTest(t, ListenConfig{
		ListenPacket:   func(string, string) (net.PacketConn, error) { return rc, nil },
		ProxyProtocol:  true,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Query: func(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) {
			asked = from
			return append(dst, "answer"...), nil
		},
	})
	c1 := netip.MustParseAddrPort("127.0.9.1:4000")
	l.handle(proxied(t, c1, []byte{0xfe, 0xfd, 9, 0, 0, 0, 1}), ap(30000), time.Now())
	if asked != c1 {
		t.Errorf("Query was asked for %v, want the client %v", asked, c1)
	}
	if w := rc.take(); len(w) != 1 || w[0].to != ap(30000) || string(w[0].b) != "answer" {
		t.Errorf("got %v, want the answer sent to the proxy %v", w, ap(30000))
	}
}

// FuzzProxyHeader feeds arbitrary datagrams, from trusted and untrusted
// sources, through the PROXY parse path: the parser must agree with
// go-proxyproto on what it accepts and never panic; the gate must hand on
// only a non-empty tail of the datagram and keep its flow table bounded;
// and a listener with ProxyProtocol must take it all without panicking.
func FuzzProxyHeader(f *testing.F) {
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	req1 := (&wire.OpenConnectionRequest1{Protocol: 11, Size: 600}).Append(nil)
	for _, client := range []netip.AddrPort{netip.MustParseAddrPort("127.0.9.1:4000"), netip.MustParseAddrPort("[::1]:4000")} {
		f.Add(fuzzInput(proxied(f, client, ping)))
		f.Add(fuzzInput(proxied(f, client, req1), req1))
	}
	f.Add(fuzzInput(localHeader(f, ping)))
	f.Add(fuzzInput(rawProxyHeader(cmdProxy, proxyUDPv4, 200, ping)))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The whole input as one datagram, against go-proxyproto.
		h, err := parseProxyHeader(data)
		lh, rest, lerr := proxyproto.ParseUDPDatagram(data)
		switch {
		case err == nil && lerr != nil:
			t.Fatalf("parsed a header go-proxyproto refuses: %v", lerr)
		case err == nil && !bytes.Equal(rest, data[h.n:]):
			t.Fatalf("payload at %d, go-proxyproto's is %d bytes", h.n, len(rest))
		case err == nil && h.local != lh.Command.IsLocal():
			t.Fatalf("local %v, go-proxyproto %v", h.local, lh.Command.IsLocal())
		case err == nil && !h.local:
			src, _, ok := lh.UDPAddrs()
			if !ok || src.AddrPort() != h.client {
				t.Fatalf("client %v, go-proxyproto %v", h.client, lh.SourceAddr)
			}
		case err != nil && lerr == nil && lh.Version == 2:
			// Refused only what names no UDP client.
			if lh.Command.IsLocal() || lh.TransportProtocol == proxyproto.UDPv4 || lh.TransportProtocol == proxyproto.UDPv6 {
				t.Fatalf("refused (%v) a header go-proxyproto reads as %v %v", err, lh.Command, lh.TransportProtocol)
			}
		}

		// Datagram by datagram, through a gate and a listener.
		g, err := newProxyGate([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/24")}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ListenConfig{
			ListenPacket:   func(string, string) (net.PacketConn, error) { return newSinkConn(), nil },
			ProxyProtocol:  true,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/24")},
			MaxHandshakes:  3,
			CloseTimeout:   time.Millisecond,
		}.Listen("127.0.0.1:19132")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		now := time.Now()
		fuzzDatagrams(data, func(src netip.AddrPort, b []byte) {
			out, client, v := g.unwrap(b, src, now)
			switch {
			case v > proxyMalformed:
				t.Fatalf("verdict %d", v)
			case v <= proxyClient && (len(out) == 0 || !bytes.HasSuffix(b, out)):
				t.Fatalf("verdict %d handed on % x of % x", v, out, b)
			case v <= proxyClient && !client.IsValid():
				t.Fatalf("verdict %d with no client", v)
			case v > proxyClient && out != nil:
				t.Fatalf("verdict %d handed on % x", v, out)
			}
			if g.flows.len() > maxProxyFlows {
				t.Fatalf("%d flows", g.flows.len())
			}
			l.handle(b, src, now)
			now = now.Add(100 * time.Millisecond)
		})
	})
}

// BenchmarkProxyHeader measures a ping answered through a proxy, against
// one answered directly, and the header parse alone: ours and, for
// comparison, go-proxyproto's.
func BenchmarkProxyHeader(b *testing.B) {
	sink, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	from := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	// A client of its own on a listener with ProxyProtocol: not trusted.
	lan, err := net.ListenPacket("udp4", "127.0.5.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer lan.Close()
	lanFrom := lan.LocalAddr().(*net.UDPAddr).AddrPort()
	ping := (&wire.UnconnectedPing{Time: 1, ClientGUID: -1}).Append(nil)
	hdr := proxied(b, netip.MustParseAddrPort("127.0.9.1:4000"), ping)
	lc := ListenConfig{OfflineRate: -1, OfflineBytes: -1}
	direct, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	lc.ProxyProtocol, lc.TrustedProxies = true, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	behind, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer behind.Close()
	for _, bc := range []struct {
		name string
		l    *Listener
		b    []byte
		src  netip.AddrPort
	}{
		{"pong/direct", direct, ping, from},
		{"pong/direct_proxy_on", behind, ping, lanFrom},
		{"pong/header", behind, hdr, from},
		{"pong/flow", behind, ping, from},
	} {
		b.Run(bc.name, func(b *testing.B) {
			behind.handle(hdr, from, time.Now()) // the flow
			pings := bc.l.Stats().Pings
			b.ReportAllocs()
			for b.Loop() {
				bc.l.handle(bc.b, bc.src, time.Now())
			}
			b.StopTimer()
			if n := bc.l.Stats().Pings - pings; n < uint64(b.N) {
				b.Fatalf("got %d pongs, want %d", n, b.N)
			}
		})
	}
	full := proxied(b, netip.MustParseAddrPort("127.0.9.1:4000"), make([]byte, 1372))
	for _, pc := range []struct {
		name string
		b    []byte
	}{{"ping", hdr}, {"1400B", full}} {
		b.Run("parse/"+pc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseProxyHeader(pc.b); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parse/go-proxyproto/"+pc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := proxyproto.ParseUDPDatagram(pc.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
