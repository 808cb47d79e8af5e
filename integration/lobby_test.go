package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// lobbyWait bounds every dial and wait of the lobby tests.
const lobbyWait = 10 * time.Second

// lobbyTimeout is the RakNet timeout of the lobby server: go-raknet's client
// pings every 500 ms, so a connection outlives many of these only if the
// keepalives on both sides work.
const lobbyTimeout = time.Second

// lobbyServer starts a server from config.toml's defaults with
// server.handler = "lobby" on a loopback port, and closes it when the test
// ends (a second Close does nothing).
func lobbyServer(t *testing.T, greeting string) (*server.Server, string) {
	t.Helper()
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = "127.0.0.1:0"
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Server.Handler = "lobby"
	uc.Server.OnlineMode = false // gophertunnel's offline clients
	uc.Server.Greeting = greeting
	uc.Server.ShutdownMessage = "The lobby is closing, bye!"
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	uc.RakNet.Timeout = lobbyTimeout.String()
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if c.Handler != server.HandlerLobby {
		t.Fatalf("server.handler = \"lobby\": Config.Handler %q, want %q", c.Handler, server.HandlerLobby)
	}
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, srv.Addrs()[0].String()
}

// lobbyJoin joins addr with gophertunnel's client, offline, as name, and
// completes the spawn: StartGame, PlayStatus PlayerSpawn, then
// SetLocalPlayerAsInitialised from the client.
func lobbyJoin(t *testing.T, addr, name string) *minecraft.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContext(ctx, "raknet", addr)
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.DoSpawnContext(ctx); err != nil {
		t.Fatalf("%s: spawn: %v", name, err)
	}
	if gm := conn.GameData().PlayerGameMode; gm != packet.GameTypeSpectator {
		t.Errorf("%s: game mode %d, want spectator", name, gm)
	}
	return conn
}

// lobbyText reads from conn until a Text packet containing substr.
func lobbyText(t *testing.T, conn *minecraft.Conn, substr string) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(lobbyWait))
	defer conn.SetReadDeadline(time.Time{})
	for {
		pk, err := conn.ReadPacket()
		if err != nil {
			t.Fatalf("waiting for chat with %q: %v", substr, err)
		}
		if txt, ok := pk.(*packet.Text); ok && strings.Contains(txt.Message, substr) {
			return txt.Message
		}
	}
}

func TestLobby(t *testing.T) {
	srv, addr := lobbyServer(t, "Hello {player}, this is the lobby.")

	steve := lobbyJoin(t, addr, "Steve")
	if got := lobbyText(t, steve, "Hello"); got != "Hello Steve, this is the lobby." {
		t.Errorf("greeting: got %q", got)
	}

	// Idle for three RakNet timeouts: the connection must stay up, with no
	// packet but keepalives.
	_ = steve.SetReadDeadline(time.Now().Add(3 * lobbyTimeout))
	for {
		_, err := steve.ReadPacket()
		if err == nil {
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle connection ended: %v", err)
		}
		break
	}
	_ = steve.SetReadDeadline(time.Time{})
	if n := srv.PlayerCount(); n != 1 {
		t.Errorf("after idling: %d players, want 1", n)
	}

	alex := lobbyJoin(t, addr, "Alex")
	lobbyText(t, alex, "Hello Alex")
	lobbyText(t, steve, "Alex joined the lobby")

	if err := steve.WritePacket(&packet.CommandRequest{
		CommandLine:   "/list",
		CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
	}); err != nil {
		t.Fatal(err)
	}
	if got := lobbyText(t, steve, "in the lobby:"); !strings.HasSuffix(got, ": Alex, Steve") {
		t.Errorf("/list: got %q, want both names", got)
	}

	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for name, c := range map[string]*minecraft.Conn{"Steve": steve, "Alex": alex} {
		_ = c.SetReadDeadline(time.Now().Add(lobbyWait))
		for {
			pk, err := c.ReadPacket()
			if err != nil {
				var de minecraft.DisconnectError
				if !errors.As(err, &de) || string(de) != "The lobby is closing, bye!" {
					t.Errorf("%s: got %v, want the shutdown message", name, err)
				}
				break
			}
			// The lobby closes before the server disconnects anyone, so
			// nobody is told the others left.
			if txt, ok := pk.(*packet.Text); ok && strings.Contains(txt.Message, "left the lobby") {
				t.Errorf("%s: got %q during the shutdown", name, txt.Message)
			}
		}
	}
}

func TestLobbyConfigKey(t *testing.T) {
	uc := config.DefaultUserConfig()
	if uc.Server.Handler != "gate" {
		t.Errorf("default server.handler %q, want gate", uc.Server.Handler)
	}
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	if c, err := uc.Config(nil); err != nil || c.NewHandler != nil || c.Handler != server.HandlerGate {
		t.Errorf("gate: NewHandler set %v, Handler %q, err %v; want the server's gate", c.NewHandler != nil, c.Handler, err)
	}
	for _, tc := range []struct{ handler, greeting, key string }{
		{"world", "hi", "server.handler"},
		{"lobby", "hi {name}", "server.greeting"},
	} {
		uc.Server.Handler, uc.Server.Greeting = tc.handler, tc.greeting
		err := uc.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("handler %q, greeting %q: got %v, want an error naming %s", tc.handler, tc.greeting, err, tc.key)
		}
	}
}
