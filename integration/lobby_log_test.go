package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/session"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// stallNetwork is gophertunnel's RakNet network whose connections send
// only their first stallAfter batches and silently drop the rest, so a
// client goes quiet in the middle of its join while RakNet keeps the
// connection alive.
const stallNetwork = "raknet-stall"

// stallAfter is how many batches a stalling client sends: with the
// encryption handshake, RequestNetworkSettings, Login and
// ClientToServerHandshake. Its answer to ResourcePacksInfo is dropped.
const stallAfter = 3

func init() {
	minecraft.RegisterNetwork(stallNetwork, func(l *slog.Logger) minecraft.Network {
		return stallingRakNet{l: l}
	})
}

// stallingRakNet dials with go-raknet, as gophertunnel's RakNet network.
type stallingRakNet struct {
	minecraft.RakNet // for Listen, unused
	l                *slog.Logger
}

func (n stallingRakNet) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	c, err := goraknet.Dialer{ErrorLog: n.l}.DialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &stallingConn{Conn: c}, nil
}

type stallingConn struct {
	net.Conn
	writes atomic.Int32
}

func (n stallingRakNet) PingContext(ctx context.Context, addr string) ([]byte, error) {
	return goraknet.Dialer{ErrorLog: n.l}.PingContext(ctx, addr)
}

func (c *stallingConn) Write(b []byte) (int, error) {
	if c.writes.Add(1) > stallAfter {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// TestLobbyLifecycleLogs runs the lobby through the server, with
// config.toml's [log] defaults (level info) but JSON to a file, and checks
// the info lines of each player lifecycle event: a player who joins and
// who leaves (with the reason), one who stalls while joining (with the phase), and
// a client at each side of the known protocols (with its protocol).
func TestLobbyLifecycleLogs(t *testing.T) {
	uc := config.DefaultUserConfig()
	if uc.Log.Level != "info" {
		t.Fatalf("log.level defaults to %q; this test checks the lines of info", uc.Log.Level)
	}
	uc.Network.AddressV4 = "127.0.0.1:0"
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Server.Handler = "lobby"
	uc.Server.OnlineMode = false // gophertunnel's offline clients
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	uc.Log.Format = "json"
	uc.Log.File = filepath.Join(t.TempDir(), "basalt.log")
	log, closer, err := uc.Logger()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closer.Close() })
	c, err := uc.Config(log)
	if err != nil {
		t.Fatal(err)
	}
	c.Lobby.JoinTimeout = 500 * time.Millisecond
	c.Shutdown.Timeout = jsShutdownTimeout
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	addr := srv.Addrs()[0].String()

	// Joins, then leaves by closing its connection.
	steve := lobbyJoin(t, addr, "Steve")
	lobbyText(t, steve, "Steve")
	_ = steve.Close()

	// Stalls after the encryption handshake: the lobby times it out.
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Slow"}}
	if conn, err := d.DialContext(ctx, stallNetwork, addr); err == nil {
		_ = conn.Close()
		t.Error("Slow: joined, want the join timed out")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Slow: %v; want a disconnect after the join timeout", err)
	}

	// One protocol below the known range, one above (2192 and 2226 today).
	known := session.KnownProtocols()
	older, newer := known[0]-1, known[len(known)-1]+1
	for _, p := range []int32{older, newer} {
		rc := dial(t, raknet.Dialer{}, addr, lobbyWait)
		req := []byte{0xfe, 0x06, 0xc1, 0x01, byte(p >> 24), byte(p >> 16), byte(p >> 8), byte(p)}
		if _, err := rc.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := readWithin(rc, lobbyWait); err != nil {
			t.Fatalf("protocol %d: no PlayStatus: %v", p, err)
		}
		_ = rc.Close()
	}

	want := []map[string]any{
		{"message": "player joined", "player": "Steve", "protocol": 2193.0},
		{"message": "player left the lobby", "player": "Steve", "reason": nil},
		{"message": "player left while joining the lobby", "player": "Slow", "reason": "timed out while joining", "phase": "packs", "timeout": "500ms"},
		{"message": "refused client protocol", "protocol": float64(older), "status": "LoginFailed_ClientOld", "raddr": nil},
		{"message": "refused client protocol", "protocol": float64(newer), "status": "LoginFailed_ServerOld", "raddr": nil},
	}
	var b []byte
	var missing map[string]any
	complete := func() bool {
		var err error
		if b, err = os.ReadFile(uc.Log.File); err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if bytes.Count(l, []byte(`"player":`)) > 1 {
				t.Fatalf("line names the player twice: %s", l)
			}
		}
		missing = missingLines(b, want)
		return missing == nil
	}
	if !eventually(lobbyWait, complete) {
		t.Fatalf("log at info lacks a line with %v:\n%s", missing, b)
	}
}

// missingLines returns the first of want that no JSON line of log matches:
// every field of it present with its value, or with any non-empty value
// where the value is nil. Only info lines count.
func missingLines(log []byte, want []map[string]any) map[string]any {
	var lines []map[string]any
	for _, l := range bytes.Split(log, []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m["level"] == "info" {
			lines = append(lines, m)
		}
	}
next:
	for _, w := range want {
		for _, m := range lines {
			if matches(m, w) {
				continue next
			}
		}
		return w
	}
	return nil
}

func matches(m, w map[string]any) bool {
	for k, v := range w {
		got, ok := m[k]
		if !ok {
			return false
		}
		if v == nil {
			if s, isStr := got.(string); isStr && strings.TrimSpace(s) == "" {
				return false
			}
			continue
		}
		if got != v {
			return false
		}
	}
	return true
}
