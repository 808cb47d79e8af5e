package server

import (
	"strings"
	"sync/atomic"
	"testing"

	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
)

func TestUpdateStatus(t *testing.T) {
	srv := startServer(t, Config{Status: StatusConfig{Name: "Before", MaxPlayers: 5}, GUID: 42})
	addr := gameAddr(t, srv)
	err := srv.UpdateStatus(func(st *motd.Status) {
		st.ServerName = "After"
		st.LevelName = "Another level"
		st.MaxPlayers = 9
		st.ServerGUID = 7 // the server's own
		st.Players = 1000 // counted by the server
		st.PortV4 = 1     // the listeners'
	})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	got := ping(t, addr)
	if got.ServerName != "After" || got.LevelName != "Another level" || got.MaxPlayers != 9 {
		t.Errorf("pong after UpdateStatus: got name %q, level %q, max %d; want After, Another level, 9",
			got.ServerName, got.LevelName, got.MaxPlayers)
	}
	if got.ServerGUID != 42 || got.Players != 0 || got.PortV4 != port(srv.Addrs()[0]) {
		t.Errorf("pong after UpdateStatus: got GUID %d, players %d, port %d; want the server's own 42, 0, %d",
			got.ServerGUID, got.Players, got.PortV4, port(srv.Addrs()[0]))
	}
	if srv.playerLimit() != 9 {
		t.Errorf("player limit: got %d, want 9", srv.playerLimit())
	}
	if st := srv.Status(); st.ServerName != "After" {
		t.Errorf("Status: got name %q, want After", st.ServerName)
	}
}

func TestUpdateStatusRefusesBadStatus(t *testing.T) {
	srv := startServer(t, Config{Status: StatusConfig{Name: "Kept", MaxPlayers: 5}})
	addr := gameAddr(t, srv)
	for name, f := range map[string]func(*motd.Status){
		"semicolon in version": func(st *motd.Status) { st.Version = "1;2" },
		"no player limit":      func(st *motd.Status) { st.MaxPlayers = 0 },
		"too long":             func(st *motd.Status) { st.Version = strings.Repeat("9", 400) },
	} {
		if err := srv.UpdateStatus(func(st *motd.Status) { st.ServerName = "Changed"; f(st) }); err == nil {
			t.Errorf("%s: UpdateStatus returned nil", name)
		}
	}
	if got := ping(t, addr); got.ServerName != "Kept" || got.MaxPlayers != 5 {
		t.Errorf("after refused updates: got name %q, max %d; want Kept, 5", got.ServerName, got.MaxPlayers)
	}
	if srv.playerLimit() != 5 {
		t.Errorf("player limit: got %d, want 5", srv.playerLimit())
	}
}

func TestStatusProvider(t *testing.T) {
	var calls atomic.Int64
	var mode atomic.Int64 // 0 good, 1 panics, 2 does not encode
	provider := StatusProviderFunc(func(cur motd.Status) motd.Status {
		calls.Add(1)
		switch mode.Load() {
		case 1:
			panic("provider broke")
		case 2:
			cur.Version = "1;2"
			return cur
		}
		cur.ServerName = "Live"
		cur.Players = cur.Players + 100 // players elsewhere
		cur.MaxPlayers = 300
		cur.ServerGUID = 1 // ignored
		return cur
	})
	srv := startServer(t, Config{Status: StatusConfig{Name: "Static", MaxPlayers: 5, Provider: provider, Interval: 10e6}, GUID: 99})
	addr := gameAddr(t, srv)
	waitFor(t, "the provider's status", func() bool { return ping(t, addr).ServerName == "Live" })
	got := ping(t, addr)
	if got.Players != 100 || got.MaxPlayers != 300 || got.ServerGUID != 99 || got.PortV4 != port(srv.Addrs()[0]) {
		t.Errorf("got players %d, max %d, GUID %d, port %d; want 100, 300, 99 (the server's) and the listener's port",
			got.Players, got.MaxPlayers, got.ServerGUID, got.PortV4)
	}
	if srv.playerLimit() != 300 {
		t.Errorf("player limit: got %d, want the provider's 300", srv.playerLimit())
	}
	// A provider that panics or returns a status that does not encode
	// leaves the last good one.
	for _, m := range []int64{1, 2} {
		mode.Store(m)
		n := calls.Load()
		waitFor(t, "two more provider calls", func() bool { return calls.Load() >= n+2 })
		if got := ping(t, addr); got.ServerName != "Live" {
			t.Errorf("mode %d: got name %q, want the last good Live", m, got.ServerName)
		}
	}
	// UpdateStatus feeds the provider the new configured fields.
	mode.Store(0)
	if err := srv.UpdateStatus(func(st *motd.Status) { st.LevelName = "New level" }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new level name", func() bool { return ping(t, addr).LevelName == "New level" })
}

// TestStatusProviderStopsAtClose checks that Close ends the goroutine that
// asks the provider before it returns: the leak check finds it if it runs
// on, and a provider called after Close returned counts against it.
func TestStatusProviderStopsAtClose(t *testing.T) {
	leaktest.Check(t)
	const interval = 5 * time.Millisecond
	var calls atomic.Int64
	srv := Config{
		AuthenticationDisabled: true,
		Network: NetworkConfig{
			AddressV4: "127.0.0.1:0",
		},
		Status: StatusConfig{
			Interval: interval,
			Provider: StatusProviderFunc(func(cur motd.Status) motd.Status { calls.Add(1); return cur }),
		},
	}.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a provider call", func() bool { return calls.Load() > 0 })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits for the loop that asks the provider: once it returned,
	// no goroutine of it is left to call the provider again.
	if left := leaktest.Goroutines("github.com/basaltmc/basalt/server.(*Server).provideStatus"); len(left) != 0 {
		t.Errorf("got the provider's loop running after Close returned, want it ended:\n%s", strings.Join(left, "\n\n"))
	}
}

// A player limit lowered by UpdateStatus refuses the next login and keeps
// the players already online; raised again, it admits.
func TestUpdateStatusPlayerLimit(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold, Status: StatusConfig{MaxPlayers: 5}})
	addr := gameAddr(t, srv)
	a := dial(t, addr, raknet.Dialer{})
	a.login("Alex")
	a.sync()
	if err := srv.UpdateStatus(func(st *motd.Status) { st.MaxPlayers = 1 }); err != nil {
		t.Fatal(err)
	}
	b := dial(t, addr, raknet.Dialer{})
	b.sendLogin("Steve")
	b.expect(session.IDPlayStatus)
	reason, msg := disconnectMsg(t, b.expect(session.IDDisconnect).payload)
	if reason != session.DisconnectReasonServerFull || msg != ServerFullMessage {
		t.Errorf("got Disconnect %v %q, want %v %q", reason, msg, session.DisconnectReasonServerFull, ServerFullMessage)
	}
	a.sync() // still online
	if got := srv.PlayerCount(); got != 1 {
		t.Errorf("got %d players, want 1", got)
	}
	if err := srv.UpdateStatus(func(st *motd.Status) { st.MaxPlayers = 2 }); err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr, raknet.Dialer{})
	c.login("Steve")
	c.sync()
	if got := srv.PlayerCount(); got != 2 {
		t.Errorf("after raising the limit: got %d players, want 2", got)
	}
}

// OnShutdown runs once, with the shutdown message, before any session is
// told the server is closing.
func TestOnShutdown(t *testing.T) {
	var calls atomic.Int64
	var srv *Server
	open := -1
	srv = startServer(t, Config{
		NewHandler: newHold,
		Shutdown: ShutdownConfig{
			Message: "Bye.",
			OnClose: func(msg string) {
				calls.Add(1)
				if msg != "Bye." {
					t.Errorf("OnShutdown got %q, want the shutdown message", msg)
				}
				open = 0
				for _, s := range srv.Sessions() {
					select {
					case <-s.Done():
					default:
						open++
					}
				}
			},
		},
	})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.login("Alex")
	c.sync()
	_ = srv.Close()
	_ = srv.Close()
	if calls.Load() != 1 || open != 1 {
		t.Errorf("OnShutdown called %d times, seeing %d open sessions; want once, with the player's session open", calls.Load(), open)
	}
}
