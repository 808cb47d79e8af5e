package server_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// TestZeroConfigEncrypts holds the zero value to the safe choice: a Config
// that sets only an address and a handler runs the encryption handshake,
// which gophertunnel's client sees as a ServerToClientHandshake before it
// spawns; EncryptionDisabled, spelled out, is the only way to turn it off.
func TestZeroConfigEncrypts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		disabled  bool
		handshake bool
	}{
		{"zero value", false, true},
		{"EncryptionDisabled", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Offline mode only because online mode would ask the real
			// authentication service for its keys; encryption is left
			// as the zero value has it.
			srv := server.Config{
				AuthenticationDisabled: true,
				Network: server.NetworkConfig{
					AddressV4: "127.0.0.1:0",
				},
				NewHandler:         newCounter,
				EncryptionDisabled: tc.disabled,
			}.New()
			if err := srv.Listen(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var saw atomic.Bool
			d := minecraft.Dialer{
				IdentityData: login.IdentityData{DisplayName: "Steve"},
				PacketFunc: func(h packet.Header, _ []byte, _, _ net.Addr) {
					if h.PacketID == packet.IDServerToClientHandshake {
						saw.Store(true)
					}
				},
			}
			c, err := d.DialContext(ctx, "raknet", srv.Addrs()[0].String())
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if err := c.DoSpawnContext(ctx); err != nil {
				t.Fatalf("spawn: %v", err)
			}
			if got := saw.Load(); got != tc.handshake {
				t.Errorf("ServerToClientHandshake seen: got %v, want %v", got, tc.handshake)
			}
		})
	}
}
