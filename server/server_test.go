package server

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

func TestNewDefaults(t *testing.T) {
	srv := Config{}.New()
	c := srv.conf
	checks := []struct {
		name      string
		got, want any
	}{
		{"AddressV4", c.Network.AddressV4, "0.0.0.0:19132"},
		{"AddressV6", c.Network.AddressV6, "[::]:19133"},
		{"LANDiscovery", c.Network.LANDiscovery, false},
		{"LANAddressV4", c.Network.LANAddressV4, "0.0.0.0:19132"},
		{"LANAddressV6", c.Network.LANAddressV6, "[::]:19133"},
		{"Name", c.Status.Name, "Basalt"},
		{"Edition", c.Status.Edition, motd.EditionBedrock},
		{"GameMode", c.Status.GameMode, "Survival"},
		{"MaxPlayers", c.Status.MaxPlayers, 20},
		{"Version", c.Status.Version, session.CurrentVersion},
		{"Protocol", c.Status.Protocol, session.CurrentProtocol},
		{"AcceptedProtocols", c.AcceptedProtocols, session.KnownProtocols()},
		{"ShutdownMessage", c.Shutdown.Message, DefaultShutdownMessage},
		{"ShutdownTimeout", c.Shutdown.Timeout, DefaultShutdownTimeout},
		{"MaxConnections", c.RakNet.MaxConnections, 24},
		{"GUID positive", c.GUID > 0, true},
		{"EncryptionDisabled", c.EncryptionDisabled, false},
		{"handler set", srv.handler != nil, true},
		{"key P-384", srv.key != nil && srv.key.Curve == elliptic.P384(), true},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// Many players: 10% more connections than players.
	if got := (Config{Status: StatusConfig{MaxPlayers: 200}}).New().conf.RakNet.MaxConnections; got != 220 {
		t.Errorf("MaxConnections of 200 players: got %d, want 220", got)
	}
	// One family set: the other stays disabled.
	if got := (Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0"}}).New().conf.Network.AddressV6; got != "" {
		t.Errorf("AddressV6 with only AddressV4 set: got %q, want empty", got)
	}
}

// TestListenConfig checks every transport setting of Config reaches the
// listeners.
func TestListenConfig(t *testing.T) {
	log := zerolog.Nop()
	var opened atomic.Int32
	c := Config{
		Log: &log,
		RakNet: RakNetConfig{
			MaxMTU:              1200,
			MaxConnections:      30,
			MaxConnectionsPerIP: 3,
			Sockets:             2,
			ProtocolVersions:    []byte{11},
			Timeout:             7 * time.Second,
		},
		GUID: 42,
		Network: NetworkConfig{
			ProxyProtocol:  true,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
			CookieSecret:   []byte("0123456789abcdef0123456789abcdef"),
		},
		listenPacket: func(network, address string) (net.PacketConn, error) {
			opened.Add(1)
			return nil, errors.ErrUnsupported
		},
	}
	lc := listenConfig(c)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Log", lc.Log, c.Log},
		{"MaxMTU", lc.MaxMTU, 1200},
		{"MaxConnections", lc.MaxConnections, 30},
		{"MaxConnectionsPerIP", lc.MaxConnectionsPerIP, 3},
		{"Sockets", lc.Sockets, 2},
		{"ProtocolVersions", lc.ProtocolVersions, []byte{11}},
		{"Timeout", lc.Timeout, 7 * time.Second},
		{"GUID", lc.GUID, int64(42)},
		{"ProxyProtocol", lc.ProxyProtocol, true},
		{"TrustedProxies", lc.TrustedProxies, c.Network.TrustedProxies},
		{"CookieSecret", lc.CookieSecret, c.Network.CookieSecret},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if lc.ListenPacket == nil {
		t.Fatal("ListenPacket: got nil, want Config's")
	}
	if _, err := lc.ListenPacket("udp", "127.0.0.1:0"); !errors.Is(err, errors.ErrUnsupported) || opened.Load() != 1 {
		t.Errorf("ListenPacket: got %v after %d calls, want Config's func called once", err, opened.Load())
	}
}

// TestDefaultHandlerFromConfig checks the gate shows DisconnectMessage.
func TestDefaultHandlerFromConfig(t *testing.T) {
	srv := startServer(t, Config{DisconnectMessage: "Bye {player}"})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.login("Steve")
	reason, msg := disconnectMsg(t, c.expect(session.IDDisconnect).payload)
	if reason != session.DisconnectReasonKicked || msg != "Bye Steve" {
		t.Errorf("got Disconnect %v %q, want %v %q", reason, msg, session.DisconnectReasonKicked, "Bye Steve")
	}
	c.expectClosed()
}

// TestAcceptedProtocolsApplyToAnyHandler checks the server's protocol list
// holds with a handler of its own: a client outside it is refused before
// the handler is made.
func TestAcceptedProtocolsApplyToAnyHandler(t *testing.T) {
	made := make(chan struct{}, 1)
	srv := startServer(t, Config{
		Status: StatusConfig{
			Protocol: 2169,
		},
		AcceptedProtocols: []int32{2169},
		NewHandler: func(*session.Session) (session.Handler, error) {
			made <- struct{}{}
			return holdHandler{}, nil
		},
	})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.send(session.IDRequestNetworkSettings, binary.BigEndian.AppendUint32(nil, uint32(session.CurrentProtocol)))
	if p := c.expect(session.IDPlayStatus); !bytes.Equal(p.payload, []byte{0, 0, 0, 2}) {
		t.Errorf("got PlayStatus % x, want LoginFailedServer", p.payload)
	}
	c.expectClosed()
	select {
	case <-made:
		t.Error("NewHandler was called for a refused protocol")
	default:
	}
}

// TestKeyPerServer checks each server has its own handshake key.
func TestKeyPerServer(t *testing.T) {
	a, b := Config{}.New(), Config{}.New()
	if a.key.Equal(b.key) {
		t.Error("two servers got the same key")
	}
}

func TestStatus(t *testing.T) {
	srv := startServer(t, Config{
		Network: NetworkConfig{
			AddressV4: "127.0.0.1:0",
			AddressV6: "[::1]:0",
		},
		Status: StatusConfig{
			Name:       "Test Server",
			LevelName:  "Test Level",
			GameMode:   "Creative",
			MaxPlayers: 7,
			Version:    "1.26.45",
			Protocol:   2169,
		},
		GUID: 1234567890123,
	})
	as := srv.Addrs()
	if len(as) != 2 {
		t.Fatalf("got %d game listeners, want 2", len(as))
	}
	want := motd.Status{
		Edition:         motd.EditionBedrock,
		ServerName:      "Test Server",
		Protocol:        2169,
		Version:         "1.26.45",
		Players:         0,
		MaxPlayers:      7,
		ServerGUID:      1234567890123,
		LevelName:       "Test Level",
		GameMode:        "Creative",
		GameModeNumeric: 1,
		PortV4:          port(as[0]),
		PortV6:          port(as[1]),
		Extra:           []string{"0"},
	}
	for _, a := range as {
		if got := ping(t, a.String()); !reflect.DeepEqual(got, want) {
			t.Errorf("ping %s: got %+v, want %+v", a, got, want)
		}
	}
	if got := srv.Status(); !reflect.DeepEqual(got, want) {
		t.Errorf("Status: got %+v, want %+v", got, want)
	}
	b, _ := want.Encode()
	if !bytes.HasSuffix(b, []byte(";0;")) {
		t.Errorf("MOTD %q: want it to end in \";0;\"", b)
	}
}

func TestStatusPublicAddress(t *testing.T) {
	tests := []struct {
		name    string
		pub     string
		samePub bool // PortV6 carries the public port too
	}{
		{"IPv4", "203.0.113.5:25000", false},
		{"IPv6", "[2001:db8::7]:25001", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pub := netip.MustParseAddrPort(tc.pub)
			srv := startServer(t, Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0", AddressV6: "[::1]:0", PublicAddress: pub}})
			if len(srv.Addrs()) < 2 {
				t.Skip("no IPv6 loopback")
			}
			st := ping(t, gameAddr(t, srv))
			if st.PortV4 != pub.Port() {
				t.Errorf("IPv4 port: got %d, want the public %d", st.PortV4, pub.Port())
			}
			want6 := port(srv.Addrs()[1])
			if tc.samePub {
				want6 = pub.Port()
			}
			if st.PortV6 != want6 {
				t.Errorf("IPv6 port: got %d, want %d", st.PortV6, want6)
			}
		})
	}
}

// With IPv6 off the MOTD's IPv6 port is the one address_v6 names, else
// the default one; never the IPv4 port.
func TestOffPortV6(t *testing.T) {
	for _, tc := range []struct {
		addressV6 string
		want      uint16
	}{
		{"", 19133},
		{"[::]:25000", 25000},
		{"[::1]:0", 19133},
		{"not an address", 19133},
	} {
		if got := offPortV6(tc.addressV6); got != tc.want {
			t.Errorf("offPortV6(%q): got %d, want %d", tc.addressV6, got, tc.want)
		}
	}
}

// With IPv4 off both fields carry the IPv6 port: clients that reconnect
// to the pong's port read the IPv4 field whatever their family.
func TestStatusIPv6Only(t *testing.T) {
	c := Config{Network: NetworkConfig{AddressV6: "[::1]:0"}}
	offline(&c)
	srv := c.New()
	defer srv.Close()
	if err := srv.Listen(); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	st := ping(t, gameAddr(t, srv))
	p := port(srv.Addrs()[0])
	if st.PortV4 != p || st.PortV6 != p {
		t.Errorf("ports: got %d/%d, want %d/%d", st.PortV4, st.PortV6, p, p)
	}
}

func TestStatusOneFamily(t *testing.T) {
	srv := startServer(t, Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0"}})
	st := ping(t, gameAddr(t, srv))
	// IPv6 off: the IPv6 field is the default IPv6 port, as BDS and
	// PocketMine-MP advertise their server-portv6, not the IPv4 port.
	p := port(srv.Addrs()[0])
	if st.PortV4 != p || st.PortV6 != 19133 {
		t.Errorf("ports: got %d/%d, want %d/%d", st.PortV4, st.PortV6, p, 19133)
	}
	if st.ServerGUID != uint64(srv.GUID()) {
		t.Errorf("GUID: got %d, want %d", st.ServerGUID, srv.GUID())
	}
}

// loginCounter is holdHandler counting the Login packets it is given.
type loginCounter struct {
	holdHandler
	logins *atomic.Int64
}

func (h loginCounter) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID == session.IDLogin {
		h.logins.Add(1)
	}
	return h.holdHandler.HandlePacket(s, p)
}

func TestPlayerCount(t *testing.T) {
	var logins atomic.Int64
	newHandler := func(*session.Session) (session.Handler, error) { return loginCounter{logins: &logins}, nil }
	srv := startServer(t, Config{NewHandler: newHandler, Status: StatusConfig{MaxPlayers: 5}})
	addr := gameAddr(t, srv)

	a := dial(t, addr, raknet.Dialer{})
	b := dial(t, addr, raknet.Dialer{})
	a.negotiate()
	b.negotiate()
	if n := len(srv.Sessions()); n != 2 {
		t.Fatalf("got %d sessions, want 2", n)
	}
	// A session is not a player before it has logged in.
	if got := ping(t, addr).Players; got != 0 {
		t.Errorf("before login: got %d players, want 0", got)
	}
	a.sendLogin("Alex")
	a.expect(session.IDPlayStatus)
	b.sendLogin("Steve")
	b.expect(session.IDPlayStatus)
	a.sync()
	b.sync()
	if got := srv.PlayerCount(); got != 2 {
		t.Fatalf("after 2 logins: got %d players, want 2", got)
	}
	if got := ping(t, addr).Players; got != 2 {
		t.Errorf("after 2 logins: got %d players, want 2", got)
	}
	// A second Login, valid as the first was, goes to the handler and
	// does not take a second slot: were it taken for a login again, the
	// session would answer it with a second PlayStatus, which sync would
	// meet before its echo. The sync proves the session handled it before
	// the count is read.
	a.sendLogin("Alex")
	a.sync()
	if got := logins.Load(); got != 1 {
		t.Errorf("Login packets the handler was given: got %d, want 1", got)
	}
	if got := srv.PlayerCount(); got != 2 {
		t.Errorf("after a second login: got %d players, want 2", got)
	}
	if got := ping(t, addr).Players; got != 2 {
		t.Errorf("pong after a second login: got %d players, want 2", got)
	}

	_ = a.conn.Close()
	waitFor(t, "1 player", func() bool { return srv.PlayerCount() == 1 })
	if got := ping(t, addr).Players; got != 1 {
		t.Errorf("after one left: got %d players, want 1", got)
	}
	if got := srv.Status().Players; got != 1 {
		t.Errorf("Status: got %d players, want 1", got)
	}
}

func TestServerFull(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold, Status: StatusConfig{MaxPlayers: 1}})
	addr := gameAddr(t, srv)

	a := dial(t, addr, raknet.Dialer{})
	a.login("Alex")
	a.sync()
	if got := srv.PlayerCount(); got != 1 {
		t.Fatalf("after a login: got %d players, want 1", got)
	}

	b := dial(t, addr, raknet.Dialer{})
	b.login("Steve")
	p := b.expect(session.IDDisconnect)
	reason, msg := disconnectMsg(t, p.payload)
	if reason != session.DisconnectReasonServerFull || msg != ServerFullMessage {
		t.Errorf("got Disconnect %v %q, want %v %q", reason, msg, session.DisconnectReasonServerFull, ServerFullMessage)
	}
	b.expectClosed()
	if got := srv.PlayerCount(); got != 1 {
		t.Errorf("after refusal: got %d players, want 1", got)
	}

	// A slot freed is a slot for the next client.
	_ = a.conn.Close()
	waitFor(t, "0 players", func() bool { return srv.PlayerCount() == 0 })
	c := dial(t, addr, raknet.Dialer{})
	c.login("Kai")
	c.sync()
	if got := srv.PlayerCount(); got != 1 {
		t.Errorf("after the next client's login: got %d players, want 1", got)
	}
}

func TestShutdown(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold, Shutdown: ShutdownConfig{Message: "Going down for a test."}})
	addr := gameAddr(t, srv)
	clients := []*client{dial(t, addr, raknet.Dialer{}), dial(t, addr, raknet.Dialer{})}
	clients[0].login("Steve") // one player, one session
	clients[0].sync()
	clients[1].negotiate()
	if n, p := len(srv.Sessions()), srv.PlayerCount(); n != 2 || p != 1 {
		t.Fatalf("got %d sessions and %d players, want 2 and 1", n, p)
	}

	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with clients acknowledging, want well under the shutdown timeout", d)
	}
	for i, c := range clients {
		p := c.expect(session.IDDisconnect)
		reason, msg := disconnectMsg(t, p.payload)
		if reason != session.DisconnectReasonShutdown || msg != "Going down for a test." {
			t.Errorf("client %d: got Disconnect %v %q, want %v %q", i, reason, msg,
				session.DisconnectReasonShutdown, "Going down for a test.")
		}
		c.expectClosed()
	}
	if n := len(srv.Sessions()); n != 0 {
		t.Errorf("after Close: got %d sessions, want 0", n)
	}
	// The listener is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := (raknet.Dialer{}).PingContext(ctx, addr); err == nil {
		t.Error("ping after Close: got a pong, want none")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

// blackhole is a client socket that can be made to drop everything, as a
// client that vanished without a word.
type blackhole struct {
	net.PacketConn
	dead atomic.Bool
}

func (b *blackhole) WriteTo(p []byte, addr net.Addr) (int, error) {
	if b.dead.Load() {
		return len(p), nil
	}
	return b.PacketConn.WriteTo(p, addr)
}

func (b *blackhole) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := b.PacketConn.ReadFrom(p)
		if err != nil || !b.dead.Load() {
			return n, addr, err
		}
	}
}

func TestShutdownTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := startServer(t, Config{NewHandler: newHold, Shutdown: ShutdownConfig{Timeout: timeout}})
	var bh *blackhole
	// A short close timeout: the client's own Close, at cleanup, gets no ACKs
	// either.
	d := raknet.Dialer{CloseTimeout: 100 * time.Millisecond, ListenPacket: func(network, address string) (net.PacketConn, error) {
		pc, err := net.ListenPacket(network, address)
		if err != nil {
			return nil, err
		}
		bh = &blackhole{PacketConn: pc}
		return bh, nil
	}}
	c := dial(t, gameAddr(t, srv), d)
	c.login("Steve")
	c.sync()
	if n := len(srv.Sessions()); n != 1 {
		t.Fatalf("got %d sessions, want 1", n)
	}
	bh.dead.Store(true)

	start := time.Now()
	_ = srv.Close()
	// raknet alone would wait 3 s for the missing ACKs.
	if d := time.Since(start); d < timeout || d > timeout+2*time.Second {
		t.Errorf("Close took %v, want about the shutdown timeout %v", d, timeout)
	}
	if n := len(srv.Sessions()); n != 0 {
		t.Errorf("after Close: got %d sessions, want 0", n)
	}
}

// panicHandler panics on packet 0x42 and otherwise acts as holdHandler.
type panicHandler struct{ holdHandler }

func (h panicHandler) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID == 0x42 {
		panic("boom")
	}
	return h.holdHandler.HandlePacket(s, p)
}

func TestHandlerPanic(t *testing.T) {
	srv := startServer(t, Config{NewHandler: func(*session.Session) (session.Handler, error) { return panicHandler{}, nil }})
	addr := gameAddr(t, srv)
	bad := dial(t, addr, raknet.Dialer{})
	good := dial(t, addr, raknet.Dialer{})
	good.login("Alex")
	bad.login("Steve")
	good.sync()
	bad.sync()
	if got := srv.PlayerCount(); got != 2 {
		t.Fatalf("got %d players, want 2", got)
	}

	bad.send(0x42, nil)
	bad.expectClosed()
	waitFor(t, "the panicking session to end", func() bool { return srv.PlayerCount() == 1 })

	// The other session and the server keep working.
	if got := ping(t, addr).Players; got != 1 {
		t.Errorf("players after the panic: got %d, want 1", got)
	}
	good.send(0x43, nil)
	good.sync() // still answered
	if n := len(srv.Sessions()); n != 1 {
		t.Errorf("sessions after the panic: got %d, want 1", n)
	}
	third := dial(t, addr, raknet.Dialer{})
	third.login("Kai")
	third.sync()
	if got := srv.PlayerCount(); got != 2 {
		t.Errorf("after a new login: got %d players, want 2", got)
	}
}

// recordHandler records each session's events, to check the server hands
// them through.
type recordHandler struct {
	session.NopHandler
	mu     sync.Mutex
	events []string
}

func (h *recordHandler) record(e string) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *recordHandler) newHandler(s *session.Session) (session.Handler, error) {
	id, _ := s.Identity()
	h.record("new " + id.DisplayName)
	return h, nil
}
func (h *recordHandler) HandlePacket(_ *session.Session, p session.Packet) error {
	h.record("packet " + string(p.Payload))
	return nil
}
func (h *recordHandler) HandleClose(*session.Session, error) { h.record("close") }

func (h *recordHandler) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func TestHandlerEvents(t *testing.T) {
	h := &recordHandler{}
	srv := startServer(t, Config{NewHandler: h.newHandler})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.negotiate()
	c.send(0x42, []byte("before login"))
	c.login("Steve")
	c.send(0x42, []byte("a"))
	c.send(session.IDLogin, []byte("b"))
	_ = c.conn.Close()
	want := []string{"new Steve", "packet a", "packet b", "close"}
	waitFor(t, "the session to close", func() bool { return len(h.get()) == len(want) })
	if got := h.get(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLANDiscovery(t *testing.T) {
	srv := startServer(t, Config{
		NewHandler: newHold,
		Network: NetworkConfig{
			LANDiscovery: true,
			AddressV4:    "127.0.0.1:0",
			AddressV6:    "[::1]:0",
			LANAddressV4: "127.0.0.1:0",
			LANAddressV6: "[::1]:0",
		},
	})
	game, lan := srv.Addrs(), srv.LANAddrs()
	if len(lan) != 2 {
		t.Fatalf("got LAN listeners %v, want 2", lan)
	}
	for _, a := range lan {
		st := ping(t, a.String())
		if st.PortV4 != port(game[0]) || st.PortV6 != port(game[1]) {
			t.Errorf("pong from %s: got ports %d/%d, want the game ports %d/%d",
				a, st.PortV4, st.PortV6, port(game[0]), port(game[1]))
		}
		if st.ServerGUID != uint64(srv.GUID()) {
			t.Errorf("pong from %s: got GUID %d, want %d", a, st.ServerGUID, srv.GUID())
		}
	}
	// A client that joins through the LAN listener is served too, and the
	// count it changes shows on every listener.
	c := dial(t, lan[0].String(), raknet.Dialer{})
	c.login("Steve")
	c.sync()
	if got := srv.PlayerCount(); got != 1 {
		t.Fatalf("after a login through LAN: got %d players, want 1", got)
	}
	for _, a := range slices.Concat(game, lan) {
		if got := ping(t, a.String()).Players; got != 1 {
			t.Errorf("pong from %s: got %d players, want 1", a, got)
		}
	}
}

func TestLANAddressInUse(t *testing.T) {
	taken, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var logs syncBuffer
	log := zerolog.New(&logs)
	srv := startServer(t, Config{
		Log: &log,
		Network: NetworkConfig{
			LANDiscovery: true,
			LANAddressV4: taken.LocalAddr().String(),
		},
	})
	if lan := srv.LANAddrs(); len(lan) != 0 {
		t.Errorf("got LAN listeners %v, want none", lan)
	}
	if got := logs.String(); !strings.Contains(got, `"level":"warn"`) || !strings.Contains(got, "LAN discovery listener not opened") {
		t.Errorf("log: got %s, want a warning about the LAN listener", got)
	}
	ping(t, gameAddr(t, srv)) // the game listener works regardless
}

func TestLANNotNeeded(t *testing.T) {
	// The game listener already sits on the discovery port. The port is
	// held from the start and handed to the game listener, so no other
	// socket can take it in between; every other socket is recorded.
	held, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := held.LocalAddr().String()
	var mu sync.Mutex
	var opened []string
	lp := func(network, address string) (net.PacketConn, error) {
		mu.Lock()
		opened = append(opened, address)
		mu.Unlock()
		if address == addr {
			return held, nil
		}
		return net.ListenPacket(network, address)
	}
	srv := startServer(t, Config{
		Network: NetworkConfig{
			AddressV4:    addr,
			LANDiscovery: true,
			LANAddressV4: addr,
		},
		listenPacket: lp,
	})
	if lan := srv.LANAddrs(); len(lan) != 0 {
		t.Errorf("got LAN listeners %v, want none", lan)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{addr}; !slices.Equal(opened, want) {
		t.Errorf("sockets opened: got %v, want %v", opened, want)
	}
}

func TestGameListenerError(t *testing.T) {
	taken, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	srv := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: taken.LocalAddr().String(), AddressV6: "[::1]:0"}}.New()
	if err := srv.Listen(); err == nil {
		t.Fatal("Listen on a taken port: got nil, want an error")
	}
	if as := srv.Addrs(); len(as) != 0 {
		t.Errorf("got listeners %v left open, want none", as)
	}
	_ = srv.Close()
}

func TestListenTwicePanics(t *testing.T) {
	srv := startServer(t, Config{})
	defer func() {
		if recover() == nil {
			t.Error("second Listen: got no panic, want one")
		}
	}()
	_ = srv.Listen()
}

func TestListenAfterClose(t *testing.T) {
	srv := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: "127.0.0.1:0"}}.New()
	_ = srv.Close()
	if err := srv.Listen(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("got %v, want net.ErrClosed", err)
	}
}

func TestRun(t *testing.T) {
	srv := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV4: "127.0.0.1:0"}}.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	waitFor(t, "the server to listen", func() bool { return len(srv.Addrs()) == 1 })
	ping(t, srv.Addrs()[0].String())
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after the context ended")
	}
}

func TestNoIPv6(t *testing.T) {
	noV6 := func(network, address string) (net.PacketConn, error) {
		if network == "udp6" {
			return nil, &net.OpError{Op: "listen", Net: network, Err: os.NewSyscallError("socket", syscall.EAFNOSUPPORT)}
		}
		return net.ListenPacket(network, address)
	}
	srv := startServer(t, Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0", AddressV6: "[::1]:0"}, listenPacket: noV6})
	if as := srv.Addrs(); len(as) != 1 {
		t.Errorf("got listeners %v, want the IPv4 one only", as)
	}
	ping(t, gameAddr(t, srv))

	// Without IPv4 to fall back on, it is an error.
	only6 := Config{AuthenticationDisabled: true, Network: NetworkConfig{AddressV6: "[::1]:0"}, listenPacket: noV6}.New()
	if err := only6.Listen(); !errors.Is(err, syscall.EAFNOSUPPORT) {
		t.Errorf("IPv6 only: got %v, want EAFNOSUPPORT", err)
	}
}
