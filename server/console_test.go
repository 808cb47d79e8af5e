package server

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
	mcpacket "github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// consoleRun runs srv's console over a pipe, as main does over stdin; send
// writes a line and waits until the log shows want.
type consoleRun struct {
	t      *testing.T
	w      *io.PipeWriter
	logs   *syncBuffer
	done   chan error
	stops  chan struct{}
	cursor int // how much of the log earlier waits consumed
}

func startConsole(t *testing.T, c Config) (*Server, *consoleRun) {
	t.Helper()
	var sink syncBuffer
	log := zerolog.New(&sink)
	c.Log = &log
	srv := startServer(t, c)
	r, w := io.Pipe()
	cn := &consoleRun{t: t, w: w, logs: &sink, done: make(chan error, 1), stops: make(chan struct{}, 1)}
	go func() {
		cn.done <- srv.RunConsole(r, func() { cn.stops <- struct{}{} })
	}()
	t.Cleanup(func() {
		_ = w.Close()
		select {
		case <-cn.done:
		case <-time.After(testTimeout):
			t.Error("RunConsole did not return at the end of its input")
		}
	})
	return srv, cn
}

// send writes line to the console and waits for the log to show want
// after what earlier sends saw.
func (c *consoleRun) send(line, want string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	waitFor(c.t, "console output "+want, func() bool {
		return strings.Contains(c.logs.String()[c.cursor:], want)
	})
	c.cursor = len(c.logs.String())
}

func TestConsole(t *testing.T) {
	srv, c := startConsole(t, Config{NewHandler: newHold})
	addr := gameAddr(t, srv)
	steve, alex := dial(t, addr, raknet.Dialer{}), dial(t, addr, raknet.Dialer{})
	steve.login("Steve")
	alex.login("Alex")
	steve.sync()
	alex.sync()

	c.send("help", "allowlist add|remove")
	c.send("list", "2 of 20 players online: Alex, Steve")
	c.send("frobnicate", `unknown command \"frobnicate\"; type help for the list of commands`)
	c.send("kick", "usage: kick <player> [reason]")
	c.send("kick nobody", `no player \"nobody\" online`)
	c.send("kick alex Too loud.", "kicked 1 player(s) named alex")
	alex.expectDisconnect(session.DisconnectReasonKicked, "Too loud.")
	waitFor(t, "Alex gone", func() bool { return srv.PlayerCount() == 1 })

	c.send("ban Steve 7d griefing", "banned Steve until")
	steve.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage+" Reason: griefing Until "+
		srv.Bans()[0].Expires.UTC().Format("2006-01-02 15:04 MST")+".")
	if b := srv.Bans()[0]; b.Name != "Steve" || time.Until(b.Expires) < 6*24*time.Hour {
		t.Errorf("got ban %+v, want Steve for 7 days", b)
	}
	c.send("ban 127.0.0.0/8", "banned 127.0.0.0/8 for good")
	if l := c.logs.String(); !strings.Contains(l, `"expires":"never"`) || strings.Contains(l, "0001-01-01") {
		t.Errorf("a permanent ban's log line: got\n%s\nwant expires=never and no zero time", l)
	}
	again := dial(t, addr, raknet.Dialer{})
	again.sendLogin("Herobrine")
	again.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage)
	c.send("unban 127.0.0.0/8", "lifted 1 ban(s) of 127.0.0.0/8")
	c.send("unban steve", "lifted 1 ban(s) of steve")
	c.send("unban steve", "no ban names steve")

	c.send("allowlist add Steve", "added Steve to the allowlist")
	c.send("allowlist add 2535400000000001", "added 2535400000000001 to the allowlist")
	c.send("allowlist list", "allowlist off, 2 entries: Steve, (2535400000000001)")
	herobrine := dial(t, addr, raknet.Dialer{})
	herobrine.login("Herobrine")
	c.send("allowlist on", "allowlist turned on")
	herobrine.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)
	c.send("allowlist remove Nobody", "Nobody is not on the allowlist")
	c.send("allowlist remove steve", "removed steve from the allowlist")
	c.send("allowlist off", "allowlist turned off")
	c.send("allowlist", "usage: allowlist")
	c.send("reload", "reloaded the allowlist and ban list")

	c.send("stop", "stopping the server")
	select {
	case <-c.stops:
	case <-time.After(testTimeout):
		t.Fatal("stop did not call the stop function")
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("RunConsole: got %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("RunConsole did not return after stop")
	}
	c.done <- nil // for the cleanup
}

// TestConsoleNamesWithSpaces kicks with "Major" and "Major Nelson" both
// online: a quoted name reaches exactly that player, an unquoted one that
// could name either is refused, and the other player stays.
func TestConsoleNamesWithSpaces(t *testing.T) {
	srv, c := startConsole(t, Config{NewHandler: newHold})
	addr := gameAddr(t, srv)
	major, nelson := dial(t, addr, raknet.Dialer{}), dial(t, addr, raknet.Dialer{})
	major.login("Major")
	nelson.login("Major Nelson")
	major.sync()
	nelson.sync()

	c.send(`say Restart in "5" minutes`, "said to 2 player(s)")
	for _, p := range []*client{major, nelson} {
		if txt := p.expect(mcpacket.IDText); !bytes.Contains(txt.payload, []byte(`[Server] Restart in "5" minutes`)) {
			t.Errorf("got Text % x, want the operator's line", txt.payload)
		}
	}
	c.send("kick Major Nelson", `\"Major Nelson\" is online: quote a name with spaces`)
	c.send(`kick "Major Nelson" griefing`, "kicked 1 player(s) named Major Nelson")
	nelson.expectDisconnect(session.DisconnectReasonKicked, "griefing")
	waitFor(t, "Major Nelson gone", func() bool { return srv.PlayerCount() == 1 })
	if p := srv.Players(); len(p) != 1 || p[0].DisplayName != "Major" {
		t.Errorf("players online: got %v, want Major alone", p)
	}
	c.send("ban Major 2x", `\"2x\" is not a ban length`)
	if b := srv.Bans(); len(b) != 0 {
		t.Errorf("got bans %+v, want none", b)
	}
	c.send(`ban "Major Nelson" 7days`, "banned Major Nelson until")
	if b := srv.Bans(); len(b) != 1 || b[0].Name != "Major Nelson" || time.Until(b[0].Expires) < 6*24*time.Hour {
		t.Errorf("got bans %+v, want Major Nelson for 7 days", b)
	}
	c.send("unban Major Nelson", "lifted 1 ban(s) of Major Nelson")
	major.sync() // still online
}
