package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	basalt "github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// playerImpl names a Bedrock server of the players phase.
type playerImpl string

const (
	// playerBasalt is Basalt's server with its lobby handler.
	playerBasalt playerImpl = "basalt"
	// playerGophertunnel is gophertunnel's listener, spawning players
	// with StartGame: the anchor.
	playerGophertunnel playerImpl = "gophertunnel"
)

// transport names a Bedrock transport.
type transport string

const (
	transportRakNet    transport = "raknet"
	transportNetherNet transport = "nethernet"
)

func parsePlayerImpl(s string) (playerImpl, error) {
	switch playerImpl(s) {
	case playerBasalt, playerGophertunnel:
		return playerImpl(s), nil
	}
	return "", fmt.Errorf("unknown -impl %q: want basalt or gophertunnel", s)
}

func parseTransport(s string) (transport, error) {
	switch transport(s) {
	case transportRakNet, transportNetherNet:
		return transport(s), nil
	}
	return "", fmt.Errorf("unknown transport %q: want raknet or nethernet", s)
}

// playerServer is a Bedrock server the players phase measures.
type playerServer interface {
	// addr is what a client dials: "127.0.0.1:port" for RakNet,
	// "http://127.0.0.1:port" for NetherNet.
	addr() string
	// players returns how many players are in the world.
	players() int
	Close() error
}

// startPlayerServer starts a server of im serving t on loopback.
func startPlayerServer(im playerImpl, t transport, dir string) (playerServer, error) {
	if im == playerBasalt {
		return startBasaltLobby(t, dir)
	}
	return startGophertunnel(t)
}

// basaltLobby is Basalt's server with the lobby handler, from the
// defaults of config.toml but for offline clients and room for them.
type basaltLobby struct {
	srv *basalt.Server
	a   string
}

func startBasaltLobby(t transport, dir string) (*basaltLobby, error) {
	uc := config.DefaultUserConfig()
	uc.Network.AddressV4 = "127.0.0.1:0"
	uc.Network.AddressV6 = ""
	uc.Network.LANDiscovery = false
	uc.Network.Query = false
	uc.Network.NetherNet = t == transportNetherNet
	uc.Network.NetherNetIDFile = ""
	uc.Server.Handler = "lobby"
	uc.Server.OnlineMode = false // gophertunnel's offline clients
	uc.Server.MaxPlayers = 100000
	uc.Server.GUIDFile = filepath.Join(dir, "server_guid")
	uc.Server.AllowlistFile = filepath.Join(dir, "allowlist.json")
	uc.Server.BansFile = filepath.Join(dir, "bans.json")
	c, err := uc.Config(nil)
	if err != nil {
		return nil, err
	}
	// NetherNet signals on TCP at the game port's number, which the
	// system picked for UDP and may be taken: try a few.
	var srv *basalt.Server
	for range 5 {
		srv = c.New()
		if err = srv.Listen(); err == nil {
			break
		}
		_ = srv.Close()
	}
	if err != nil {
		return nil, err
	}
	b := &basaltLobby{srv: srv, a: srv.Addrs()[0].String()}
	if t == transportNetherNet {
		nn := srv.NetherNetAddr()
		if nn == nil {
			_ = srv.Close()
			return nil, errors.New("basalt: no NetherNet listener")
		}
		b.a = "http://" + nn.String()
	}
	return b, nil
}

func (b *basaltLobby) addr() string { return b.a }
func (b *basaltLobby) players() int { return b.srv.PlayerCount() }
func (b *basaltLobby) Close() error { return b.srv.Close() }

// gtServer is gophertunnel's listener. Like the lobby, it greets a
// player who spawned, tells the others, and answers /list; every other
// packet is read and dropped.
type gtServer struct {
	l    *minecraft.Listener
	http *http.Server // NetherNet signalling; nil over RakNet
	a    string
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns map[*minecraft.Conn]string // players in the world, by name
}

func startGophertunnel(t transport) (*gtServer, error) {
	quiet := slog.New(slog.DiscardHandler)
	cfg := minecraft.ListenConfig{AuthenticationDisabled: true, ErrorLog: quiet}
	s := &gtServer{conns: make(map[*minecraft.Conn]string)}
	var err error
	switch t {
	case transportRakNet:
		if s.l, err = cfg.Listen("raknet", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		s.a = s.l.Addr().String()
	case transportNetherNet:
		h := endpoint.HandlerConfig{Logger: quiet}.New()
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		n := minecraft.NetherNet{Signaling: h, Log: quiet, ListenConfig: gonn.ListenConfig{
			API: loopbackAPI(), AllowAnonymous: true, DisableTrickleICE: true, Log: quiet,
		}}
		if s.l, err = cfg.ListenNetwork(n, ""); err != nil {
			_ = tl.Close()
			return nil, err
		}
		s.http = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = s.http.Serve(tl) }()
		s.a = "http://" + tl.Addr().String()
	}
	s.wg.Go(s.accept)
	return s, nil
}

func (s *gtServer) addr() string { return s.a }

func (s *gtServer) players() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *gtServer) accept() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.handle(c.(*minecraft.Conn)) })
	}
}

func (s *gtServer) handle(c *minecraft.Conn) {
	defer c.Close()
	name := c.IdentityData().DisplayName
	var spawned atomic.Bool
	s.wg.Go(func() {
		if err := c.StartGame(minecraft.GameData{
			WorldName:      "Bedrock level",
			PlayerGameMode: packet.GameTypeSpectator,
			WorldGameMode:  packet.GameTypeSpectator,
			Time:           6000,
		}); err != nil {
			_ = c.Close()
			return
		}
		spawned.Store(true)
		s.enter(c, name)
	})
	defer func() {
		s.mu.Lock()
		_, in := s.conns[c]
		delete(s.conns, c)
		others := s.others(c)
		s.mu.Unlock()
		if in {
			s.broadcast(others, systemMessage(name+" left the lobby"))
		}
	}()
	// gophertunnel's listener arms its wait for RequestChunkRadius only
	// after it has flushed StartGame, so a client that answers sooner has
	// it deferred to ReadPacket, and the join stalls: a ReadPacket already
	// waiting does not see a packet deferred while the player spawns.
	// Until the player is in the world, reads poll the deferred packets,
	// and a RequestChunkRadius is answered as the listener would; the
	// client's SetLocalPlayerAsInitialised then completes StartGame.
	joining := true
	for {
		if joining {
			if joining = !spawned.Load(); joining {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
			} else {
				_ = c.SetReadDeadline(time.Time{})
			}
		}
		pk, err := c.ReadPacket()
		if err != nil {
			if joining && errors.Is(err, context.DeadlineExceeded) {
				continue
			}
			return
		}
		switch pk := pk.(type) {
		case *packet.RequestChunkRadius:
			if spawned.Load() {
				continue
			}
			_ = c.WritePacket(&packet.ChunkRadiusUpdated{ChunkRadius: pk.ChunkRadius})
			_ = c.WritePacket(&packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn})
			_ = c.WritePacket(&packet.CreativeContent{})
			_ = c.Flush()
		case *packet.CommandRequest:
			if pk.CommandLine != "/list" {
				continue
			}
			s.mu.Lock()
			names := slices.Sorted(maps.Values(s.conns))
			s.mu.Unlock()
			_ = c.WritePacket(systemMessage(fmt.Sprintf("%d players in the lobby: %s", len(names), strings.Join(names, ", "))))
		}
	}
}

// enter greets a player who spawned and tells the others.
func (s *gtServer) enter(c *minecraft.Conn, name string) {
	s.mu.Lock()
	others := s.others(c)
	s.conns[c] = name
	s.mu.Unlock()
	s.broadcast(others, systemMessage(name+" joined the lobby"))
	_ = c.WritePacket(systemMessage("Hello " + name + ", this is the lobby."))
	_ = c.Flush()
}

// others returns every player but c; s.mu is held.
func (s *gtServer) others(c *minecraft.Conn) []*minecraft.Conn {
	out := make([]*minecraft.Conn, 0, len(s.conns))
	for o := range s.conns {
		if o != c {
			out = append(out, o)
		}
	}
	return out
}

func (s *gtServer) broadcast(to []*minecraft.Conn, pk packet.Packet) {
	for _, c := range to {
		_ = c.WritePacket(pk)
	}
}

func systemMessage(msg string) *packet.Text {
	return &packet.Text{TextType: packet.TextTypeSystem, Message: msg}
}

func (s *gtServer) Close() error {
	err := s.l.Close()
	if s.http != nil {
		_ = s.http.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(handlerWait):
	}
	return err
}

// cmdPlayerServer is `bench player-server`: a Bedrock server for the
// players phase. It prints "listening ADDR" once it serves and answers
// control commands on stdin until it closes: "stats" (goroutines and
// players), "heap", "profile PATH", "profile stop", "goroutines PATH"
// (every goroutine's stack, grouped, written to PATH) and "heapprofile
// PATH" (the live heap's profile after a collection).
func cmdPlayerServer(args []string) error {
	fs := flag.NewFlagSet("player-server", flag.ContinueOnError)
	implFlag := fs.String("impl", "basalt", "basalt or gophertunnel")
	tFlag := fs.String("transport", "raknet", "raknet or nethernet")
	if err := fs.Parse(args); err != nil {
		return err
	}
	im, err := parsePlayerImpl(*implFlag)
	if err != nil {
		return err
	}
	t, err := parseTransport(*tFlag)
	if err != nil {
		return err
	}
	if v := envInt("BENCH_SERVER_GOGC", 0); v != 0 {
		debug.SetGCPercent(v)
	}
	dir, err := os.MkdirTemp("", "bench-players-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := startPlayerServer(im, t, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	var prof profiler
	defer prof.stop()
	fmt.Println("listening " + s.addr())
	return playerControl(os.Stdin, os.Stdout, s, &prof)
}

// playerControl answers control commands from r on w until r ends.
func playerControl(r io.Reader, w io.Writer, s playerServer, prof *profiler) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line string
		switch cmd := sc.Text(); cmd {
		case "stats":
			line = fmt.Sprintf("stats goroutines=%d conns=%d", runtime.NumGoroutine(), s.players())
		case "heap":
			line = heapLine()
		case "profile stop":
			line = resultLine("profile", prof.stop())
		default:
			if path, ok := strings.CutPrefix(cmd, "profile "); ok {
				line = resultLine("profile", prof.start(path))
			} else if path, ok := strings.CutPrefix(cmd, "goroutines "); ok {
				line = resultLine("goroutines", writeProfile("goroutine", path, 1))
			} else if path, ok := strings.CutPrefix(cmd, "heapprofile "); ok {
				runtime.GC()
				line = resultLine("heapprofile", writeProfile("heap", path, 0))
			} else {
				line = "error unknown command " + cmd
			}
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// writeProfile writes the named runtime/pprof profile to path.
func writeProfile(name, path string, debug int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// loopbackAPI is a WebRTC API whose ICE gathers loopback IPv4 candidates
// only, without mDNS: no datagram of the bench leaves the machine.
func loopbackAPI() *webrtc.API {
	return webrtc.NewAPI(webrtc.WithSettingEngine(loopbackSettings()))
}

// loopbackSettings are loopbackAPI's settings.
func loopbackSettings() webrtc.SettingEngine {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	return se
}
