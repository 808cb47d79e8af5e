package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
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

// answerRecorder is an http.RoundTripper that keeps the body of every
// signalling answer (the response to a POST) it carries; it is safe for
// concurrent use.
type answerRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	last string
}

func (r *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.last = string(b)
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// answer returns the last answer recorded.
func (r *answerRecorder) answer() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// recordingNetherNet is netherNet(nil) with its signalling's answers
// recorded, and the peer connection dialled last kept.
func recordingNetherNet(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*recordingNetwork, *answerRecorder) {
	rec := &answerRecorder{base: &http.Transport{DisableKeepAlives: true, DialContext: dial}}
	n := netherNet(nil)
	n.Signaling = endpoint.ClientConfig{
		HTTPClient: &http.Client{Transport: rec, Timeout: lobbyWait},
		Logger:     slog.New(slog.DiscardHandler),
	}.New()
	return &recordingNetwork{NetherNet: n}, rec
}

// candidateAddrs returns the "IP:port" of every candidate of an answer.
func candidateAddrs(answer string) []string {
	var addrs []string
	for line := range strings.SplitSeq(answer, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "a=candidate:") {
			continue
		}
		// a=candidate:<foundation> <component> <transport> <priority> <IP> <port> typ ...
		f := strings.Fields(line)
		if len(f) >= 6 {
			addrs = append(addrs, net.JoinHostPort(f[4], f[5]))
		}
	}
	return addrs
}

// TestNetherNetAdvertiseAddress checks what a NetherNet answer offers
// beside its host candidates: network.nethernet_advertise_address when it
// is set, the public address's IP otherwise; the pong keeps advertising
// the public address's port either way.
func TestNetherNetAdvertiseAddress(t *testing.T) {
	for _, tc := range []struct {
		name          string
		advertise     bool
		wantIP, notIP string
	}{
		{"advertise address", true, "127.0.0.7", "127.0.0.9"},
		{"public address alone", false, "127.0.0.9", "127.0.0.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := bothFree(t)
			_, port, _ := net.SplitHostPort(addr)
			uc := config.DefaultUserConfig()
			uc.Network.AddressV4 = addr
			uc.Network.AddressV6 = ""
			uc.Network.LANDiscovery = false
			uc.Network.PublicAddress = "127.0.0.9:19132" // a balancer's
			if tc.advertise {
				uc.Network.NetherNetAdvertise = "127.0.0.7:" + port
			}
			uc.Server.OnlineMode = false
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

			n, rec := recordingNetherNet(nil)
			ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
			defer cancel()
			if conn, err := n.DialContext(ctx, "http://"+srv.NetherNetAddr().String()); err == nil {
				_ = conn.Close()
			}
			cands := candidateAddrs(rec.answer())
			var want bool
			for _, a := range cands {
				host, p, _ := net.SplitHostPort(a)
				// Every candidate is on the ICE socket, the game port:
				// the one port a firewall opens.
				if p != port {
					t.Errorf("the answer offers %s, not on the game port %s: %v", a, port, cands)
				}
				want = want || host == tc.wantIP
				if host == tc.notIP {
					t.Errorf("the answer offers %s: %v", a, cands)
				}
			}
			if !want {
				t.Errorf("the answer offers no candidate on %s: %v", tc.wantIP, cands)
			}
			pong, err := raknet.Dialer{}.PingContext(ctx, addr)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(pong), ";19132;") {
				t.Errorf("pong %q does not advertise the public address's port 19132", pong)
			}
		})
	}
}
