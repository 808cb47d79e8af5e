package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/basaltmc/basalt/session"
)

// The JavaScript clients are PrismarineJS bedrock-protocol (pinned in
// js/package-lock.json) over each of its RakNet backends: jsp-raknet and
// rust-raknet (as raknet-node) speak RakNet protocol 10 and read
// OpenConnectionReply1 as if it had no cookie; raknet-native is the C++
// RakNet and reads one.

// jsDir is the Node.js project holding the client script.
const jsDir = "js"

// jsRunTimeout bounds one run of the client script, Node's start included.
const jsRunTimeout = 15 * time.Second

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
		if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "bedrock-protocol")); err == nil {
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
	return node
}

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
	args := []string{"--backend=" + c.backend, "--username=" + name, "--protocol=" + strconv.Itoa(int(session.CurrentProtocol))}
	if c.raknet != "" {
		args = append(args, "--raknet="+c.raknet)
	}
	return args
}

func TestPrismarineClientGetsDisconnectMessage(t *testing.T) {
	node := needNode(t)
	t.Parallel()
	const msg = "Welcome, {player}! Nothing to see yet."
	for i, c := range jsClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := "Steve" + strconv.Itoa(i)
			_, addr := bedrockServer(t, server.Config{DisconnectMessage: msg, ShutdownTimeout: jsShutdownTimeout})
			var h handshakeLog
			res := runJS(t, node, proxied(t, addr, &h), c.args(name)...)
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
	_, addr := bedrockServer(t, server.Config{DisconnectMessage: msg, Encryption: true, ShutdownTimeout: jsShutdownTimeout})
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
			_, addr := bedrockServer(t, server.Config{RakNetProtocols: []byte{11}, ShutdownTimeout: jsShutdownTimeout})
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
