package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// proxiedPlayers is how many players join through one proxy: twice the
// per-address caps (raknet.max_connections_per_ip 16, NetherNet's 16
// negotiations and 16 offers a second per source, 8 signalling
// connections), so a cap applied to the proxy's own address fails the
// test.
const proxiedPlayers = 32

// proxiedBatch is how many of them dial at once: enough to put more than
// every per-address cap in flight, few enough that NetherNet's one-at-a-
// time answering keeps within an offer's wait on a loaded machine.
const proxiedBatch = 32

// proxiedServer starts a lobby server (offline, room for every player) on
// a loopback address free on TCP and UDP, with trusted as
// network.trusted_proxies and no PROXY protocol: the proxy sends no
// header, so its players share its address. edit changes the
// configuration before it is used.
func proxiedServer(t *testing.T, addr string, trusted []string, edit func(*config.UserConfig)) *server.Server {
	t.Helper()
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = addr
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Network.ProxyProtocol = false
	uc.Network.TrustedProxies = trusted
	uc.Server.Handler = "lobby"
	uc.Server.OnlineMode = false // gophertunnel's offline clients
	uc.Server.MaxPlayers = 2 * proxiedPlayers
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "server_guid")
	edit(&uc)
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// joinAll joins proxiedPlayers players with dial, proxiedBatch at a time,
// and fails the test unless every one spawns. The clients are closed when
// the test ends.
func joinAll(t *testing.T, dial func(ctx context.Context, name string) (*minecraft.Conn, error)) {
	t.Helper()
	var (
		mu   sync.Mutex
		errs []error
	)
	for first := 0; first < proxiedPlayers; first += proxiedBatch {
		var wg sync.WaitGroup
		for i := first; i < first+proxiedBatch; i++ {
			wg.Go(func() {
				name := fmt.Sprintf("Proxied%d", i)
				ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
				defer cancel()
				conn, err := dial(ctx, name)
				if err == nil {
					t.Cleanup(func() { _ = conn.Close() })
					err = conn.DoSpawnContext(ctx)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d players did not join through the proxy: %v", len(errs), proxiedPlayers, errors.Join(errs...))
	}
}

// TestPlayersThroughOneTrustedProxy joins 32 players on each transport
// through one proxy that sends no PROXY header, as WaterdogPE or a tunnel
// does: every player has the proxy's address, which is trusted, so no
// per-address limit counts them together.
func TestPlayersThroughOneTrustedProxy(t *testing.T) {
	t.Run("raknet", func(t *testing.T) {
		addr := bothFree(t)
		p, err := proxy.New(proxy.Opts{RemoteAddr: addr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		// The proxy reaches the server from 127.0.0.1.
		srv := proxiedServer(t, addr, []string{"127.0.0.1"}, func(uc *config.UserConfig) {
			uc.Network.NetherNet = false
			// gophertunnel connects to the port the pong advertises.
			uc.Network.PublicAddress = p.LocalAddr().String()
		})
		start := time.Now()
		network := &serialRakNet{}
		joinAll(t, func(ctx context.Context, name string) (*minecraft.Conn, error) {
			d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
			return d.DialContextNetwork(ctx, network, p.LocalAddr().String())
		})
		if n := srv.PlayerCount(); n != proxiedPlayers {
			t.Errorf("%d players, want %d", n, proxiedPlayers)
		}
		t.Logf("%d RakNet players through one proxy in %v", proxiedPlayers, time.Since(start).Round(time.Millisecond))
	})
	t.Run("nethernet", func(t *testing.T) {
		// The relay carries the signalling from 127.0.0.2, the trusted
		// address; the players' ICE reaches the server directly.
		srv := proxiedServer(t, bothFree(t), []string{"127.0.0.2"}, func(*config.UserConfig) {})
		relay := tcpRelay(t, srv.NetherNetAddr().String(), "127.0.0.2")
		start := time.Now()
		joinAll(t, func(ctx context.Context, name string) (*minecraft.Conn, error) {
			return netherNetDial(ctx, "http://"+relay, name, nil)
		})
		if n := srv.PlayerCount(); n != proxiedPlayers {
			t.Errorf("%d players, want %d", n, proxiedPlayers)
		}
		st, _ := srv.NetherNetStats()
		if st.RateLimited != 0 || st.SourceBusy != 0 || st.Busy != 0 {
			t.Errorf("NetherNet refused offers of the trusted proxy: %+v", st)
		}
		t.Logf("%d NetherNet players through one signalling relay in %v", proxiedPlayers, time.Since(start).Round(time.Millisecond))
	})
}

// serialRakNet is gophertunnel's RakNet network, go-raknet's dialer, with
// one RakNet handshake at a time: go-raknet fills a package-level cache of
// its OpenConnectionRequest1 datagrams unguarded, so handshakes run at
// once race. The players' logins and spawns still run at once.
type serialRakNet struct{ mu sync.Mutex }

func (n *serialRakNet) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return goraknet.Dialer{ErrorLog: quietLog}.DialContext(ctx, addr)
}

func (n *serialRakNet) PingContext(ctx context.Context, addr string) ([]byte, error) {
	return goraknet.Dialer{ErrorLog: quietLog}.PingContext(ctx, addr)
}

func (n *serialRakNet) Listen(string) (minecraft.NetworkListener, error) {
	return nil, errors.New("serialRakNet: dials only")
}

// quietLog discards go-raknet's log.
var quietLog = slog.New(slog.DiscardHandler)

// tcpRelay relays every TCP connection made to the address it returns
// (on 127.0.0.1) to remote, dialled from the IP from, with no PROXY
// header. It stops, and closes what it relays, when the test ends.
func tcpRelay(t *testing.T, remote, from string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: lobbyWait}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = map[net.Conn]struct{}{}
		closed bool
	)
	// track adds c to the connections to close when the test ends, or
	// closes it if the test has ended; untrack takes it out.
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			_ = c.Close()
			return
		}
		conns[c] = struct{}{}
	}
	untrack := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		delete(conns, c)
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed when the test ends
			}
			wg.Go(func() {
				defer c.Close()
				track(c)
				defer untrack(c)
				up, err := d.Dial("tcp", remote)
				if err != nil {
					return
				}
				defer up.Close()
				track(up)
				defer untrack(up)
				var half sync.WaitGroup
				half.Go(func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() })
				_, _ = io.Copy(c, up)
				_ = c.(*net.TCPConn).CloseWrite()
				half.Wait()
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
