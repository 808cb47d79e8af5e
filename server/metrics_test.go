package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server/internal/servertest"
	"github.com/basaltmc/basalt/session"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// scrape fetches url and parses the text exposition with the Prometheus
// library's own parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := get(t, url)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got status %d, want 200", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}

// get sends a GET to url, failing the test if no response comes.
func get(t *testing.T, url string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

// metricsURL returns the URL of path on srv's metrics server.
func metricsURL(t *testing.T, srv *Server, path string) string {
	t.Helper()
	a := srv.MetricsAddr()
	if a == nil {
		t.Fatal("MetricsAddr: got nil, want the metrics server's address")
	}
	return "http://" + a.String() + path
}

// sample returns the metric of family name whose labels include labels,
// failing the test if there is none.
func sample(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labels...) {
			return m
		}
	}
	t.Fatalf("no metric %s with labels %v", name, labels)
	return nil
}

// hasLabels reports whether m has every name/value pair of labels.
func hasLabels(m *dto.Metric, labels ...string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// value returns the value of a counter or gauge.
func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// metricNames are the families the collector reports, as README.md lists
// them.
var metricNames = []string{
	"basalt_raknet_pings_answered_total", "basalt_raknet_queries_answered_total", "basalt_raknet_handshakes_total",
	"basalt_raknet_connections_accepted_total", "basalt_raknet_connections_refused_total",
	"basalt_raknet_refused_total",
	"basalt_raknet_datagrams_received_total", "basalt_raknet_datagrams_sent_total",
	"basalt_raknet_received_bytes_total", "basalt_raknet_sent_bytes_total",
	"basalt_raknet_connections", "basalt_raknet_connections_handshaking", "basalt_raknet_connections_established",
	"basalt_raknet_resent_frames_total", "basalt_raknet_lost_datagrams_total",
	"basalt_raknet_nacks_sent_total", "basalt_raknet_nacks_received_total",
	"basalt_raknet_deferred_datagrams_total", "basalt_raknet_connection_dropped_total",
	"basalt_raknet_rtt_seconds", "basalt_raknet_congestion_window_bytes",
	"basalt_sessions", "basalt_players", "basalt_players_max", "basalt_sessions_ended_total",
	"basalt_sessions_refused_total", "basalt_logins_refused_total", "basalt_session_handler_errors_total", "basalt_session_handler_panics_total",
	"basalt_session_batches_received_total", "basalt_session_batches_sent_total",
	"basalt_session_packets_received_total", "basalt_session_packets_sent_total",
	"basalt_session_received_bytes_total", "basalt_session_received_wire_bytes_total", "basalt_session_sent_bytes_total",
	"basalt_session_packets_skipped_total",
	"basalt_transport_sessions", "basalt_transport_players",
	"basalt_build_info",
}

// netherNetMetricNames are the families the collector adds with NetherNet
// on, as README.md lists them.
var netherNetMetricNames = []string{
	"basalt_nethernet_offers_total", "basalt_nethernet_answered_total",
	"basalt_nethernet_connections_accepted_total", "basalt_nethernet_negotiations_failed_total",
	"basalt_nethernet_refused_total", "basalt_nethernet_negotiating", "basalt_nethernet_connections",
}

// A scrape after a few pings and a player's join reports them all, with
// the Go and process collectors beside; once the player leaves, its
// session is counted as ended, its figures kept in the totals.
func TestMetricsScrape(t *testing.T) {
	srv := startServer(t, Config{Metrics: MetricsConfig{Address: "127.0.0.1:0"}, NewHandler: keepHandler})
	addr := gameAddr(t, srv)
	const pings = 3
	for range pings {
		ping(t, addr)
	}
	cancel := join(t, addr, "Steve")
	waitFor(t, "a player", func() bool { return srv.PlayerCount() == 1 })
	url := metricsURL(t, srv, "/metrics")
	var mfs map[string]*dto.MetricFamily
	waitFor(t, "an RTT sample", func() bool {
		mfs = scrape(t, url)
		return sample(t, mfs, "basalt_raknet_rtt_seconds", "listener", addr).GetHistogram().GetSampleCount() >= 1
	})

	for _, name := range metricNames {
		if mfs[name] == nil {
			t.Errorf("no metric %s", name)
		}
	}
	for name := range mfs {
		if strings.HasPrefix(name, "basalt_") && !slices.Contains(metricNames, name) {
			t.Errorf("metric %s is not listed (in README.md and metricNames)", name)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_start_time_seconds"} {
		if mfs[name] == nil {
			t.Errorf("no metric %s from the Go and process collectors", name)
		}
	}
	atLeast := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := value(sample(t, mfs, name, labels...)); got < want {
			t.Errorf("%s%v: got %v, want at least %v", name, labels, got, want)
		}
	}
	equal := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := value(sample(t, mfs, name, labels...)); got != want {
			t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
		}
	}
	atLeast("basalt_raknet_pings_answered_total", pings, "listener", addr)
	atLeast("basalt_raknet_handshakes_total", 1, "listener", addr)
	atLeast("basalt_raknet_connections_accepted_total", 1, "listener", addr)
	equal("basalt_raknet_connections_refused_total", 0, "listener", addr)
	equal("basalt_raknet_connections_established", 1, "listener", addr)
	equal("basalt_raknet_connections_handshaking", 0, "listener", addr)
	equal("basalt_raknet_connections", 1, "listener", addr)
	// Pings, the handshake and the login, each answered.
	atLeast("basalt_raknet_datagrams_received_total", pings+5, "listener", addr)
	atLeast("basalt_raknet_datagrams_sent_total", pings+5, "listener", addr)
	// A Login carries a certificate chain and skin: kilobytes.
	atLeast("basalt_raknet_received_bytes_total", 2000, "listener", addr)
	atLeast("basalt_raknet_sent_bytes_total", 100, "listener", addr)
	for _, reason := range []string{"malformed", "oversize", "cookie", "rate_limited", "pool_full", "already_connected", "per_ip", "amplification", "budget"} {
		equal("basalt_raknet_refused_total", 0, "listener", addr, "reason", reason)
	}
	equal("basalt_sessions", 1)
	equal("basalt_players", 1)
	equal("basalt_players_max", 20)
	equal("basalt_sessions_ended_total", 0)
	equal("basalt_sessions_refused_total", 0, "reason", "login_timeout")
	equal("basalt_session_handler_errors_total", 0)
	// RequestNetworkSettings and Login at least, each answered.
	atLeast("basalt_session_batches_received_total", 2)
	atLeast("basalt_session_packets_received_total", 2)
	atLeast("basalt_session_batches_sent_total", 2)
	atLeast("basalt_session_packets_sent_total", 2)
	atLeast("basalt_session_received_bytes_total", 2000)
	atLeast("basalt_session_received_wire_bytes_total", 1000)
	atLeast("basalt_session_sent_bytes_total", 10)
	h := sample(t, mfs, "basalt_raknet_rtt_seconds", "listener", addr).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() <= 0 || h.GetSampleSum() > 1 {
		t.Errorf("RTT histogram: got %d samples summing to %v s, want 1 over loopback, in (0, 1]", h.GetSampleCount(), h.GetSampleSum())
	}
	w := sample(t, mfs, "basalt_raknet_congestion_window_bytes", "listener", addr).GetHistogram()
	if w.GetSampleCount() != 1 || w.GetSampleSum() < 1000 {
		t.Errorf("window histogram: got %d samples summing to %v bytes, want 1 of at least 1000", w.GetSampleCount(), w.GetSampleSum())
	}
	live := value(sample(t, mfs, "basalt_session_packets_received_total"))
	liveBytes := value(sample(t, mfs, "basalt_raknet_received_bytes_total", "listener", addr))

	_ = srv.Sessions()[0].Close()
	waitFor(t, "the session to end", func() bool { return len(srv.Sessions()) == 0 })
	cancel()
	waitFor(t, "the connection to close", func() bool {
		mfs = scrape(t, url)
		return value(sample(t, mfs, "basalt_raknet_connections", "listener", addr)) == 0
	})
	equal("basalt_sessions", 0)
	equal("basalt_players", 0)
	equal("basalt_sessions_ended_total", 1)
	// The ended session's and closed connection's figures stay counted.
	atLeast("basalt_session_packets_received_total", live)
	atLeast("basalt_raknet_received_bytes_total", liveBytes, "listener", addr)
	if h := sample(t, mfs, "basalt_raknet_rtt_seconds", "listener", addr).GetHistogram(); h.GetSampleCount() != 0 {
		t.Errorf("RTT histogram with no connection: got %d samples, want 0", h.GetSampleCount())
	}
}

// keepHandler keeps every player's session open, ignoring its packets.
func keepHandler(*session.Session) (session.Handler, error) { return session.NopHandler{}, nil }

// join logs in to addr as name with gophertunnel's client, in the
// background (the server never starts a game, so the client waits), and
// returns a function that gives up, closing the client's connection.
func join(t *testing.T, addr, name string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
		if conn, err := d.DialContext(ctx, "raknet", addr); err == nil {
			_ = conn.Close()
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// dialBedrock logs in to addr with gophertunnel's client and returns
// once the server ended the session.
func dialBedrock(t *testing.T, addr, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContext(ctx, "raknet", addr)
	if err == nil {
		_ = conn.Close()
		t.Fatal("dial: got a connection, want the server to end the session")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial: %v; want the server to end the session first", err)
	}
}

// Handler errors and panics are counted as their sessions end; a kick is
// not an error.
func TestMetricsHandlerErrors(t *testing.T) {
	srv := startServer(t, Config{NewHandler: func(s *session.Session) (session.Handler, error) {
		id, _ := s.Identity()
		switch id.DisplayName {
		case "Error":
			return nil, errors.New("refused")
		case "Panic":
			panic("boom")
		}
		return nil, session.Kick("bye")
	}})
	addr := gameAddr(t, srv)
	for _, name := range []string{"Error", "Panic", "Kicked", "Error"} {
		dialBedrock(t, addr, name)
	}
	waitFor(t, "four sessions to end", func() bool { return srv.stats.sessions.ended.Load() == 4 })
	mfs := gather(t, srv)
	for name, want := range map[string]float64{
		"basalt_session_handler_errors_total": 2,
		"basalt_session_handler_panics_total": 1,
		"basalt_sessions_ended_total":         4,
	} {
		if got := value(sample(t, mfs, name)); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}

// gather reads srv's collector directly, without an HTTP server.
func gather(t *testing.T, srv *Server) map[string]*dto.MetricFamily {
	t.Helper()
	got, err := srv.registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	mfs := make(map[string]*dto.MetricFamily, len(got))
	for _, mf := range got {
		mfs[mf.GetName()] = mf
	}
	return mfs
}

// With metrics.address empty nothing listens: no HTTP server, no TCP
// socket.
func TestMetricsOff(t *testing.T) {
	before := listeningTCP(t)
	srv := startServer(t, Config{})
	if a := srv.MetricsAddr(); a != nil {
		t.Errorf("MetricsAddr: got %v, want nil", a)
	}
	if after := listeningTCP(t); after != before {
		t.Errorf("TCP sockets listening: got %d, want %d as before Listen", after, before)
	}
	srv2 := startServer(t, Config{Metrics: MetricsConfig{Address: "127.0.0.1:0"}})
	if after := listeningTCP(t); after != before+1 {
		t.Errorf("TCP sockets listening with metrics on: got %d, want %d", after, before+1)
	}
	_ = srv2.Close()
	if after := listeningTCP(t); after != before {
		t.Errorf("TCP sockets listening after Close: got %d, want %d", after, before)
	}
}

// listeningTCP returns how many TCP sockets this process has listening,
// from /proc (Linux only).
func listeningTCP(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counts sockets with /proc")
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	mine := make(map[string]bool)
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, file := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retr uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && fs[3] == "0A" && mine[fs[9]] {
				n++
			}
		}
		_ = f.Close()
	}
	return n
}

// /debug/pprof/ is served only with MetricsPprof.
func TestMetricsPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("pprof=", on), func(t *testing.T) {
			srv := startServer(t, Config{Metrics: MetricsConfig{Address: "127.0.0.1:0", Pprof: on}})
			resp := get(t, metricsURL(t, srv, "/debug/pprof/"))
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			switch {
			case on && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine")):
				t.Errorf("got status %d, body %.80q, want 200 listing profiles", resp.StatusCode, body)
			case !on && resp.StatusCode != http.StatusNotFound:
				t.Errorf("got status %d, want 404", resp.StatusCode)
			}
			// /metrics is served either way.
			scrape(t, metricsURL(t, srv, "/metrics"))
		})
	}
}

// A metrics address that cannot be opened fails Listen and leaves nothing
// open; Close stops the metrics server and waits for it.
func TestMetricsListenAndClose(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	srv := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: "127.0.0.1:0"}, Metrics: MetricsConfig{Address: taken.Addr().String()}}.New()
	if err := srv.Listen(); err == nil {
		t.Fatal("Listen with the metrics address taken: got nil, want an error")
	}
	if as := srv.Addrs(); len(as) != 0 {
		t.Errorf("Addrs after the failed Listen: got %v, want none", as)
	}
	_ = srv.Close()

	// A game address that cannot be opened closes the metrics server.
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	before := listeningTCP(t)
	srv = Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: udp.LocalAddr().String()}, Metrics: MetricsConfig{Address: "127.0.0.1:0"}}.New()
	if err := srv.Listen(); err == nil {
		t.Fatal("Listen with the game address taken: got nil, want an error")
	}
	if a := srv.MetricsAddr(); a != nil {
		t.Errorf("MetricsAddr after the failed Listen: got %v, want nil", a)
	}
	if after := listeningTCP(t); after != before {
		t.Errorf("TCP sockets listening after the failed Listen: got %d, want %d", after, before)
	}
	_ = srv.Close()

	srv = startServer(t, Config{Metrics: MetricsConfig{Address: "127.0.0.1:0"}})
	a := srv.MetricsAddr().String()
	scrape(t, "http://"+a+"/metrics")
	_ = srv.Close()
	if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("metrics server at %s still accepts connections after Close", a)
	}
}

// pinger sends unconnected pings to a server over a UDP socket and reads
// its pongs, allocating nothing itself.
type pinger struct {
	pc     *net.UDPConn
	server netip.AddrPort
	ping   []byte
	buf    []byte
}

func newPinger(tb testing.TB, server string) *pinger {
	tb.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = pc.Close() })
	// UnconnectedPing: id, u64 time, the offline magic, u64 client GUID.
	ping := []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 1,
		0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}
	return &pinger{pc: pc, server: netip.MustParseAddrPort(server), ping: ping, buf: make([]byte, 1500)}
}

// roundTrip sends a ping and waits for its pong.
func (p *pinger) roundTrip(tb testing.TB) {
	if _, err := p.pc.WriteToUDPAddrPort(p.ping, p.server); err != nil {
		tb.Fatal(err)
	}
	_ = p.pc.SetReadDeadline(time.Now().Add(testTimeout))
	n, _, err := p.pc.ReadFromUDPAddrPort(p.buf)
	if err != nil || n == 0 || p.buf[0] != 0x1c {
		tb.Fatalf("pong: got % x, error %v, want an UnconnectedPong", p.buf[:n], err)
	}
}

// metricsServer starts a server with its metrics served and scraped
// once, the collector registered and run.
func startScrapedServer(tb testing.TB) *Server {
	tb.Helper()
	srv := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: "127.0.0.1:0"}, Metrics: MetricsConfig{Address: "127.0.0.1:0"}, noOfflineLimits: true}.New()
	if err := srv.Listen(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	resp, err := http.Get("http://" + srv.MetricsAddr().String() + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return srv
}

// A ping answered by a server whose metrics are served costs no
// allocation, in the test's goroutine or the listener's: the collector
// only reads counters at scrape time.
func TestPingAllocsWithMetrics(t *testing.T) {
	srv := startScrapedServer(t)
	p := newPinger(t, srv.Addrs()[0].String())
	p.roundTrip(t)
	if n := testing.AllocsPerRun(500, func() { p.roundTrip(t) }); n != 0 {
		t.Errorf("got %v allocations per ping round trip, want 0", n)
	}
}

// BenchmarkPingWithMetrics is a ping round trip to a server whose metrics
// are served.
func BenchmarkPingWithMetrics(b *testing.B) {
	srv := startScrapedServer(b)
	p := newPinger(b, srv.Addrs()[0].String())
	b.ReportAllocs()
	for b.Loop() {
		p.roundTrip(b)
	}
}

// The monitor package's documentation, which the README links to, lists
// every metric the collector reports.
func TestREADMEListsMetrics(t *testing.T) {
	readme := servertest.PackageDoc(t, "monitor")
	for _, name := range append(slices.Clone(metricNames), netherNetMetricNames...) {
		if !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("monitor/doc.go does not list %s", name)
		}
	}
	for _, key := range []string{"`metrics.address`", "`metrics.pprof`"} {
		if !strings.Contains(readme, key) {
			t.Errorf("monitor/doc.go lacks %s", key)
		}
	}
}
