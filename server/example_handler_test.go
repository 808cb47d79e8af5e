package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The README's handler does what it says for a real client: each player
// spawns in a world of their own, and their own count of what they said
// comes back to them alone, from the state in their handler.
func TestExampleHandler(t *testing.T) {
	srv := server.Config{AuthenticationDisabled: true, Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}, NewHandler: newCounter}.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	addr := srv.Addrs()[0].String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	join := func(name string) *minecraft.Conn {
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
		c, err := d.DialContext(ctx, "raknet", addr)
		if err != nil {
			t.Fatalf("%s: dial: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.DoSpawnContext(ctx); err != nil {
			t.Fatalf("%s: spawn: %v", name, err)
		}
		return c
	}
	// text reads c's Text packets until one containing substr, and
	// returns the raw ones it saw on the way.
	text := func(c *minecraft.Conn, substr string) (seen []string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			pk, err := c.ReadPacket()
			if err != nil {
				t.Fatalf("waiting for %q: %v (saw %q)", substr, err, seen)
			}
			if txt, ok := pk.(*packet.Text); ok {
				seen = append(seen, txt.Message)
				if strings.Contains(txt.Message, substr) {
					return seen
				}
			}
		}
	}
	say := func(c *minecraft.Conn, name, msg string) {
		t.Helper()
		if err := c.WritePacket(&packet.Text{TextType: packet.TextTypeChat, SourceName: name, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}

	steve := join("Steve")
	text(steve, "Welcome, Steve!")
	alex := join("Alex")
	text(alex, "Welcome, Alex!")
	for i, msg := range []string{"one", "two"} {
		say(steve, "Steve", msg)
		want := []string{"Steve, that was message 1.", "Steve, that was message 2."}[i]
		text(steve, want)
	}
	say(alex, "Alex", "hi")
	// Alex's count is Alex's own, and Steve's counts never reached Alex.
	for _, m := range text(alex, "Alex, that was message 1.") {
		if strings.Contains(m, "Steve, that was") {
			t.Errorf("Alex saw Steve's count %q", m)
		}
	}
}
