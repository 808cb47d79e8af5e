package integration

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
	sessionjoin "github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// spawned is a sessionjoin.Handler that does nothing: the player stays in the
// world until something ends its session.
type spawned struct{ packets.NopTypedHandler }

func (spawned) HandleSpawn(*session.Session) error { return nil }

// TestTransfer sends two players elsewhere, one with Server.Transfer and
// one with the console's transfer command: gophertunnel's client gets a
// Transfer packet with the address named, then its connection closes.
func TestTransfer(t *testing.T) {
	world := &sessionjoin.World{NewPlayer: func(*session.Session, *sessionjoin.Join) (sessionjoin.Handler, error) { return spawned{}, nil }}
	srv, addr := bedrockServer(t, server.Config{NewHandler: world.NewHandler})
	r, w := io.Pipe()
	consoleDone := make(chan error, 1)
	go func() { consoleDone <- srv.RunConsole(r, nil) }()
	t.Cleanup(func() {
		_ = w.Close()
		<-consoleDone
	})

	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	players := map[string]*minecraft.Conn{}
	for _, name := range []string{"Steve", "Alex"} {
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
		c, err := d.DialContext(ctx, "raknet", addr)
		if err != nil {
			t.Fatalf("%s: dial: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.DoSpawnContext(ctx); err != nil {
			t.Fatalf("%s: spawn: %v", name, err)
		}
		players[name] = c
	}

	if n, err := srv.Transfer("steve", "play.example.com:19133"); n != 1 || err != nil {
		t.Fatalf("Transfer: got %d, %v; want 1 player", n, err)
	}
	expectTransfer(t, players["Steve"], "play.example.com", 19133)
	if _, err := io.WriteString(w, "transfer Alex [::1]:19132\n"); err != nil {
		t.Fatal(err)
	}
	expectTransfer(t, players["Alex"], "::1", 19132)
	if _, err := srv.Transfer("Nobody", "127.0.0.1:19132"); err == nil {
		t.Error("Transfer of nobody: got nil error")
	}
}

// expectTransfer reads c until a Transfer packet, which must name host and
// port, and then until the server closes the connection.
func expectTransfer(t *testing.T, c *minecraft.Conn, host string, port uint16) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(lobbyWait))
	for {
		pk, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("waiting for a Transfer to %s:%d: %v", host, port, err)
		}
		if tr, ok := pk.(*packet.Transfer); ok {
			if tr.Address != host || tr.Port != port {
				t.Errorf("got a Transfer to %s:%d, want %s:%d", tr.Address, tr.Port, host, port)
			}
			break
		}
	}
	for {
		if _, err := c.ReadPacket(); err != nil {
			return
		}
	}
}
