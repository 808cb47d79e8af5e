package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	"github.com/rs/zerolog"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The nginx test runs the README's recipe for several instances behind a
// load balancer with Debian's nginx and its stream module: nginx started
// by the test on loopback ports, with a configuration and prefix of its
// own in a temporary directory (never the system's service), in front of
// two servers.

// nginxModule is where Debian's libnginx-mod-stream puts the module.
const nginxModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

// nginxWait bounds every wait of the nginx test.
const nginxWait = 10 * time.Second

// findNginx returns the nginx binary, or ends the test: it fails when CI
// is "true" (.ci/run installs nginx and libnginx-mod-stream) and skips,
// saying so, otherwise.
func findNginx(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	_, binErr := os.Stat(bin)
	_, modErr := os.Stat(nginxModule)
	if binErr == nil && modErr == nil {
		return bin
	}
	msg := fmt.Sprintf("nginx or its stream module missing (%v; %v): apt-get install -y nginx libnginx-mod-stream", binErr, modErr)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Log("SKIPPING THE NGINX LOAD-BALANCER TEST: " + msg)
	t.Skip(msg)
	return ""
}

// readmeNginx returns the stream block of README.md's nginx recipe, with
// nginx listening on front and balancing over the upstreams: the README's
// configuration, addresses replaced.
func readmeNginx(t *testing.T, front string, upstreams []string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "## Several instances behind a load balancer")
	if i < 0 {
		t.Fatal("README.md has no section \"Several instances behind a load balancer\"")
	}
	s = s[i:]
	j := strings.Index(s, "```nginx\n")
	if j < 0 {
		t.Fatal("README.md's load balancer section has no nginx block")
	}
	s = s[j+len("```nginx\n"):]
	s = s[:strings.Index(s, "```")]
	for _, r := range []struct{ old, new string }{
		{"listen 19132 udp reuseport;", "listen " + front + " udp reuseport;"},
		{"server 10.0.0.11:19132;", "server " + upstreams[0] + ";"},
		{"server 10.0.0.12:19132;", "server " + upstreams[1] + ";"},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("README.md's nginx block lacks %q:\n%s", r.old, s)
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	return s
}

// startNginx runs nginx in the foreground with conf (a stream block) in a
// temporary prefix, and stops it (its master process, by PID) when the
// test ends.
func startNginx(t *testing.T, bin, stream string) string {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf(`load_module %s;
daemon off;
worker_processes 1;
pid %s;
error_log %s info;
events { worker_connections 256; }
%s`, nginxModule, filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "error.log"), stream)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s\n%s", err, out, conf)
	}
	cmd := exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM is nginx's fast stop: its master ends its workers at
		// once (SIGQUIT would wait for every UDP flow's proxy_timeout).
		stopAt := time.Now()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		t.Logf("nginx stopped in %v", time.Since(stopAt).Round(time.Millisecond))
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx output:\n%s\nerror.log:\n%s", out.String(), log)
		}
	})
	return dir
}

// freeUDPPort returns a loopback UDP address free a moment ago.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	return addr
}

// instance is one server behind nginx.
type instance struct {
	name string
	srv  *server.Server
	log  *logBuffer
	stop context.CancelFunc
	ran  chan error
}

// startInstance starts a server configured as the README's recipe says,
// on a loopback port, trusting nginx on 127.0.0.1, advertising public as
// its address, sharing dir's cookie secret and GUID files.
func startInstance(t *testing.T, name, dir, public string) *instance {
	t.Helper()
	uc := server.DefaultUserConfig()
	uc.Network.AddressV4 = "127.0.0.1:0"
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Network.ProxyProtocol = true
	uc.Network.TrustedProxies = []string{"127.0.0.1"}
	uc.Network.PublicAddress = public
	uc.Network.CookieSecretFile = filepath.Join(dir, "cookie_secret")
	uc.Server.GUIDFile = filepath.Join(dir, "server_guid")
	uc.Server.Handler = "lobby"
	uc.Server.ShutdownMessage = "Instance " + name + " is stopping."
	uc.Server.ShutdownGrace = "2s"
	uc.Metrics.Address = "127.0.0.1:0"
	lb := &logBuffer{}
	log := zerolog.New(lb).Level(zerolog.DebugLevel).With().Str("instance", name).Logger()
	c, err := uc.Config(&log)
	if err != nil {
		t.Fatalf("%s: config: %v", name, err)
	}
	c.AuthenticationDisabled = true // gophertunnel's offline clients
	// Clients closed by the test's cleanup acknowledge nothing.
	c.ShutdownTimeout = time.Second
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("%s: Listen: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{name: name, srv: srv, log: lb, stop: cancel, ran: make(chan error, 1)}
	go func() { in.ran <- srv.Run(ctx) }()
	t.Cleanup(func() {
		stopAt := time.Now()
		cancel()
		_ = srv.Close()
		<-in.ran
		t.Logf("%s closed in %v", name, time.Since(stopAt).Round(time.Millisecond))
		if t.Failed() {
			t.Logf("%s log:\n%s", name, lb.String())
		}
	})
	return in
}

// readyz returns the status of the instance's /readyz.
func (in *instance) readyz(t *testing.T) int {
	t.Helper()
	addr := in.srv.MetricsAddr()
	if addr == nil {
		return 0 // closed
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr.String() + "/readyz")
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// metric returns the value of the sample line of /metrics that starts
// with prefix, "" if there is none.
func (in *instance) metric(t *testing.T, prefix string) string {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + in.srv.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(line, prefix))
		}
	}
	return ""
}

// holds reports whether a session of the instance is the client at addr.
func (in *instance) holds(addr string) bool {
	for _, s := range in.srv.Sessions() {
		if s.RemoteAddr().String() == addr {
			return true
		}
	}
	return false
}

// player is a gophertunnel client that joined through nginx.
type player struct {
	name string
	conn *minecraft.Conn
}

// joinVia joins addr with gophertunnel as name and spawns. gophertunnel
// pings first and connects to the port the pong advertises: the public
// address's, nginx's.
func joinVia(t *testing.T, addr, name string) (*minecraft.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), nginxWait)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContext(ctx, "raknet", addr)
	if err != nil {
		return nil, err
	}
	if err := conn.DoSpawnContext(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// readUntil reads conn until want returns true for a packet, or the read
// fails: it returns the error.
func readUntil(conn *minecraft.Conn, want func(packet.Packet) bool) error {
	_ = conn.SetReadDeadline(time.Now().Add(nginxWait))
	for {
		pk, err := conn.ReadPacket()
		if err != nil {
			return err
		}
		if want(pk) {
			return nil
		}
	}
}

func TestNginxLoadBalancer(t *testing.T) {
	bin := findNginx(t)
	start := time.Now()
	shared := t.TempDir()
	front := freeUDPPort(t)
	a := startInstance(t, "A", shared, front)
	b := startInstance(t, "B", shared, front)
	instances := []*instance{a, b}
	if a.srv.GUID() != b.srv.GUID() {
		t.Fatalf("GUIDs %d and %d, want the shared one", a.srv.GUID(), b.srv.GUID())
	}
	startNginx(t, bin, readmeNginx(t, front, []string{a.srv.Addrs()[0].String(), b.srv.Addrs()[0].String()}))

	// nginx is up once a ping through it is answered, with the public
	// port.
	deadline := time.Now().Add(nginxWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		pong, err := raknet.Dialer{}.PingContext(ctx, front)
		cancel()
		if err == nil {
			_, port, _ := net.SplitHostPort(front)
			if !strings.Contains(string(pong), ";"+port+";") {
				t.Errorf("pong %q does not advertise nginx's port %s", pong, port)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pong through nginx: %v", err)
		}
	}

	// Players join until both instances have some: the hash spreads them
	// by address and port.
	var players []player
	where := map[string]*instance{}
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("Player%d", i)
		conn, err := joinVia(t, front, name)
		if err != nil {
			t.Fatalf("%s: join through nginx: %v", name, err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		players = append(players, player{name, conn})
		local := conn.LocalAddr().String()
		for _, in := range instances {
			if in.holds(local) {
				if where[name] != nil {
					t.Fatalf("%s (%s) is on both instances", name, local)
				}
				where[name] = in
			}
		}
		if where[name] == nil {
			t.Fatalf("%s (%s): no instance has a session from its own address; A has %v, B has %v", name, local, remotes(a), remotes(b))
		}
		if a.srv.PlayerCount() > 0 && b.srv.PlayerCount() > 0 && i >= 3 {
			break
		}
	}
	if a.srv.PlayerCount() == 0 || b.srv.PlayerCount() == 0 {
		t.Fatalf("players: A %d, B %d; want both to have some", a.srv.PlayerCount(), b.srv.PlayerCount())
	}
	// Each player is logged by its own address and port, as it joins
	// the lobby's world (once it has, it hears what the lobby says).
	for _, p := range players {
		raddr := fmt.Sprintf(`"raddr":"%s"`, p.conn.LocalAddr())
		waitUntil(t, p.name+"'s join in the log", func() bool {
			for _, line := range strings.Split(where[p.name].log.String(), "\n") {
				if strings.Contains(line, raddr) && strings.Contains(line, `"player":"`+p.name+`"`) && strings.Contains(line, "player joined the lobby") {
					return true
				}
			}
			return false
		})
	}

	// A go-raknet client joins through nginx too, by its own address.
	gr, err := goraknet.Dialer{}.DialTimeout(front, nginxWait)
	if err != nil {
		t.Fatalf("go-raknet through nginx: %v", err)
	}
	t.Cleanup(func() { _ = gr.Close() })
	waitUntil(t, "the go-raknet client's session", func() bool { return a.holds(gr.LocalAddr().String()) || b.holds(gr.LocalAddr().String()) })

	// Nothing was refused: every datagram through nginx was known by its
	// header or its flow, and no limit saw nginx's address.
	for _, in := range instances {
		for _, reason := range []string{"per_ip", "proxy_no_flow", "proxy_untrusted", "oversize"} {
			if v := in.metric(t, fmt.Sprintf(`basalt_raknet_refused_total{listener="%s",reason="%s"}`, in.srv.Addrs()[0], reason)); v != "0" {
				t.Errorf("%s: refused %s %q, want 0", in.name, reason, v)
			}
		}
	}

	// Stop the instance with more players gracefully: /readyz goes 503
	// while it still serves, its players are told and then disconnected
	// with its shutdown message.
	stopped, other := a, b
	if b.srv.PlayerCount() > a.srv.PlayerCount() {
		stopped, other = b, a
	}
	stoppedAddr := stopped.srv.Addrs()[0].String()
	var theirs []player
	for _, p := range players {
		if where[p.name] == stopped {
			theirs = append(theirs, p)
		}
	}
	// Their clients read from now on, so nothing they are sent is lost
	// when the disconnect closes them.
	type ending struct {
		name   string
		notice bool
		err    error
	}
	endings := make(chan ending, len(theirs))
	for _, p := range theirs {
		go func() {
			e := ending{name: p.name}
			e.err = readUntil(p.conn, func(pk packet.Packet) bool {
				if txt, ok := pk.(*packet.Text); ok && txt.Message == server.DefaultRestartMessage {
					e.notice = true
				}
				return false
			})
			endings <- e
		}()
	}
	stopAt := time.Now()
	stopped.stop()
	waitUntil(t, "/readyz 503", func() bool { return stopped.readyz(t) == http.StatusServiceUnavailable })
	if stopped.srv.Addrs() == nil || len(stopped.srv.Sessions()) == 0 {
		t.Error("the listener closed or the players left before /readyz turned 503")
	}
	if other.readyz(t) != http.StatusOK {
		t.Error("the other instance is not ready")
	}
	for range theirs {
		e := <-endings
		if !e.notice {
			t.Errorf("%s: no restart notice before the disconnect", e.name)
		}
		var de minecraft.DisconnectError
		if !errors.As(e.err, &de) || string(de) != "Instance "+stopped.name+" is stopping." {
			t.Errorf("%s: got %v, want a disconnect with the shutdown message", e.name, e.err)
		}
	}
	select {
	case err := <-stopped.ran:
		stopped.ran <- err // for the cleanup
	case <-time.After(nginxWait):
		t.Fatal("the stopped instance's Run did not return")
	}
	t.Logf("graceful stop: %v (grace 2s)", time.Since(stopAt).Round(time.Millisecond))

	// New players land on the other instance: nginx takes the stopped
	// one out when a datagram to it fails.
	before := other.srv.PlayerCount()
	for i := range 4 {
		name := fmt.Sprintf("Late%d", i)
		conn, err := joinVia(t, front, name)
		if err != nil {
			t.Fatalf("%s: join after the stop: %v", name, err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if !other.holds(conn.LocalAddr().String()) {
			t.Errorf("%s (%s) is not on the instance still running", name, conn.LocalAddr())
		}
	}
	if got := other.srv.PlayerCount(); got != before+4 {
		t.Errorf("the running instance has %d players, want %d", got, before+4)
	}
	t.Logf("%d players through nginx (A %s, B %s, stopped %s); test took %v",
		len(players)+4, a.srv.Addrs()[0], b.srv.Addrs()[0], stoppedAddr, time.Since(start).Round(time.Millisecond))
}

// remotes returns the remote addresses of the instance's sessions.
func remotes(in *instance) []string {
	var out []string
	for _, s := range in.srv.Sessions() {
		out = append(out, s.RemoteAddr().String())
	}
	return out
}

// waitUntil polls cond until it holds, failing after nginxWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(nginxWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
