package nethernet

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/poll"
	goproxy "github.com/pires/go-proxyproto"
)

// identityAttr returns an a=identity line carrying token, as a client
// writes it.
func identityAttr(token string) string {
	inner, _ := json.Marshal(map[string]string{"token": token})
	outer, _ := json.Marshal(map[string]string{"assertion": string(inner)})
	return "a=identity:" + base64.StdEncoding.EncodeToString(outer) + "\r\n"
}

func TestOfferToken(t *testing.T) {
	for _, tc := range []struct {
		name, sdp, want string
		err             bool
	}{
		{"none", "v=0\r\na=x\r\n", "", false},
		{"token", "v=0\r\n" + identityAttr("abc.def.ghi"), "abc.def.ghi", false},
		{"not base64", "v=0\r\na=identity:!!!\r\n", "", true},
		{"not JSON", "v=0\r\na=identity:" + base64.StdEncoding.EncodeToString([]byte("nope")) + "\r\n", "", true},
		{"no token", "v=0\r\n" + identityAttr(""), "", true},
		{"too large", "v=0\r\na=identity:" + strings.Repeat("A", maxIdentity+4) + "\r\n", "", true},
	} {
		got, err := offerToken(tc.sdp)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestCheckOffer(t *testing.T) {
	offer := offerSDP(t)
	if err := checkOffer(offer); err != nil {
		t.Fatalf("a real offer: %v", err)
	}
	for _, drop := range []string{"a=ice-ufrag:", "a=ice-pwd:", "a=fingerprint:", "a=setup:", "a=max-message-size:"} {
		var kept []string
		for line := range strings.SplitSeq(offer, "\r\n") {
			if !strings.HasPrefix(line, drop) {
				kept = append(kept, line)
			}
		}
		if err := checkOffer(strings.Join(kept, "\r\n")); err == nil {
			t.Errorf("an offer without %s passed", drop)
		}
	}
	for _, bad := range []string{"", "hello", "v=0\r\nthis is not sdp\r\n", "v=0\x00"} {
		if err := checkOffer(bad); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}

// Offers are hostile: checking one and reading its identity never panic.
func FuzzOffer(f *testing.F) {
	f.Add(offerSDP(f))
	f.Add("v=0\r\n" + identityAttr("a.b.c"))
	f.Add("v=0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=ice-ufrag:x\r\n")
	f.Fuzz(func(t *testing.T, sdp string) {
		_ = checkOffer(sdp)
		if tok, err := offerToken(sdp); err == nil && len(tok) > len(sdp) {
			t.Fatalf("a %d-byte token from a %d-byte offer", len(tok), len(sdp))
		}
		u, p := iceCredentials(sdp)
		if len(u)+len(p) > len(sdp) {
			t.Fatal("credentials longer than the offer")
		}
	})
}

// fakeConn is a net.Conn from a given address that records its closing.
type fakeConn struct {
	net.Conn
	from   netip.AddrPort
	mu     sync.Mutex
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(c.from) }
func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
func (c *fakeConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// The signalling endpoint's connection rules: per source, in all, and
// the oldest connection still sending its request goes first.
func TestConnGuard(t *testing.T) {
	var st counters
	g := newConnGuard(3, 2, func(a netip.Addr) bool { return a == netip.MustParseAddr("10.9.9.9") }, false, &st)
	conn := func(ip string) (*fakeConn, *guardConn) {
		c := &fakeConn{from: netip.AddrPortFrom(netip.MustParseAddr(ip), 1)}
		return c, g.admit(c)
	}
	a1, ga1 := conn("192.0.2.1")
	_, ga2 := conn("192.0.2.1")
	a3, ga3 := conn("192.0.2.1")
	if ga1 == nil || ga2 == nil || ga3 != nil || !a3.isClosed() {
		t.Fatal("a source's third connection was not refused")
	}
	ga2.served()
	b1, gb1 := conn("192.0.2.2") // fills the endpoint
	if gb1 == nil {
		t.Fatal("refused under the cap")
	}
	c1, gc1 := conn("192.0.2.3") // full: the oldest unserved (a1) goes
	if gc1 == nil || !a1.isClosed() || b1.isClosed() {
		t.Fatalf("evicted a1=%v b1=%v, new admitted %v", a1.isClosed(), b1.isClosed(), gc1 != nil)
	}
	_ = ga1.Close()
	gb1.served()
	gc1.served()
	if _, gd := conn("192.0.2.4"); gd != nil {
		t.Error("a connection admitted with every place held by a served request")
	}
	_ = c1
	// A trusted proxy's connections have no per-source cap.
	_ = ga2.Close()
	_ = gb1.Close()
	var proxied []*guardConn
	for range 2 {
		if _, gp := conn("10.9.9.9"); gp != nil {
			proxied = append(proxied, gp)
		}
	}
	if len(proxied) != 2 {
		t.Errorf("a trusted proxy got %d connections, want 2", len(proxied))
	}
	if st.connsRefused.Load() != 2 || st.connsEvicted.Load() != 1 {
		t.Errorf("refused %d evicted %d, want 2 and 1", st.connsRefused.Load(), st.connsEvicted.Load())
	}
}

// Slow connections from many addresses (one header byte a second) cannot
// hold the endpoint: an honest request is served at once beside them.
func TestSlowConnectionsDoNotHoldTheEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("slow connections")
	}
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true, MaxSignalingConns: 64})
	const slow = 200 // over three times the cap, from as many addresses
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range slow {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 1, byte(i>>8), byte(i+1))}, Timeout: time.Second}
		c, err := d.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("G"))
		conns = append(conns, c)
	}
	// The server has taken them all in: the oldest were closed for the
	// newest.
	if !poll.Until(5*time.Second, 10*time.Millisecond, func() bool { return l.Stats().ConnsEvicted >= slow-64 }) {
		t.Fatalf("only %d slow connections evicted", l.Stats().ConnsEvicted)
	}
	start := time.Now()
	resp, err := httpClient().Get("http://" + l.Addr().String() + "/v1/join")
	if err != nil {
		t.Fatalf("honest request beside %d slow connections: %v", slow, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	st := l.Stats()
	t.Logf("honest request in %v; %d signalling connections open, %d evicted", took, st.SignalingConns, st.ConnsEvicted)
	if resp.StatusCode != http.StatusOK || took > 2*time.Second {
		t.Errorf("honest request: %d in %v", resp.StatusCode, took)
	}
	if st.SignalingConns > 64 || st.ConnsEvicted < slow-64 {
		t.Errorf("%d open, %d evicted; want at most 64 open", st.SignalingConns, st.ConnsEvicted)
	}
}

// A household of 16 players behind one address, joining 100 ms apart,
// all get in: each slot frees as its negotiation ends.
func TestHouseholdJoins(t *testing.T) {
	if testing.Short() {
		t.Skip("16 joins")
	}
	defer checkGoroutines(t)()
	// The defaults, as a server runs them.
	l, err := Config{Addr: "127.0.0.1:0", ICEAddr: "127.0.0.1:0", AllowAnonymous: true}.Listen()
	if err != nil {
		t.Fatal(err)
	}
	var (
		smu     sync.Mutex
		servers []*Conn
	)
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			smu.Lock()
			servers = append(servers, c)
			smu.Unlock()
		}
	}()
	defer func() {
		_ = l.Close()
		<-accepting
		for _, c := range servers {
			_ = c.Close()
		}
	}()
	const players = 16
	errs := make(chan error, players)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		clients []io.Closer
	)
	start := time.Now()
	every := time.NewTicker(100 * time.Millisecond) // a player's join every 100 ms
	defer every.Stop()
	for i := range players {
		<-every.C
		wg.Go(func() {
			c, err := dial(t, l, nil)
			if err != nil {
				errs <- fmt.Errorf("player %d: %w", i, err)
				return
			}
			mu.Lock()
			clients = append(clients, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The last handovers to Accept.
	poll.Until(5*time.Second, 10*time.Millisecond, func() bool { return l.Stats().Accepted >= players })
	took := time.Since(start)
	for _, c := range clients {
		_ = c.Close()
	}
	st := l.Stats()
	t.Logf("%d of %d joined in %v", st.Accepted, players, took.Round(time.Millisecond))
	if st.Accepted != players {
		t.Errorf("%d of %d joined; stats %+v", st.Accepted, players, st)
	}
}

// BenchmarkOffer measures an offer's cost: refused at the rate check,
// and answered (with its peer connection torn down again at once).
// bytes/pending is the heap an answered negotiation holds while it
// waits for its client's ICE check.
func BenchmarkOffer(b *testing.B) {
	offer := offerSDP(b)
	b.Run("refused", func(b *testing.B) {
		l := listenBench(b, Config{OffersPerSource: 1})
		postOffer(b, l, "7", offer)
		c := httpClient()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Post("http://"+l.Addr().String()+"/v1/join/7", "application/sdp", strings.NewReader(offer))
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("answered", func(b *testing.B) {
		l := listenBench(b, Config{MaxNegotiations: 1 << 20})
		b.ReportAllocs()
		for b.Loop() {
			postOffer(b, l, "7", offer)
		}
	})
	b.Run("pending", func(b *testing.B) {
		l := listenBench(b, Config{MaxNegotiations: 1 << 20, ProofWindow: time.Minute, NegotiationTimeout: time.Minute})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n := 0
		for b.Loop() {
			postOffer(b, l, "7", offer)
			n++
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n), "bytes/pending")
	})
}

// listenBench starts a Listener for a benchmark, its per-source limits
// off unless set.
func listenBench(b *testing.B, c Config) *Listener {
	b.Helper()
	c.Addr, c.ICEAddr, c.AllowAnonymous = "127.0.0.1:0", "127.0.0.1:0", true
	c.OffersPerSource = cmpOr(c.OffersPerSource, -1)
	c.NegotiationsPerSource = -1
	l, err := c.Listen()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// rawRequest sends a PROXY header (may be empty) and one HTTP request on
// a connection from local, returning the status code.
func rawRequest(t *testing.T, l *Listener, local string, header []byte, method, path, body string) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, path, len(body), body)
	if _, err := c.Write(append(append([]byte(nil), header...), req...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A trusted proxy's PROXY header (v1 or v2) names the client whose
// offers admission counts; the proxy itself is never limited; a header
// from anyone else is not read, and its sender is refused and counted as
// itself.
func TestSignallingProxyHeader(t *testing.T) {
	defer checkGoroutines(t)()
	proxy := netip.MustParseAddr("127.0.0.1")
	l := listenTest(t, Config{AllowAnonymous: true, OffersPerSource: 1, ProxyProtocol: true,
		TrustedProxy: func(a netip.Addr) bool { return a == proxy }})
	v1 := func(client string) []byte {
		return []byte("PROXY TCP4 " + client + " 127.0.0.1 40000 19132\r\n")
	}
	v2 := func(client string) []byte {
		h := &goproxy.Header{Version: 2, Command: goproxy.PROXY, TransportProtocol: goproxy.TCPv4,
			SourceAddr:      &net.TCPAddr{IP: net.ParseIP(client), Port: 40000},
			DestinationAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 19132}}
		b, err := h.Format()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	junk := "v=0\r\nnot an offer"
	for _, tc := range []struct {
		name   string
		from   string
		header []byte
		want   int
	}{
		{"client A's first offer, v1", "127.0.0.1", v1("198.51.100.7"), http.StatusBadRequest},
		{"client A's second, v2", "127.0.0.1", v2("198.51.100.7"), http.StatusTooManyRequests},
		{"client B's first", "127.0.0.1", v1("198.51.100.8"), http.StatusBadRequest},
		{"the proxy's own, no header", "127.0.0.1", nil, http.StatusBadRequest},
		{"the proxy's own again: never limited", "127.0.0.1", nil, http.StatusBadRequest},
		{"untrusted with a header: not read", "127.0.0.2", v1("198.51.100.9"), http.StatusBadRequest},
		{"untrusted, as itself", "127.0.0.2", nil, http.StatusBadRequest},
		{"untrusted, as itself, over its rate", "127.0.0.2", nil, http.StatusTooManyRequests},
	} {
		if got := rawRequest(t, l, tc.from, tc.header, "POST", "/v1/join/1", junk); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := rawRequest(t, l, "127.0.0.1", v1("198.51.100.7"), "GET", "/v1/join", ""); got != http.StatusOK {
		t.Errorf("status through the proxy: %d", got)
	}
	if got := rawRequest(t, l, "127.0.0.1", []byte("PROXY TCP4 nonsense\r\n"), "GET", "/v1/join", ""); got != 0 {
		t.Logf("a malformed header from the proxy: status %d", got)
	}
	if st := l.Stats(); st.ProxyRefused != 1 {
		t.Errorf("proxy_refused = %d, want 1", st.ProxyRefused)
	}
	_ = l.Close()
}

// The answer to an offer that leaves the DTLS role to the server says
// a=setup:passive: the client starts the handshake, and the join works.
func TestAnswerLetsTheClientStartDTLS(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true})
	offer := offerSDP(t)
	if !strings.Contains(offer, "a=setup:actpass") {
		t.Fatalf("the client's offer does not leave the role open:\n%s", offer)
	}
	answer := postOffer(t, l, "7", offer)
	if !strings.Contains(answer, "a=setup:passive") {
		t.Errorf("answer without a=setup:passive:\n%s", answer)
	}
	cc, err := dial(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := accept(t, l)
	_ = cc.Close()
	_ = sc.Close()
	_ = l.Close()
}
