package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	gonn "github.com/df-mc/go-nethernet"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The nginx test runs the README's recipe for several instances behind a
// load balancer with Debian's nginx and its stream module: nginx started
// by the test on loopback ports, with a configuration and prefix of its
// own in a temporary directory (never the system's service), in front of
// two processes of the basalt command built from this module, each with
// the README's config.toml. nginx listens on 127.0.0.1 for TCP (NetherNet's
// signalling) and UDP (RakNet); the instances on 127.0.0.2 and 127.0.0.3,
// each advertising its own address to NetherNet players.

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

// readmeNginx returns the stream block of the server package's nginx
// recipe, with nginx listening on front and balancing over the upstreams:
// the documented configuration, addresses replaced.
func readmeNginx(t *testing.T, front string, upstreams []string) string {
	t.Helper()
	s := readmeRecipeBlock(t, "stream {")
	for _, r := range []struct{ old, new string }{
		{"listen 19132;", "listen " + front + ";"},
		{"listen 19132 udp reuseport;", "listen " + front + " udp reuseport;"},
		{"server 10.0.0.11:19132;", "server " + upstreams[0] + ";"},
		{"server 10.0.0.12:19132;", "server " + upstreams[1] + ";"},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("server/doc.go's nginx block lacks %q:\n%s", r.old, s)
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
	cmd.SysProcAttr = childProcAttr(syscall.SIGTERM) // nginx's fast stop
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

// bothFreeOn returns an address on the loopback IP ip whose port was free
// on TCP and UDP a moment ago: nginx and each instance listen on both.
func bothFreeOn(t *testing.T, ip string) string {
	t.Helper()
	for range 20 {
		tl, err := net.Listen("tcp4", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		addr := tl.Addr().String()
		ul, err := net.ListenPacket("udp4", addr)
		_ = tl.Close()
		if err == nil {
			_ = ul.Close()
			return addr
		}
	}
	t.Fatalf("no port free on both TCP and UDP on %s", ip)
	return ""
}

// buildBasaltFor builds the basalt command into dir, with the race
// detector when the test binary has it, and returns its path.
func buildBasaltFor(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "basalt")
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				args = append(args, "-race")
			}
		}
	}
	start := time.Now()
	if out, err := exec.Command("go", append(args, "github.com/basaltmc/basalt")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return bin
}

// readmeInstanceConfig returns the config.toml of README.md's recipe for
// an instance behind nginx at front, listening on addr and advertising it
// to NetherNet players, with the test's files and grace put in, and the
// keys a test needs added: no IPv6 or LAN listener, the lobby (clients
// spawn), offline mode (tests never reach Xbox Live), an instance's own
// shutdown message, and JSON logs at debug (a session's address is logged
// when it opens).
func readmeInstanceConfig(t *testing.T, name, addr, front, shared string) string {
	t.Helper()
	s := readmeRecipeBlock(t, "[network]")
	for _, r := range []struct{ old, new string }{
		{`address_v4 = "0.0.0.0:19132"`, fmt.Sprintf("address_v4 = %q", addr)},
		{`nethernet_advertise_address = "203.0.113.11:19132"`, fmt.Sprintf("nethernet_advertise_address = %q", addr)},
		{`nethernet_identity_file = "/etc/basalt/nethernet_identity"`, fmt.Sprintf("nethernet_identity_file = %q", filepath.Join(shared, "nethernet_identity"))},
		{`trusted_proxies = ["10.0.0.10"]`, `trusted_proxies = ["127.0.0.1"]`},
		{`public_address = "203.0.113.5:19132"`, fmt.Sprintf("public_address = %q", front)},
		{`cookie_secret_file = "/etc/basalt/cookie_secret"`, fmt.Sprintf("cookie_secret_file = %q", filepath.Join(shared, "cookie_secret"))},
		{`guid_file = "/etc/basalt/server_guid"`, fmt.Sprintf("guid_file = %q", filepath.Join(shared, "server_guid"))},
		{`shutdown_grace = "10s"`, fmt.Sprintf("shutdown_grace = %q", nginxGrace.String())},
		{`address = "10.0.0.11:9100"`, `address = "127.0.0.1:0"`},
		{"[network]\n", "[network]\naddress_v6 = \"\"\nlan_discovery = false\n"},
		{"[server]\n", fmt.Sprintf("[server]\nhandler = \"lobby\"\nonline_mode = false\nshutdown_message = %q\n", stoppingMessage(name))},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("server/doc.go's instance config lacks %q:\n%s", r.old, s)
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	return s + "\n[log]\nformat = \"json\"\nlevel = \"debug\"\n"
}

// nginxGrace is the instances' server.shutdown_grace: room for a loaded
// machine to see /readyz 503 before the listener closes.
const nginxGrace = 2 * time.Second

// stoppingMessage is the shutdown message of the instance called name.
func stoppingMessage(name string) string { return "Instance " + name + " is stopping." }

// jsonLog keeps the lines of an instance's JSON log as they are written;
// it is safe for concurrent use.
type jsonLog struct {
	mu      sync.Mutex
	raw     bytes.Buffer
	partial []byte
	lines   []map[string]any
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raw.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := l.partial[:i]
		l.partial = l.partial[i+1:]
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber() // GUIDs do not fit a float64
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			m = map[string]any{"message": "not JSON: " + string(line)}
		}
		l.lines = append(l.lines, m)
	}
	return len(p), nil
}

// find returns the index of the first line with message msg for which
// match (nil: any) holds, -1 if there is none.
func (l *jsonLog) find(msg string, match func(map[string]any) bool) (int, map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, m := range l.lines {
		if m["message"] == msg && (match == nil || match(m)) {
			return i, m
		}
	}
	return -1, nil
}

func (l *jsonLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raw.String()
}

// field returns a matcher for lines whose key is the string value.
func field(key, value string) func(map[string]any) bool {
	return func(m map[string]any) bool { s, _ := m[key].(string); return s == value }
}

// instance is a basalt process behind nginx.
type instance struct {
	name    string
	cmd     *exec.Cmd
	log     *jsonLog
	exited  chan struct{} // closed once the process has exited; then err is Wait's
	err     error
	game    string // its game listener's address
	metrics string // its metrics address
	guid    string
}

// startInstance runs bin in a directory of its own with the README's
// configuration for an instance on the loopback IP ip behind nginx at
// front, sharing shared's cookie secret, GUID and NetherNet identity
// files, and waits until it listens. The process is killed, by its PID,
// when the test ends if it still runs.
func startInstance(t *testing.T, bin, name, ip, front, shared string) *instance {
	t.Helper()
	dir := t.TempDir()
	conf := readmeInstanceConfig(t, name, bothFreeOn(t, ip), front, shared)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	in := &instance{name: name, log: &jsonLog{}, exited: make(chan struct{})}
	in.cmd = exec.Command(bin, "-config", path)
	in.cmd.Dir = dir
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log // standard input: /dev/null, no console
	in.cmd.SysProcAttr = childProcAttr(syscall.SIGKILL)
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.err = in.cmd.Wait(); close(in.exited) }()
	t.Cleanup(func() {
		select {
		case <-in.exited:
		default:
			_ = in.cmd.Process.Kill()
			<-in.exited
		}
		if t.Failed() {
			t.Logf("instance %s (pid %d), config:\n%s\nlog:\n%s", name, in.cmd.Process.Pid, conf, in.log.String())
		}
	})
	in.wait(t, "NetherNet listening", nil)
	// The server's line, not its RakNet listener's.
	_, listening := in.wait(t, "listening", func(m map[string]any) bool { _, ok := m["addrs"]; return ok })
	addrs, _ := listening["addrs"].([]any)
	if len(addrs) != 1 {
		t.Fatalf("%s: listening on %v, want one address", name, listening["addrs"])
	}
	in.game, _ = addrs[0].(string)
	in.guid = fmt.Sprint(listening["guid"])
	_, metrics := in.wait(t, "serving metrics", nil)
	in.metrics, _ = metrics["addr"].(string)
	return in
}

// wait waits for a log line with message msg for which match holds (nil:
// any), failing the test after nginxWait or if the process exits first.
func (in *instance) wait(t *testing.T, msg string, match func(map[string]any) bool) (int, map[string]any) {
	t.Helper()
	var (
		i      int
		m      map[string]any
		exited bool
	)
	poll.Until(nginxWait, 10*time.Millisecond, func() bool {
		if i, m = in.log.find(msg, match); i >= 0 {
			return true
		}
		select {
		case <-in.exited:
			exited = true
			i, m = in.log.find(msg, match)
			return true
		default:
			return false
		}
	})
	switch {
	case i >= 0:
		return i, m
	case exited:
		t.Fatalf("%s exited (%v) before logging %q", in.name, in.err, msg)
	default:
		t.Fatalf("%s: no %q line in %v", in.name, msg, nginxWait)
	}
	return -1, nil
}

// get returns the status and body of GET path on the instance's metrics
// address; status 0 if it does not answer.
func (in *instance) get(path string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + in.metrics + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the sample line of /metrics that starts
// with prefix, "" if there is none.
func (in *instance) metric(prefix string) string {
	_, body := in.get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(line, prefix))
		}
	}
	return ""
}

// opened reports whether the instance logged a session opened from addr.
func (in *instance) opened(addr string) bool {
	i, _ := in.log.find("session opened", field("raddr", addr))
	return i >= 0
}

// player is a gophertunnel client that joined through nginx, and the
// instance that logged it joining from its own address.
type player struct {
	name string
	conn *minecraft.Conn
	on   *instance
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

// join joins through nginx at front as name and returns the player with
// the instance whose log has it joining the lobby from the client's own
// address and port; it fails the test if none or both have. The client
// is closed when keep ends.
func join(t, keep *testing.T, front, name string, instances []*instance) player {
	t.Helper()
	conn, err := joinVia(t, front, name)
	if err != nil {
		t.Fatalf("%s: join through nginx: %v", name, err)
	}
	keep.Cleanup(func() { _ = conn.Close() })
	return player{name: name, conn: conn, on: joinedOn(t, name, conn.LocalAddr().String(), instances)}
}

// joinedOn returns the instance whose log has the player name joining from
// the address local, the client's own; it fails the test if none or both
// have.
func joinedOn(t *testing.T, name, local string, instances []*instance) *instance {
	t.Helper()
	joined := func(m map[string]any) bool { return field("player", name)(m) && field("raddr", local)(m) }
	// The server logs the join as the player takes a slot, which may
	// come a moment after the dial returns: wait for it.
	var on *instance
	both := false
	poll.Until(nginxWait, 10*time.Millisecond, func() bool {
		for _, in := range instances {
			if i, _ := in.log.find("player joined", joined); i >= 0 {
				both = both || (on != nil && on != in)
				on = in
			}
		}
		return on != nil
	})
	if both {
		t.Fatalf("%s (%s) joined both instances", name, local)
	}
	if on == nil {
		t.Fatalf("%s (%s): no instance logged it joining from its own address and port", name, local)
	}
	return on
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

// TestNginxLoadBalancer runs two basalt processes, built from this
// module, behind Debian's nginx with the README's recipe; its subtests
// run in order, each on what the one before left.
func TestNginxLoadBalancer(t *testing.T) {
	nginx := findNginx(t)
	if testing.Short() {
		t.Skip("builds and runs the basalt command")
	}
	start := time.Now()
	bin := buildBasaltFor(t, t.TempDir())
	shared := t.TempDir()
	front := bothFreeOn(t, "127.0.0.1")
	// One after the other: the first creates the shared GUID, cookie
	// secret and NetherNet identity files, the second reads them.
	a := startInstance(t, bin, "A", "127.0.0.2", front, shared)
	b := startInstance(t, bin, "B", "127.0.0.3", front, shared)
	instances := []*instance{a, b}
	if a.guid != b.guid {
		t.Fatalf("GUIDs %s and %s, want the shared one", a.guid, b.guid)
	}
	startNginx(t, nginx, readmeNginx(t, front, []string{a.game, b.game}))
	t.Logf("build and start: %v", time.Since(start).Round(time.Millisecond))

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

	var players []player
	parent := t
	ok := t.Run("join", func(t *testing.T) {
		// Players join until both instances have some: the hash spreads
		// them by address and port. Each is logged by its own address
		// and port as it joins the lobby.
		count := map[*instance]int{}
		for i := 0; i < 12 && (i < 4 || count[a] == 0 || count[b] == 0); i++ {
			p := join(t, parent, front, fmt.Sprintf("Player%d", i), instances) // played on
			players = append(players, p)
			count[p.on]++
		}
		if count[a] == 0 || count[b] == 0 {
			t.Fatalf("players: A %d, B %d; want both to have some", count[a], count[b])
		}
		for _, in := range instances {
			if code, _ := in.get("/readyz"); code != http.StatusOK {
				t.Errorf("%s: /readyz %d, want 200", in.name, code)
			}
		}

		// A go-raknet client joins through nginx too, by its own address.
		gr, err := goraknet.Dialer{}.DialTimeout(front, nginxWait)
		if err != nil {
			t.Fatalf("go-raknet through nginx: %v", err)
		}
		t.Cleanup(func() { _ = gr.Close() })
		local := gr.LocalAddr().String()
		waitUntil(t, "the go-raknet client's session, opened from its own address", func() bool { return a.opened(local) || b.opened(local) })

		// Nothing was refused: every datagram through nginx was known by
		// its header or its flow, and no limit saw nginx's address.
		for _, in := range instances {
			for _, reason := range []string{"per_ip", "proxy_no_flow", "proxy_untrusted", "oversize"} {
				if v := in.metric(fmt.Sprintf(`basalt_raknet_refused_total{listener="%s",reason="%s"}`, in.game, reason)); v != "0" {
					t.Errorf("%s: refused %s %q, want 0", in.name, reason, v)
				}
			}
		}
	})
	if !ok {
		return
	}
	var netherNetJoined int
	ok = t.Run("nethernet", func(t *testing.T) {
		netherNetJoined = netherNetThroughNginx(t, front, instances)
	})
	if !ok {
		return
	}

	// The instance with more players is stopped.
	stopped, other := a, b
	var theirs []player
	for _, p := range players {
		if p.on == a {
			theirs = append(theirs, p)
		}
	}
	if 2*len(theirs) < len(players) {
		stopped, other = b, a
		theirs = theirs[:0]
		for _, p := range players {
			if p.on == b {
				theirs = append(theirs, p)
			}
		}
	}
	ok = t.Run("SIGTERM", func(t *testing.T) {
		// Their clients read from now on, so nothing they are sent is
		// lost when the disconnect closes them.
		type ending struct {
			name   string
			notice time.Duration // when the restart message came, 0 if not
			err    error
			at     time.Duration
		}
		endings := make(chan ending, len(theirs))
		stopAt := time.Now()
		for _, p := range theirs {
			go func() {
				e := ending{name: p.name}
				e.err = readUntil(p.conn, func(pk packet.Packet) bool {
					if txt, ok := pk.(*packet.Text); ok && txt.Message == server.DefaultRestartMessage && e.notice == 0 {
						e.notice = time.Since(stopAt)
					}
					return false
				})
				e.at = time.Since(stopAt)
				endings <- e
			}()
		}
		if err := stopped.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// /readyz turns 503 while the instance still serves: nothing in
		// its log says it has begun closing, and no player has left.
		waitUntil(t, "/readyz 503", func() bool { code, _ := stopped.get("/readyz"); return code == http.StatusServiceUnavailable })
		readyAt := time.Since(stopAt)
		if i, _ := stopped.log.find("shutting down", nil); i >= 0 {
			t.Error("/readyz turned 503 only after the instance began closing its listener")
		}
		if len(endings) > 0 {
			t.Error("a player was disconnected before /readyz turned 503")
		}
		if code, _ := other.get("/readyz"); code != http.StatusOK {
			t.Errorf("the other instance's /readyz %d, want 200", code)
		}
		// Its players are told the server is restarting, and then
		// disconnected with its shutdown message.
		var last time.Duration
		for range theirs {
			e := <-endings
			if e.notice == 0 || e.notice >= nginxGrace {
				t.Errorf("%s: restart message after %v, want it as the drain begins, before the disconnect", e.name, e.notice)
			}
			var de minecraft.DisconnectError
			if !errors.As(e.err, &de) || string(de) != stoppingMessage(stopped.name) {
				t.Errorf("%s: got %v, want a disconnect with %q", e.name, e.err, stoppingMessage(stopped.name))
			}
			if e.at < nginxGrace {
				t.Errorf("%s: disconnected %v after SIGTERM, before the %v grace ended", e.name, e.at, nginxGrace)
			}
			last = max(last, e.at)
		}
		select {
		case <-stopped.exited:
		case <-time.After(nginxWait + server.DefaultShutdownTimeout):
			t.Fatalf("%s still runs %v after SIGTERM", stopped.name, nginxWait+server.DefaultShutdownTimeout)
		}
		exitAt := time.Since(stopAt)
		if stopped.err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit 0", stopped.name, stopped.err)
		}
		// Its log tells the same story, in order.
		drain, _ := stopped.log.find("draining: not ready, refusing new logins, telling the players", nil)
		down, _ := stopped.log.find("shutting down", nil)
		closed, _ := stopped.log.find("server closed", nil)
		if drain < 0 || down < drain || closed < down {
			t.Errorf("log lines draining, shutting down, server closed at %d, %d, %d; want all, in that order", drain, down, closed)
		}
		t.Logf("SIGTERM to %s with %d players: /readyz 503 after %v, last player disconnected after %v, exit after %v (grace %v)",
			stopped.name, len(theirs), readyAt.Round(time.Millisecond), last.Round(time.Millisecond), exitAt.Round(time.Millisecond), nginxGrace)
	})
	if !ok {
		return
	}

	t.Run("new players", func(t *testing.T) {
		// New players land on the other instance: nginx takes the
		// stopped one out when a datagram to it fails.
		for i := range 4 {
			if p := join(t, t, front, fmt.Sprintf("Late%d", i), instances); p.on != other {
				t.Errorf("%s (%s) is on the stopped instance", p.name, p.conn.LocalAddr())
			}
		}
		gr, err := goraknet.Dialer{}.DialTimeout(front, nginxWait)
		if err != nil {
			t.Fatalf("go-raknet through nginx after the stop: %v", err)
		}
		t.Cleanup(func() { _ = gr.Close() })
		local := gr.LocalAddr().String()
		waitUntil(t, "the go-raknet client's session on the running instance", func() bool { return other.opened(local) })
	})
	t.Logf("%d RakNet and %d NetherNet players through nginx; test took %v", len(players)+4, netherNetJoined, time.Since(start).Round(time.Millisecond))
}

// netherNetPlayers is how many NetherNet players must join through nginx,
// and netherNetMost how many may try until both instances have some.
const netherNetPlayers, netherNetMost = 8, 16

// netherNetThroughNginx joins NetherNet players through nginx at front
// until at least netherNetPlayers have and both instances have some, each
// checked as it joins: the instance that answered its offer (through
// nginx, with a PROXY header) logs it by its own address and port, the
// answer offers only that instance's advertised address, the player's UDP
// goes there directly, and every instance signs with the one shared key.
// The players leave when the test ends; it returns how many joined.
func netherNetThroughNginx(t *testing.T, front string, instances []*instance) int {
	count := map[*instance]int{}
	var key *ecdsa.PublicKey
	both := func() bool { return count[instances[0]] > 0 && count[instances[1]] > 0 }
	for i := 0; i < netherNetMost && (i < netherNetPlayers || !both()); i++ {
		name := fmt.Sprintf("Nether%d", i)
		n, rec := recordingNetherNet(nil)
		ctx, cancel := context.WithTimeout(context.Background(), nginxWait)
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
		conn, err := d.DialContextNetwork(ctx, n, "http://"+front)
		if err == nil {
			t.Cleanup(func() { _ = conn.Close() })
			err = conn.DoSpawnContext(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s: join over NetherNet through nginx: %v", name, err)
		}
		local, remote := n.last.LocalAddr().(*gonn.Addr), n.last.RemoteAddr().(*gonn.Addr)
		if local.SelectedCandidate == nil || remote.SelectedCandidate == nil {
			t.Fatalf("%s: no selected ICE candidate pair", name)
		}
		self := net.JoinHostPort(local.SelectedCandidate.Address, strconv.Itoa(int(local.SelectedCandidate.Port)))
		on := joinedOn(t, name, self, instances)
		count[on]++

		// The answer came from that instance and offers its own address
		// alone, never nginx's; the player's UDP went to it directly.
		ip, _, _ := net.SplitHostPort(on.game)
		cands := candidateAddrs(rec.answer())
		if len(cands) == 0 {
			t.Errorf("%s: an answer without candidates:\n%s", name, rec.answer())
		}
		for _, c := range cands {
			if host, _, _ := net.SplitHostPort(c); host != ip {
				t.Errorf("%s: the answer of %s (advertising %s) offers %s: %v", name, on.name, ip, c, cands)
			}
		}
		if got := remote.SelectedCandidate.Address; got != ip {
			t.Errorf("%s: ICE with %s, want %s's advertised address %s", name, got, on.name, ip)
		}
		// One identity for the fleet.
		k := n.last.PublicKey()
		switch {
		case k == nil:
			t.Errorf("%s: %s's answer carries no identity", name, on.name)
		case key == nil:
			key = k
		case !k.Equal(key):
			t.Errorf("%s: %s signs with another key than the first player's instance", name, on.name)
		}
	}
	a, b := instances[0], instances[1]
	if !both() {
		t.Fatalf("NetherNet players: %s %d, %s %d; want both to have some", a.name, count[a], b.name, count[b])
	}
	// Nothing was refused: every signalling connection through nginx
	// started with a header naming the player, from a trusted address.
	for _, in := range instances {
		for _, reason := range []string{"malformed", "rate_limited", "source_busy", "busy"} {
			if v := in.metric(fmt.Sprintf(`basalt_nethernet_refused_total{reason="%s"}`, reason)); v != "0" {
				t.Errorf("%s: NetherNet refused %s %q, want 0", in.name, reason, v)
			}
		}
	}
	t.Logf("NetherNet players through nginx: %s %d, %s %d", a.name, count[a], b.name, count[b])
	return count[a] + count[b]
}

// waitUntil polls cond until it holds, failing after nginxWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(nginxWait, 10*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// readmeRecipeBlock returns the first code block starting with first in
// the section "Several instances behind a load balancer" of the server
// package's documentation, which the README links to, without the
// comment markers and the block's indent.
func readmeRecipeBlock(t *testing.T, first string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "server", "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(f.Doc.Text(), "\n# Several instances behind a load balancer\n")
	if !ok {
		t.Fatal("server/doc.go has no section \"Several instances behind a load balancer\"")
	}
	s, _, _ = strings.Cut(s, "\n# ")
	var block strings.Builder
	for line := range strings.Lines(s + "\n") {
		if code, ok := strings.CutPrefix(line, "\t"); ok || (line == "\n" && block.Len() > 0) {
			block.WriteString(code)
			continue
		}
		if b := strings.TrimRight(block.String(), "\n") + "\n"; strings.HasPrefix(b, first) {
			return b
		}
		block.Reset()
	}
	t.Fatalf("server/doc.go's load balancer section has no block starting %q", first)
	return ""
}
