package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/session"
	sessionjoin "github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/go-gl/mathgl/mgl32"
	"github.com/rs/zerolog"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The JavaScript clients are PrismarineJS bedrock-protocol (pinned in
// js/package-lock.json) over each of its RakNet backends: jsp-raknet and
// rust-raknet (as raknet-node) speak RakNet protocol 10 and read
// OpenConnectionReply1 as if it had no cookie; raknet-native is the C++
// RakNet and reads one.

// jsDir is the Node.js project holding the client script.
const jsDir = "js"

// jsRunTimeout bounds one run of the client script, Node's start included.
// A run takes a few seconds; the bound is for a machine busy with other
// work, where Node gets little CPU.
const jsRunTimeout = 45 * time.Second

// jsConnectTimeout is bedrock-protocol's connectTimeout, in milliseconds,
// for clients that are expected to give up: jsp-raknet ignores
// IncompatibleProtocolVersion and waits this long.
const jsConnectTimeout = "3000"

// jsShutdownTimeout bounds the servers' Close at the end of a test. After a
// kick, bedrock-protocol ends jsp-raknet's worker before it acknowledges
// the server's DisconnectionNotification, so the session would wait out
// its close timeout.
const jsShutdownTimeout = 200 * time.Millisecond

// jsResult is the JSON line client.js prints when its client is done.
type jsResult struct {
	Event   string   `json:"event"` // kick, play_status, error or exit
	Message string   `json:"message"`
	Status  string   `json:"status"`
	Error   string   `json:"error"`
	Log     []string `json:"log"`
}

// needNode returns the node executable, skipping the test when Node.js is
// not installed. The client's packages are installed from the committed
// lock file the first time a test needs them (npm ci), so the tests run
// on a fresh machine; a failed install fails the test.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: install Node.js 20 and npm to run the bedrock-protocol tests")
	}
	jsInstall.Do(func() {
		if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "nethernet")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--prefix", jsDir, "--no-audit", "--no-fund")
		if out, err := cmd.CombinedOutput(); err != nil {
			jsInstallErr = fmt.Errorf("npm ci --prefix %s: %v\n%s", jsDir, err, out)
		}
	})
	if jsInstallErr != nil {
		t.Fatal(jsInstallErr)
	}
	jsPrecompile.Do(func() {
		args := []string{"precompile.js"}
		for _, p := range session.KnownProtocols() {
			args = append(args, strconv.Itoa(int(p)))
		}
		cmd := exec.Command(node, args...)
		cmd.Dir = jsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			jsPrecompileErr = fmt.Errorf("node %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if jsPrecompileErr != nil {
		t.Fatal(jsPrecompileErr)
	}
	return node
}

// jsPrecompile compiles bedrock-protocol's packet code for every protocol
// the server knows once per test binary (a cache in node_modules), so
// that each client does not spend seconds of CPU compiling it at start.
var (
	jsPrecompile    sync.Once
	jsPrecompileErr error
)

// jsInstall installs the client's packages once per test binary.
var (
	jsInstall    sync.Once
	jsInstallErr error
)

// runJS runs client.js with args against the Bedrock server at addr and
// returns what it printed.
func runJS(t *testing.T, node, addr string, args ...string) jsResult {
	t.Helper()
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("address %q has no port", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), jsRunTimeout)
	defer cancel()
	args = append([]string{"client.js", "--host=" + host, "--port=" + port}, args...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = jsDir
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("node %s: no result after %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), jsRunTimeout, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var res jsResult
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil {
		t.Fatalf("node %s: result: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return res
}

// Offsets in the offline messages the recorder reads: the ID, the 16-byte
// magic, then the fields of PROTOCOL.md.
const (
	// ocr1ProtocolAt is OpenConnectionRequest1's RakNet protocol byte.
	ocr1ProtocolAt = 1 + 16
	// reply1SecurityAt is OpenConnectionReply1's security flag, after the
	// u64 server GUID. A cookie (u32) follows it when set, then the MTU.
	reply1SecurityAt = 1 + 16 + 8
	// ocr2CookieAt is where OpenConnectionRequest2 carries the echoed
	// cookie, right after the magic, when the client sends one.
	ocr2CookieAt = 1 + 16
	// ocr2CookielessIPv4 is the length of an OpenConnectionRequest2
	// without cookie to an IPv4 server: ID, magic, 7-byte address, u16
	// MTU, u64 GUID.
	ocr2CookielessIPv4 = 1 + 16 + 7 + 2 + 8
	// ocr2CookieIPv4 adds the u32 cookie and the u8 challenge flag that
	// RakNet writes after it.
	ocr2CookieIPv4 = ocr2CookielessIPv4 + 4 + 1
)

// handshakeLog records the offline handshake one client goes through, as
// a proxy between it and the server sees it. Safe for concurrent use.
type handshakeLog struct {
	mu           sync.Mutex
	ocr1         []byte   // the protocol of each OpenConnectionRequest1
	reply1       [][]byte // each OpenConnectionReply1
	ocr2         [][]byte // each OpenConnectionRequest2
	incompatible []byte   // the protocol each IncompatibleProtocolVersion named
}

// record is a proxy.Opts.DropPacket that drops nothing.
func (h *handshakeLog) record(d proxy.Direction, b []byte) bool {
	if len(b) == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case d == proxy.Incoming && b[0] == 0x05 && len(b) > ocr1ProtocolAt:
		h.ocr1 = append(h.ocr1, b[ocr1ProtocolAt])
	case d == proxy.Outgoing && b[0] == 0x06:
		h.reply1 = append(h.reply1, b)
	case d == proxy.Incoming && b[0] == 0x07:
		h.ocr2 = append(h.ocr2, b)
	case d == proxy.Outgoing && b[0] == 0x19 && len(b) > 1:
		h.incompatible = append(h.incompatible, b[1])
	}
	return false
}

// proxied starts a recording proxy in front of addr and returns its address.
func proxied(t *testing.T, addr string, h *handshakeLog) string {
	t.Helper()
	p, err := proxy.New(proxy.Opts{RemoteAddr: addr, DropPacket: h.record})
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p.LocalAddr().String()
}

// jsClient is one way of running the JavaScript client.
type jsClient struct {
	name    string
	backend string
	raknet  string // --raknet, for raknet-native only
	// protocol is the RakNet protocol its OpenConnectionRequest1 offers.
	protocol byte
	// readsCookie: it parses the cookie of an OpenConnectionReply1 with
	// security set and echoes it in OpenConnectionRequest2. The others
	// read the cookie's first two bytes as the MTU and send no cookie.
	readsCookie bool
}

var jsClients = []jsClient{
	{name: "jsp-raknet", backend: "jsp-raknet", protocol: 10},
	{name: "rust-raknet", backend: "raknet-node", protocol: 10},
	{name: "raknet-native", backend: "raknet-native", protocol: 11, readsCookie: true},
	{name: "raknet-native offering 10", backend: "raknet-native", raknet: "10", protocol: 10, readsCookie: true},
}

func (c jsClient) args(name string) []string {
	return c.argsAt(name, session.CurrentProtocol)
}

// argsAt is args for a client speaking Bedrock protocol p.
func (c jsClient) argsAt(name string, p int32) []string {
	args := []string{"--backend=" + c.backend, "--username=" + name, "--protocol=" + strconv.Itoa(int(p))}
	if c.raknet != "" {
		args = append(args, "--raknet="+c.raknet)
	}
	return args
}

func TestPrismarineClientGetsDisconnectMessage(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	const msg = "Welcome, {player}! Nothing to see yet."
	type tc struct {
		c        jsClient
		protocol int32
	}
	// Every client at every protocol the server knows.
	var tests []tc
	for _, c := range jsClients {
		for _, p := range session.KnownProtocols() {
			tests = append(tests, tc{c, p})
		}
	}
	for i, tc := range tests {
		c := tc.c
		t.Run(fmt.Sprintf("%s at %d", c.name, tc.protocol), func(t *testing.T) {
			t.Parallel()
			name := "Steve" + strconv.Itoa(i)
			_, addr := bedrockServer(t, server.Config{DisconnectMessage: msg, Shutdown: server.ShutdownConfig{Timeout: jsShutdownTimeout}, EncryptionDisabled: true})
			var h handshakeLog
			res := runJS(t, node, proxied(t, addr, &h), c.argsAt(name, tc.protocol)...)
			t.Logf("%s: %+v", c.name, res)
			if want := strings.ReplaceAll(msg, "{player}", name); res.Event != "kick" || res.Message != want {
				t.Errorf("got %s %q (error %q), want kick %q", res.Event, res.Message, res.Error, want)
			}
			h.check(t, c)
		})
	}
}

// TestPrismarineClientEncrypted logs bedrock-protocol's client in through
// the encryption handshake: its own ECDH, key derivation and checksums
// agree with the session's, so the gate's message arrives decrypted.
func TestPrismarineClientEncrypted(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	const msg = "Encrypted hello, {player}."
	c := jsClients[2] // raknet-native, the C++ RakNet
	_, addr := bedrockServer(t, server.Config{DisconnectMessage: msg, Shutdown: server.ShutdownConfig{Timeout: jsShutdownTimeout}})
	res := runJS(t, node, addr, c.args("Alex")...)
	t.Logf("%s: %+v", c.name, res)
	if want := "Encrypted hello, Alex."; res.Event != "kick" || res.Message != want {
		t.Errorf("got %s %q (error %q), want kick %q", res.Event, res.Message, res.Error, want)
	}
}

// check compares the recorded handshake with what c does.
func (h *handshakeLog) check(t *testing.T, c jsClient) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ocr1) == 0 || slices.ContainsFunc(h.ocr1, func(p byte) bool { return p != c.protocol }) {
		t.Errorf("OpenConnectionRequest1 protocols: got %v, want only %d", h.ocr1, c.protocol)
	}
	if len(h.reply1) == 0 || len(h.ocr2) == 0 {
		t.Fatalf("got %d OpenConnectionReply1 and %d OpenConnectionRequest2, want both", len(h.reply1), len(h.ocr2))
	}
	var cookies [][]byte // of the replies with security set
	for _, r := range h.reply1 {
		if len(r) <= reply1SecurityAt {
			t.Fatalf("OpenConnectionReply1 %x has no security flag", r)
		}
		if r[reply1SecurityAt] == 0 {
			continue
		}
		if !c.readsCookie {
			t.Errorf("OpenConnectionReply1 %x: got security %d, want 0 for a client that reads the cookie's first two bytes as the MTU", r, r[reply1SecurityAt])
		}
		if len(r) < reply1SecurityAt+5 {
			t.Fatalf("OpenConnectionReply1 %x: security set but no cookie", r)
		}
		cookies = append(cookies, r[reply1SecurityAt+1:reply1SecurityAt+5])
	}
	for _, r := range h.ocr2 {
		if len(cookies) == 0 || !c.readsCookie {
			if len(r) != ocr2CookielessIPv4 {
				t.Errorf("OpenConnectionRequest2 %x: got %d bytes, want %d (no cookie)", r, len(r), ocr2CookielessIPv4)
			}
			continue
		}
		if len(r) != ocr2CookieIPv4 || !slices.ContainsFunc(cookies, func(k []byte) bool { return bytes.Equal(r[ocr2CookieAt:ocr2CookieAt+4], k) }) {
			t.Errorf("OpenConnectionRequest2 %x: got %d bytes, want %d echoing one of the cookies %x", r, len(r), ocr2CookieIPv4, cookies)
		}
	}
}

func TestPrismarineProtocol10ClientOnServerWithout10(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	tests := []struct {
		c     jsClient
		event string // the result's event
		// detail is part of the result's error or a line of its log.
		detail string
	}{
		// jsp-raknet has no case for IncompatibleProtocolVersion (Client.js
		// handle) and keeps probing until bedrock-protocol times out.
		{jsClients[0], "error", "Connect timed out"},
		// rust-raknet's connect fails with NotSupportVersion.
		{jsClients[1], "error", "NotSupportVersion"},
		// raknet-native reports the message ID, 25 (0x19), as the reason.
		{jsClients[3], "exit", "Server closed connection: 25"},
	}
	for _, tc := range tests {
		t.Run(tc.c.name, func(t *testing.T) {
			t.Parallel()
			_, addr := bedrockServer(t, server.Config{RakNet: server.RakNetConfig{ProtocolVersions: []byte{11}}, Shutdown: server.ShutdownConfig{Timeout: jsShutdownTimeout}, EncryptionDisabled: true})
			var h handshakeLog
			res := runJS(t, node, proxied(t, addr, &h), append(tc.c.args("Alex"), "--timeout="+jsConnectTimeout)...)
			t.Logf("%s: %+v", tc.c.name, res)
			if res.Event != tc.event || !strings.Contains(res.Error, tc.detail) && !slices.Contains(res.Log, tc.detail) {
				t.Errorf("got %+v, want %s with %q", res, tc.event, tc.detail)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.incompatible) == 0 || slices.ContainsFunc(h.incompatible, func(p byte) bool { return p != 11 }) {
				t.Errorf("IncompatibleProtocolVersion: got protocols %v, want 11 at least once", h.incompatible)
			}
			if len(h.reply1) != 0 {
				t.Errorf("got %d OpenConnectionReply1, want none", len(h.reply1))
			}
		})
	}
}

// jsProc is client.js running in lobby mode: its events as they come, and
// its stdin for chat.
type jsProc struct {
	name   string
	stdin  io.WriteCloser
	events chan jsResult
}

// startJS starts client.js --lobby with args against addr; the process is
// ended and waited for when the test ends.
func startJS(t *testing.T, node, addr, name string, args ...string) *jsProc {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), jsLobbyTimeout)
	args = append([]string{"client.js", "--lobby", "--host=" + host, "--port=" + port}, args...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = jsDir
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("node %s: %v", strings.Join(args, " "), err)
	}
	p := &jsProc{name: name, stdin: stdin, events: make(chan jsResult, 64)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(p.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev jsResult
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		cancel()
		<-read
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr: %s", name, stderr.Bytes())
		}
	})
	return p
}

// jsLobbyTimeout bounds a lobby client's whole run; jsLobbyWait one wait
// for an event. Both are for a busy machine: a run takes seconds.
const (
	jsLobbyTimeout = 90 * time.Second
	jsLobbyWait    = 45 * time.Second
)

// expect returns the next event that satisfies match, failing the test if
// the client ends or none comes in time.
func (p *jsProc) expect(t *testing.T, what string, match func(jsResult) bool) jsResult {
	t.Helper()
	timeout := time.After(jsLobbyWait)
	var seen []jsResult
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatalf("%s: ended waiting for %s; saw %+v", p.name, what, seen)
			}
			if match(ev) {
				return ev
			}
			seen = append(seen, ev)
		case <-timeout:
			t.Fatalf("%s: no %s after %v; saw %+v", p.name, what, jsLobbyWait, seen)
		}
	}
}

// TestPrismarineLobby spawns bedrock-protocol's client in the lobby at every
// protocol the server knows over each RakNet backend (the C++ RakNet
// offering 11; jsp-raknet and rust-raknet offering 10), all at once, beside
// gophertunnel's client at 2193, with config.toml's defaults except
// online_mode = false (the clients log in offline): each is greeted, /list
// names them all, and the shutdown message reaches each.
func TestPrismarineLobby(t *testing.T) {
	node := needNode(t)
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = "127.0.0.1:0"
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Server.Handler = "lobby"
	uc.Server.Greeting = "Hello {player}, this is the lobby."
	uc.Server.ShutdownMessage = "The lobby is closing, bye!"
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	uc.Server.OnlineMode = false // the clients log in offline
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Shutdown.Timeout = jsShutdownTimeout
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	addr := srv.Addrs()[0].String()

	// Each backend at each protocol, named for both (Native2193, ...).
	backends := []struct {
		prefix string
		c      jsClient
	}{{"Native", jsClients[2]}, {"Jsp", jsClients[0]}, {"Rust", jsClients[1]}}
	var procs []*jsProc
	names := []string{"Gopher"}
	for _, b := range backends {
		for _, p := range session.KnownProtocols() {
			name := b.prefix + strconv.Itoa(int(p))
			names = append(names, name)
			procs = append(procs, startJS(t, node, addr, name, b.c.argsAt(name, p)...))
		}
	}
	slices.Sort(names)
	gopher := lobbyJoin(t, addr, "Gopher")
	lobbyText(t, gopher, "Hello Gopher, this is the lobby.")
	for _, p := range procs {
		p.expect(t, "spawn", func(ev jsResult) bool { return ev.Event == "spawn" })
		p.expect(t, "greeting", func(ev jsResult) bool {
			return ev.Event == "text" && ev.Message == "Hello "+p.name+", this is the lobby."
		})
	}

	want := fmt.Sprintf("%d players in the lobby: %s", len(names), strings.Join(names, ", "))
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "/list\n"); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		p.expect(t, "the /list answer", func(ev jsResult) bool { return ev.Event == "text" && ev.Message == want })
	}
	if err := gopher.WritePacket(&packet.CommandRequest{
		CommandLine:   "/list",
		CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
	}); err != nil {
		t.Fatal(err)
	}
	if got := lobbyText(t, gopher, "in the lobby:"); got != want {
		t.Errorf("Gopher's /list: got %q, want %q", got, want)
	}

	_ = srv.Close()
	for _, p := range procs {
		p.expect(t, "the shutdown message", func(ev jsResult) bool {
			return ev.Event == "kick" && ev.Message == "The lobby is closing, bye!"
		})
	}
	_ = gopher.SetReadDeadline(time.Now().Add(lobbyWait))
	for {
		if _, err := gopher.ReadPacket(); err != nil {
			var de minecraft.DisconnectError
			if !errors.As(err, &de) || string(de) != "The lobby is closing, bye!" {
				t.Errorf("Gopher: got %v, want the shutdown message", err)
			}
			break
		}
	}
}

// playHandler is a handler shaped as the README's: a join.World spawns the
// player and hands it every packet from then on, decoded for the player's
// protocol, with no RawHandler to pass packets by undecoded and no
// DecodeErrorHandler, so every packet bedrock-protocol sends goes through
// the codec. It answers each chat line with how many it has had.
type playHandler struct {
	packets.NopTypedHandler
	join   *sessionjoin.Join
	said   int
	closed chan<- error
}

func (p *playHandler) HandleSpawn(*session.Session) error { return nil }

func (p *playHandler) HandlePacket(_ *session.Session, pk packet.Packet) error {
	if t, ok := pk.(*packet.Text); ok && t.TextType == packet.TextTypeChat {
		p.said++
		return p.join.Write(&packet.Text{TextType: packet.TextTypeRaw, Message: fmt.Sprintf("message %d", p.said)})
	}
	return nil
}

func (p *playHandler) HandleClose(_ *session.Session, err error) { p.closed <- err }

// TestPrismarineClientPlays joins bedrock-protocol's client at every
// protocol the server knows to a handler that decodes everything, has it
// do what a player does in its first seconds (interact, animate,
// inventory_transaction), and checks that it stays: its next chat line is
// answered. Then the client leaves with its own Disconnect, which the
// handler and the server's "player left" line report with the client's
// reason, not as an error of the server's.
func TestPrismarineClientPlays(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	for _, p := range session.KnownProtocols() {
		t.Run(strconv.Itoa(int(p)), func(t *testing.T) {
			t.Parallel()
			var logs jsLog
			log := zerolog.New(&logs).Level(zerolog.InfoLevel)
			closed := make(chan error, 1)
			_, addr := bedrockServer(t, server.Config{
				Log: &log,
				Shutdown: server.ShutdownConfig{
					Timeout: jsShutdownTimeout,
				},
				EncryptionDisabled: true,
				NewHandler: (&sessionjoin.World{
					GameData: sessionjoin.GameData{PlayerGameMode: packet.GameTypeSpectator, PlayerPosition: mgl32.Vec3{0.5, 65.62, 0.5}},
					NewPlayer: func(_ *session.Session, j *sessionjoin.Join) (sessionjoin.Handler, error) {
						return &playHandler{join: j, closed: closed}, nil
					},
				}).NewHandler,
			})
			name := "Player" + strconv.Itoa(int(p))
			proc := startJS(t, node, addr, name, jsClients[2].argsAt(name, p)...)
			proc.expect(t, "spawn", func(ev jsResult) bool { return ev.Event == "spawn" })
			for _, line := range []string{"!play", "hello"} {
				if _, err := io.WriteString(proc.stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			proc.expect(t, "the answer after playing", func(ev jsResult) bool { return ev.Event == "text" && ev.Message == "message 1" })
			if _, err := io.WriteString(proc.stdin, "!leave\n"); err != nil {
				t.Fatal(err)
			}
			proc.expect(t, "the leave", func(ev jsResult) bool { return ev.Event == "left" })
			const reason = "client left: Client leaving"
			select {
			case err := <-closed:
				if le, ok := errors.AsType[*session.LeaveError](err); !ok || le.Message != "Client leaving" {
					t.Errorf("HandleClose: got %v, want %q", err, reason)
				}
			case <-time.After(jsLobbyWait):
				t.Fatal("the session did not end after the client left")
			}
			want := []map[string]any{{"message": "player left", "player": name, "reason": reason}}
			// The line follows HandleClose on the session's goroutine;
			// a few polls see it.
			if !eventually(jsLobbyWait, func() bool { return missingLines(logs.Bytes(), want) == nil }) {
				t.Fatalf("no %v in the server's log:\n%s", want, logs.Bytes())
			}
		})
	}
}

// jsLog is a log sink the server writes while the test reads it.
type jsLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *jsLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Bytes returns a copy of what was written.
func (l *jsLog) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// TestPrismarineREADMEProgram runs the README's handler example, built as
// a user builds it, from a config.toml with only what a loopback test
// needs (the client logs in offline), and joins bedrock-protocol's client
// at every protocol the server knows: it spawns, opens its inventory,
// swings and clicks (interact, animate, inventory_transaction) and stays,
// as the counter's answer to its next chat line shows; then it leaves,
// and the program's "player left" line gives the client's own reason.
func TestPrismarineREADMEProgram(t *testing.T) {
	node := needNode(t)
	bin := buildREADMEProgram(t)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "basalt.log")
	addr := freeUDPPort(t)
	config := fmt.Sprintf("[network]\naddress_v4 = %q\naddress_v6 = \"\"\nlan_discovery = false\nnethernet = false\n"+
		"[server]\nonline_mode = false\n[log]\nformat = \"json\"\nfile = %q\n", addr, logFile)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), jsLobbyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("stderr: %s", stderr.Bytes())
		}
	})
	readLog := func() []byte { b, _ := os.ReadFile(logFile); return b }
	waitLog := func(want []map[string]any) {
		t.Helper()
		// The program writes its log file as it goes; a few polls see
		// the line.
		if !eventually(jsLobbyWait, func() bool { return missingLines(readLog(), want) == nil }) {
			t.Fatalf("no %v in the program's log:\n%s", want, readLog())
		}
	}
	waitLog([]map[string]any{{"message": "listening"}})
	for _, p := range session.KnownProtocols() {
		name := "Reader" + strconv.Itoa(int(p))
		proc := startJS(t, node, addr, name, jsClients[2].argsAt(name, p)...)
		proc.expect(t, "spawn", func(ev jsResult) bool { return ev.Event == "spawn" })
		proc.expect(t, "the welcome", func(ev jsResult) bool { return ev.Event == "text" && strings.HasPrefix(ev.Message, "Welcome, "+name) })
		for _, line := range []string{"!play", "hello"} {
			if _, err := io.WriteString(proc.stdin, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		proc.expect(t, "the count after playing", func(ev jsResult) bool {
			return ev.Event == "text" && ev.Message == name+", that was message 1."
		})
		if _, err := io.WriteString(proc.stdin, "!leave\n"); err != nil {
			t.Fatal(err)
		}
		proc.expect(t, "the leave", func(ev jsResult) bool { return ev.Event == "left" })
		waitLog([]map[string]any{{"message": "player left", "player": name, "reason": "client left: Client leaving"}})
	}
}
