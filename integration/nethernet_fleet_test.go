package integration

import (
	"context"
	"crypto/ecdsa"
	"path/filepath"
	"testing"

	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// fleetServer starts a lobby server with NetherNet on a loopback port,
// its identity in idFile, and returns its NetherNet address as a client
// types it.
func fleetServer(t *testing.T, idFile string) string {
	t.Helper()
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = bothFree(t)
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Network.NetherNetIDFile = idFile
	uc.Server.Handler = "lobby"
	uc.Server.OnlineMode = false // gophertunnel's offline clients
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + srv.NetherNetAddr().String()
}

// answerKey joins addr over NetherNet as name and returns the key the
// server's answer was signed with, as go-nethernet verified it.
func answerKey(t *testing.T, addr, name string) *ecdsa.PublicKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	n := &recordingNetwork{NetherNet: netherNet(nil)}
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContextNetwork(ctx, n, addr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer conn.Close()
	k := n.last.PublicKey()
	if k == nil {
		t.Fatalf("%s: the answer of %s carries no identity", name, addr)
	}
	return k
}

// TestNetherNetIdentitySharedByAFleet runs two servers with one
// network.nethernet_identity_file, as instances behind one balancer do,
// and a third with a file of its own: the two sign their answers with the
// file's key, so a player who trusted one is not asked again on the
// other; the third signs with another.
func TestNetherNetIdentitySharedByAFleet(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "nethernet_identity")
	a := fleetServer(t, shared) // creates the file
	b := fleetServer(t, shared) // reads it
	other := fleetServer(t, filepath.Join(t.TempDir(), "nethernet_identity"))

	key, created, err := nethernet.LoadIdentityKey(shared)
	if err != nil || created {
		t.Fatalf("the shared identity file: created %v, %v; want the one the first server wrote", created, err)
	}
	for _, tc := range []struct {
		name, addr string
		shared     bool
	}{
		{"first instance", a, true},
		{"second instance", b, true},
		{"another server", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := answerKey(t, tc.addr, "Steve")
			if got.Equal(&key.PublicKey) != tc.shared {
				t.Errorf("answer signed with the shared file's key: got %v, want %v", !tc.shared, tc.shared)
			}
		})
	}
}
