package integration

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// bedrockTimeout bounds every dial and ping of the Bedrock tests.
const bedrockTimeout = 10 * time.Second

// bedrockServer starts a Basalt server on a loopback port with c (LAN
// discovery off) and closes it when the test ends. It is in offline mode,
// as the offline clients of these tests need, unless c points online mode
// at a local issuer (c.Auth.DiscoveryURL): no test reaches the real
// authentication service.
func bedrockServer(t *testing.T, c server.Config) (*server.Server, string) {
	t.Helper()
	c.Network.AddressV4 = "127.0.0.1:0"
	if c.Auth.DiscoveryURL == "" {
		c.AuthenticationDisabled = true
	}
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, srv.Addrs()[0].String()
}

// bedrockDial joins addr with gophertunnel's client, offline, as name, and
// returns the error the dial ended with.
func bedrockDial(t *testing.T, addr, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bedrockTimeout)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContext(ctx, "raknet", addr)
	if err == nil {
		_ = conn.Close()
		t.Fatal("dial: got a connection, want the server to disconnect the client")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial: %v; want an answer from the server before the timeout", err)
	}
	return err
}

// TestBedrockClientGetsDisconnectMessage logs gophertunnel's client in,
// with the encryption handshake and without: the gate's message reaches it
// either way, so the handshake, the key and every encrypted batch after it
// are as the client expects.
func TestBedrockClientGetsDisconnectMessage(t *testing.T) {
	const msg = "Welcome to the test, {player}! Nothing to see yet."
	for _, encryption := range []bool{true, false} {
		t.Run("encryption "+strconv.FormatBool(encryption), func(t *testing.T) {
			_, addr := bedrockServer(t, server.Config{DisconnectMessage: msg, EncryptionDisabled: !encryption})
			err := bedrockDial(t, addr, "Steve")
			t.Logf("gophertunnel: %v", err)
			var de minecraft.DisconnectError
			if !errors.As(err, &de) {
				t.Fatalf("got %v (%T), want a minecraft.DisconnectError", err, err)
			}
			if want := strings.ReplaceAll(msg, "{player}", "Steve"); string(de) != want {
				t.Errorf("got disconnect message %q, want %q", de, want)
			}
		})
	}
}

// kicker refuses every player with a message of its own, from NewHandler.
func kicker(s *session.Session) (session.Handler, error) {
	id, _ := s.Identity()
	return nil, session.Kick("No entry for " + id.DisplayName + " on " + id.ClientData.GameVersion + ".")
}

// TestBedrockClientKicked checks a *DisconnectError from NewHandler reaches
// gophertunnel's client through an encrypted session.
func TestBedrockClientKicked(t *testing.T) {
	_, addr := bedrockServer(t, server.Config{NewHandler: kicker})
	err := bedrockDial(t, addr, "Alex")
	var de minecraft.DisconnectError
	if !errors.As(err, &de) {
		t.Fatalf("got %v (%T), want a minecraft.DisconnectError", err, err)
	}
	if want := "No entry for Alex on " + protocol.CurrentVersion + "."; string(de) != want {
		t.Errorf("got disconnect message %q, want %q", de, want)
	}
}

func TestBedrockProtocolMismatch(t *testing.T) {
	// gophertunnel speaks 2193, one of the protocols the session knows;
	// this server only lets 2169 (1.26.45) in, so it answers
	// RequestNetworkSettings with PlayStatus LoginFailed_ServerOld.
	if !slices.Contains(session.KnownProtocols(), minecraft.DefaultProtocol.ID()) {
		t.Fatalf("gophertunnel speaks %d, this test assumes one of %v", minecraft.DefaultProtocol.ID(), session.KnownProtocols())
	}
	_, addr := bedrockServer(t, server.Config{
		Status: server.StatusConfig{
			Protocol: 2169,
			Version:  "1.26.45",
		},
		AcceptedProtocols: []int32{2169},
	})
	err := bedrockDial(t, addr, "Alex")
	t.Logf("gophertunnel: %v", err)
	if !strings.Contains(err.Error(), "server outdated") {
		t.Errorf("got %v, want gophertunnel's \"server outdated\" (PlayStatus LoginFailed_ServerOld)", err)
	}
	var de minecraft.DisconnectError
	if errors.As(err, &de) {
		t.Errorf("got Disconnect %q, want PlayStatus only", de)
	}
}

// holdLogin keeps a logged-in player's session open, so a joined client
// stays online.
func holdLogin(*session.Session) (session.Handler, error) { return session.NopHandler{}, nil }

// bedrockStatus pings addr with go-raknet, as gophertunnel does, and parses
// the pong as gophertunnel's listener status does.
func bedrockStatus(t *testing.T, addr string) (minecraft.ServerStatus, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bedrockTimeout)
	defer cancel()
	pong, err := goraknet.Dialer{}.PingContext(ctx, addr)
	if err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
	return minecraft.ParsePongData(pong), string(pong)
}

func TestBedrockPingShowsStatus(t *testing.T) {
	srv, addr := bedrockServer(t, server.Config{
		Status: server.StatusConfig{
			Name:       "Basalt integration",
			LevelName:  "Test level",
			MaxPlayers: 3,
		},
		NewHandler: holdLogin,
	})
	st, pong := bedrockStatus(t, addr)
	t.Logf("pong: %s", pong)
	want := minecraft.ServerStatus{ServerName: "Basalt integration", ServerSubName: "Test level", PlayerCount: 0, MaxPlayers: 3}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	fields := strings.Split(pong, ";")
	if got, want := fields[10], strconv.Itoa(int(srv.Status().PortV4)); got != want {
		t.Errorf("pong port field: got %s, want %s", got, want)
	}
	if got, want := fields[6], strconv.FormatInt(srv.GUID(), 10); got != want {
		t.Errorf("pong GUID field: got %s, want %s", got, want)
	}

	// A gophertunnel client that logged in shows in the player count. The
	// server never finishes the login, so the dial waits until cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), bedrockTimeout)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Steve"}}
		conn, err := d.DialContext(ctx, "raknet", addr)
		if err == nil {
			_ = conn.Close()
		}
		dialed <- err
	}()
	if !eventually(bedrockTimeout, func() bool { return srv.PlayerCount() == 1 }) {
		t.Fatal("timed out waiting for the client to log in")
	}
	if st, _ := bedrockStatus(t, addr); st.PlayerCount != 1 {
		t.Errorf("with one client online: got %d players, want 1", st.PlayerCount)
	}
	cancel()
	<-dialed
}
