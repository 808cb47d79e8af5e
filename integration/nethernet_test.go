package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// netherNetServer starts a server from config.toml's defaults (NetherNet
// on) on a loopback port, with handler, and closes it when the test ends.
// It returns the server, its RakNet address and its NetherNet address as
// a client types it, "http://127.0.0.1:port".
func netherNetServer(t *testing.T, handler string) (*server.Server, string, string) {
	t.Helper()
	return netherNetServerWith(t, handler, nil)
}

// netherNetServerWith is netherNetServer with edit, if not nil, applied
// to the Config before the server starts.
func netherNetServerWith(t *testing.T, handler string, edit func(*server.Config)) (*server.Server, string, string) {
	t.Helper()
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = bothFree(t)
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Server.Handler = handler
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if !c.NetherNet.Enabled {
		t.Fatal("network.nethernet is off by default")
	}
	c.AuthenticationDisabled = true // gophertunnel's offline clients
	if edit != nil {
		edit(&c)
	}
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	nn := srv.NetherNetAddr()
	if nn == nil {
		t.Fatal("no NetherNet listener")
	}
	raknetAddr := srv.Addrs()[0].String()
	if _, p, _ := net.SplitHostPort(raknetAddr); !strings.HasSuffix(nn.String(), ":"+p) {
		t.Errorf("signalling on %v, want the game port %s", nn, p)
	}
	return srv, raknetAddr, "http://" + nn.String()
}

// netherNet is gophertunnel's NetherNet network as a client on loopback
// uses it: HTTP signalling (go-nethernet's endpoint client) and ICE with
// loopback candidates only.
func netherNet(id *gonn.Identity) minecraft.NetherNet {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return minecraft.NetherNet{
		Signaling: endpoint.ClientConfig{
			HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: lobbyWait},
			Logger:     quiet,
		}.New(),
		Dialer: gonn.Dialer{API: webrtc.NewAPI(webrtc.WithSettingEngine(se)), Log: quiet, Identity: id},
		Log:    quiet,
	}
}

// netherNetDial dials addr over NetherNet with gophertunnel, offline, as
// name.
func netherNetDial(ctx context.Context, addr, name string, id *gonn.Identity) (*minecraft.Conn, error) {
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	return d.DialContextNetwork(ctx, netherNet(id), addr)
}

func TestNetherNetGate(t *testing.T) {
	_, _, addr := netherNetServer(t, "gate")
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	conn, err := netherNetDial(ctx, addr, "Steve", nil)
	if err == nil {
		_ = conn.Close()
		t.Fatal("the gate let the player in")
	}
	var de minecraft.DisconnectError
	want := strings.ReplaceAll(config.DefaultUserConfig().Server.DisconnectMessage, "{player}", "Steve")
	if !errors.As(err, &de) || string(de) != want {
		t.Fatalf("got %v, want the gate's message %q", err, want)
	}
}

func TestNetherNetAndRakNetInOneLobby(t *testing.T) {
	srv, raknetAddr, nnAddr := netherNetServer(t, "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()

	// Both join at once, one over each transport.
	type joined struct {
		conn *minecraft.Conn
		err  error
	}
	nnCh, rkCh := make(chan joined, 1), make(chan joined, 1)
	go func() {
		c, err := netherNetDial(ctx, nnAddr, "Steve", nil)
		if err == nil {
			err = c.DoSpawnContext(ctx)
		}
		nnCh <- joined{c, err}
	}()
	go func() {
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Alex"}}
		c, err := d.DialContext(ctx, "raknet", raknetAddr)
		if err == nil {
			err = c.DoSpawnContext(ctx)
		}
		rkCh <- joined{c, err}
	}()
	nj, rj := <-nnCh, <-rkCh
	for _, j := range []joined{nj, rj} {
		if j.conn != nil {
			t.Cleanup(func() { _ = j.conn.Close() })
		}
	}
	if nj.err != nil {
		t.Fatalf("NetherNet join: %v", nj.err)
	}
	if rj.err != nil {
		t.Fatalf("RakNet join: %v", rj.err)
	}
	steve, alex := nj.conn, rj.conn
	// ICE ran on the game's UDP socket, shared with RakNet: one UDP port.
	_, gamePort, _ := net.SplitHostPort(raknetAddr)
	if a, ok := steve.RemoteAddr().(*gonn.Addr); !ok || a.SelectedCandidate == nil ||
		strconv.Itoa(int(a.SelectedCandidate.Port)) != gamePort {
		t.Errorf("NetherNet peer at %v, want ICE on the game port %s", steve.RemoteAddr(), gamePort)
	}
	if gm := steve.GameData().PlayerGameMode; gm != packet.GameTypeSpectator {
		t.Errorf("NetherNet player: game mode %d, want spectator", gm)
	}
	if n := srv.PlayerCount(); n != 2 {
		t.Errorf("%d players, want 2", n)
	}
	for name, c := range map[string]*minecraft.Conn{"Steve": steve, "Alex": alex} {
		if err := c.WritePacket(&packet.CommandRequest{
			CommandLine:   "/list",
			CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
		}); err != nil {
			t.Fatal(err)
		}
		if got := lobbyText(t, c, "in the lobby:"); !strings.HasSuffix(got, ": Alex, Steve") {
			t.Errorf("%s: /list: got %q, want both names", name, got)
		}
	}
	var transports []string
	for _, s := range srv.Sessions() {
		transports = append(transports, s.Transport().Name)
	}
	if len(transports) != 2 || transports[0] == transports[1] {
		t.Errorf("session transports %v, want raknet and nethernet", transports)
	}
	st, _ := srv.NetherNetStats()
	if st.Accepted != 1 || st.Open != 1 {
		t.Errorf("NetherNet stats %+v, want 1 accepted and open", st)
	}
}

func TestNetherNetLoginNotBoundToTransportKey(t *testing.T) {
	srv, _, addr := netherNetServer(t, "lobby")
	// The transport proves this key; gophertunnel's Login carries a key
	// of its own, as a replayed Login would.
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := gonn.GenerateServerIdentity(k, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	conn, err := netherNetDial(ctx, addr, "Mallory", id)
	if err == nil {
		_ = conn.Close()
		t.Fatal("a Login not bound to the transport's key was let in")
	}
	var de minecraft.DisconnectError
	if !errors.As(err, &de) || string(de) != "Not authenticated." {
		t.Fatalf("got %v, want the not-authenticated disconnection", err)
	}
	if n := srv.PlayerCount(); n != 0 {
		t.Errorf("%d players, want 0", n)
	}
}

func TestNetherNetStatus(t *testing.T) {
	_, _, addr := netherNetServer(t, "lobby")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: lobbyWait}).Get(addr + "/v1/join")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"name":"Basalt"`) || !strings.Contains(string(b), `"players":0`) {
		t.Errorf("GET /v1/join: %d %s", resp.StatusCode, b)
	}
}

// A NetherNet player whose peer connection goes away without a word frees
// its slot, and nothing the session or the transport started outlives it.
func TestNetherNetPeerGoneNoLeak(t *testing.T) {
	leaktest.Check(t, leaktest.Module, "github.com/sandertv/", "github.com/df-mc/go-nethernet", "github.com/pion/")
	srv, _, addr := netherNetServer(t, "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	n := &recordingNetwork{NetherNet: netherNet(nil)}
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Steve"}}
	conn, err := d.DialContextNetwork(ctx, n, addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.DoSpawnContext(ctx); err != nil {
		_ = conn.Close()
		t.Fatal(err)
	}
	if n := srv.PlayerCount(); n != 1 {
		t.Errorf("%d players, want 1", n)
	}
	// Close the peer connection under the game connection: no
	// Disconnect, the data channels and SCTP just end.
	if err := n.last.Close(); err != nil {
		t.Logf("close peer connection: %v", err)
	}
	if !poll.Until(lobbyWait, 10*time.Millisecond, func() bool { return srv.PlayerCount() == 0 && len(srv.Sessions()) == 0 }) {
		t.Fatalf("%d players, %d sessions %v after the peer went away", srv.PlayerCount(), len(srv.Sessions()), lobbyWait)
	}
	if st, _ := srv.NetherNetStats(); st.Open != 0 {
		t.Errorf("%d NetherNet connections open, want 0", st.Open)
	}
	_ = conn.Close()
	_ = srv.Close()
}

// recordingNetwork is gophertunnel's NetherNet network keeping the peer
// connection it dialled last.
type recordingNetwork struct {
	minecraft.NetherNet
	last *gonn.Conn
}

func (n *recordingNetwork) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	c, err := n.NetherNet.DialContext(ctx, addr)
	if err == nil {
		n.last = c.(*gonn.Conn)
	}
	return c, err
}

// bothFree returns a loopback address whose port is free on TCP and UDP
// alike: NetherNet's signalling takes the game port's number on TCP, and
// with port 0 the system picks a UDP port whose TCP twin may be taken.
func bothFree(t *testing.T) string {
	t.Helper()
	for range 20 {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := tl.Addr().String()
		ul, err := net.ListenPacket("udp", addr)
		_ = tl.Close()
		if err == nil {
			_ = ul.Close()
			return addr
		}
	}
	t.Fatal("no port free on both TCP and UDP")
	return ""
}
