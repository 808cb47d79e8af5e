package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server/internal/servertest"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/df-mc/go-nethernet/discovery"
)

// With NetherNet on, the signalling answers on TCP at the game port, the
// NetherNet metrics are reported, and a refused offer is counted.
func TestNetherNetListenerAndMetrics(t *testing.T) {
	srv := startServer(t, Config{Network: NetworkConfig{AddressV4: bothFree(t)}, Metrics: MetricsConfig{Address: "127.0.0.1:0"}, NetherNet: NetherNetConfig{Enabled: true}})
	addr := srv.NetherNetAddr()
	if addr == nil {
		t.Fatal("no NetherNet listener")
	}
	if got, want := addr.String(), gameAddr(t, srv); got != want {
		t.Errorf("signalling on %s, want the game address %s over TCP", got, want)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Post("http://"+addr.String()+"/v1/join/1", "application/sdp", strings.NewReader("not an offer"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a junk offer: %d, want 400", resp.StatusCode)
	}
	mfs := scrape(t, metricsURL(t, srv, "/metrics"))
	for _, name := range netherNetMetricNames {
		if mfs[name] == nil {
			t.Errorf("no metric %s", name)
		}
	}
	if got := value(sample(t, mfs, "basalt_nethernet_refused_total", "reason", "malformed")); got != 1 {
		t.Errorf("malformed offers: %v, want 1", got)
	}
	if got := value(sample(t, mfs, "basalt_transport_sessions", "transport", "nethernet")); got != 0 {
		t.Errorf("NetherNet sessions: %v, want 0", got)
	}
}

// Without NetherNet the server opens no TCP listener.
func TestNetherNetOff(t *testing.T) {
	srv := startServer(t, Config{})
	if a := srv.NetherNetAddr(); a != nil {
		t.Errorf("NetherNetAddr = %v with NetherNet off", a)
	}
	if _, ok := srv.NetherNetStats(); ok {
		t.Error("NetherNetStats reports a listener with NetherNet off")
	}
}

// NetherNet LAN discovery, over loopback, lists the server under its
// RakNet GUID with the live player count.
func TestNetherNetLANDiscovery(t *testing.T) {
	srv := startServer(t, Config{
		Network: NetworkConfig{
			AddressV4:    bothFree(t),
			LANDiscovery: true,
			LANAddressV4: "127.0.0.1:0",
		},
		NetherNet: NetherNetConfig{
			Enabled:    true,
			LANAddress: "0.0.0.0:0",
		},
		Status: StatusConfig{
			Name: "LAN test",
		},
	})
	la := srv.NetherNetLANAddr()
	if la == nil {
		t.Fatal("no NetherNet LAN discovery")
	}
	c, err := discovery.ListenConfig{
		NetworkID:        7,
		BroadcastAddress: &net.UDPAddr{IP: net.IPv4(127, 255, 255, 255), Port: la.(*net.UDPAddr).Port},
		Log:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var data []byte
	servertest.WaitFor(t, "discovery under the GUID", 10*time.Second, func() bool {
		data = c.Responses()[uint64(srv.GUID())]
		return data != nil
	})
	var ad nethernet.Advertisement
	if err := ad.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if ad.Version != nethernet.AdvertVersion7 || ad.MOTD != "LAN test" || ad.MaxPlayers != 20 || ad.PlayerCount != 0 ||
		ad.Protocol == 0 || ad.GameVersion == "" {
		t.Errorf("advertisement %+v", ad)
	}
	_ = c.Close()

	// network.lan_discovery = false: no NetherNet LAN discovery either.
	off := startServer(t, Config{Network: NetworkConfig{AddressV4: bothFree(t)}, NetherNet: NetherNetConfig{Enabled: true, LANAddress: "0.0.0.0:0"}})
	if a := off.NetherNetLANAddr(); a != nil {
		t.Errorf("LAN discovery on %v with LANDiscovery off", a)
	}
}

// bothFree returns a loopback address whose port is free on TCP and UDP
// alike, for a server with NetherNet, whose signalling takes the game
// port's number on TCP: with port 0 the system picks a UDP port whose
// TCP twin may be taken.
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

func TestLANAddressFollowsTheGame(t *testing.T) {
	for _, tc := range []struct{ game, want string }{
		{"0.0.0.0", "0.0.0.0:7551"},
		{"127.0.0.1", "127.0.0.1:7551"},
		{"192.168.1.5", "192.168.1.5:7551"},
		{"::", "[::]:7551"},
		{"::1", "[::1]:7551"},
	} {
		if got := lanAddress(net.ParseIP(tc.game)); got != tc.want {
			t.Errorf("game on %s: LAN on %s, want %s", tc.game, got, tc.want)
		}
	}
}
