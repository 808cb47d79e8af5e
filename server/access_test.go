package server

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth/authtest"
	"github.com/rs/zerolog"
)

func TestAllowlist(t *testing.T) {
	srv := startServer(t, Config{
		NewHandler: newHold,
		Access: access.Config{
			Allowlist:        true,
			AllowlistEntries: []AllowlistEntry{{Name: "Steve"}, {XUID: "2535400000000009"}},
		},
	})
	addr := gameAddr(t, srv)
	c := dial(t, addr, raknet.Dialer{})
	c.login("steve")
	c.sync()
	a := dial(t, addr, raknet.Dialer{})
	a.sendLogin("Alex")
	a.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)
	if st := srv.Stats(); st.NotAllowlisted != 1 {
		t.Errorf("got %+v, want one NotAllowlisted", st)
	}
	if got := srv.PlayerCount(); got != 1 {
		t.Errorf("got %d players, want 1: a refused player took a slot", got)
	}
	if err := srv.AllowlistAdd("Alex"); err != nil {
		t.Fatal(err)
	}
	a = dial(t, addr, raknet.Dialer{})
	a.login("Alex")
	// Removing Alex disconnects Alex, and only Alex.
	if removed, err := srv.AllowlistRemove("ALEX"); err != nil || !removed {
		t.Fatalf("AllowlistRemove: got %v, %v, want true, nil", removed, err)
	}
	a.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)
	c.sync()
}

func TestSetAllowlistDisconnects(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold, Access: access.Config{AllowlistEntries: []AllowlistEntry{{Name: "Steve"}}}})
	if srv.AllowlistEnabled() {
		t.Fatal("allowlist on")
	}
	addr := gameAddr(t, srv)
	steve, alex := dial(t, addr, raknet.Dialer{}), dial(t, addr, raknet.Dialer{})
	steve.login("Steve")
	alex.login("Alex")
	alex.sync()
	srv.SetAllowlist(true)
	alex.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)
	steve.sync()
	qs := &queryStatus{srv: srv}
	if !qs.status().Whitelist {
		t.Error("Query says whitelist off with the allowlist on")
	}
	srv.SetAllowlist(false)
	if qs.status().Whitelist {
		t.Error("Query says whitelist on with the allowlist off")
	}
}

func TestBanDisconnectsAndPersists(t *testing.T) {
	dir := t.TempDir()
	bans := filepath.Join(dir, "bans.json")
	srv := startServer(t, Config{NewHandler: newHold, Access: access.Config{BansFile: bans}})
	addr := gameAddr(t, srv)
	steve, alex := dial(t, addr, raknet.Dialer{}), dial(t, addr, raknet.Dialer{})
	steve.login("Steve")
	alex.login("Alex")
	if err := srv.Ban(Ban{Name: "steve", Reason: "griefing"}); err != nil {
		t.Fatal(err)
	}
	const msg = BannedMessage + " Reason: griefing"
	steve.expectDisconnect(session.DisconnectReasonNotAllowed, msg)
	alex.sync()
	again := dial(t, addr, raknet.Dialer{})
	again.sendLogin("Steve")
	again.expectDisconnect(session.DisconnectReasonNotAllowed, msg)
	if st := srv.Stats(); st.Banned != 1 {
		t.Errorf("got %+v, want one Banned", st)
	}
	var onDisk []Ban
	data, err := os.ReadFile(bans)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &onDisk); err != nil || len(onDisk) != 1 || onDisk[0].Name != "steve" || onDisk[0].Reason != "griefing" {
		t.Fatalf("bans.json holds %s (%v), want the ban", data, err)
	}
	if n, err := srv.Unban("Steve"); n != 1 || err != nil {
		t.Fatalf("Unban: got %d, %v, want 1, nil", n, err)
	}
	back := dial(t, addr, raknet.Dialer{})
	back.login("Steve")
	if data, _ := os.ReadFile(bans); !bytes.Equal(bytes.TrimSpace(data), []byte("[]")) {
		t.Errorf("bans.json holds %s after the unban, want []", data)
	}
}

func TestBanExpiryShown(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	srv := startServer(t, Config{NewHandler: newHold, Access: access.Config{Bans: []Ban{{IP: "127.0.0.0/8", Expires: until}}}})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.sendLogin("Steve")
	c.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage+" Until 2030-01-02 03:04 UTC.")
}

// The files are reread when they change: a player the new allowlist lists
// joins, one a new ban names is disconnected with its reason. A file that
// does not parse keeps the lists in force.
func TestAccessFilesReload(t *testing.T) {
	dir := t.TempDir()
	allow, bans := filepath.Join(dir, "allowlist.json"), filepath.Join(dir, "bans.json")
	if err := os.WriteFile(allow, []byte(`[{"name":"Steve","ignoresPlayerLimit":false}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{
		NewHandler: newHold,
		Access: access.Config{
			Allowlist:     true,
			AllowlistFile: allow,
			BansFile:      bans,
			PollInterval:  10 * time.Millisecond,
		},
	})
	if _, err := os.Stat(bans); err != nil {
		t.Fatalf("the missing bans file was not created: %v", err)
	}
	addr := gameAddr(t, srv)
	steve := dial(t, addr, raknet.Dialer{})
	steve.login("Steve")
	alex := dial(t, addr, raknet.Dialer{})
	alex.sendLogin("Alex")
	alex.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)

	write := func(path, data string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(allow, `[{"name":"Steve"},{"name":"Alex"}]`)
	waitFor(t, "the allowlist reloaded", func() bool {
		_, l := srv.Allowlist()
		return len(l) == 2
	})
	alex = dial(t, addr, raknet.Dialer{})
	alex.login("Alex")

	write(bans, `[{"name":"Alex","reason":"spam"}]`)
	alex.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage+" Reason: spam")
	steve.sync()

	// A broken file keeps the lists in force.
	write(allow, `[{"name":`)
	if err := srv.Reload(); err == nil {
		t.Error("Reload of a broken allowlist: got nil, want an error")
	}
	if _, l := srv.Allowlist(); len(l) != 2 {
		t.Errorf("got allowlist %+v after a broken file, want the 2 entries in force", l)
	}
	steve.sync()
}

// A broken file at start stops the server from starting: a private server
// must not open to everyone.
func TestAccessFileBrokenAtStart(t *testing.T) {
	allow := filepath.Join(t.TempDir(), "allowlist.json")
	if err := os.WriteFile(allow, []byte(`{"not":"a list"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0"}, AuthenticationDisabled: true, Access: access.Config{Allowlist: true, AllowlistFile: allow}}.New()
	defer srv.Close()
	if err := srv.Listen(); err == nil || !strings.Contains(err.Error(), "allowlist") {
		t.Fatalf("got %v, want an error naming the allowlist", err)
	}
}

// In online mode a name-only allowlist entry takes the XUID of the first
// verified player it admits, so a later owner of the name is not admitted.
func TestAllowlistLearnsXUID(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	allow := filepath.Join(t.TempDir(), "allowlist.json")
	if err := os.WriteFile(allow, []byte(`[{"name":"Steve"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := onlineConfig(is)
	c.Access.Allowlist, c.Access.AllowlistFile = true, allow
	srv := startOnline(t, c)
	addr := gameAddr(t, srv)
	cl := dial(t, addr, raknet.Dialer{})
	cl.sendRequest(is.Request(authtest.NewPlayer("Steve", "2535400000000001"), authtest.TokenOptions{}))
	cl.expectLoginSuccess()
	if _, l := srv.Allowlist(); len(l) != 1 || l[0].XUID != "2535400000000001" {
		t.Fatalf("got %+v, want Steve's XUID recorded", l)
	}
	waitFor(t, "the learned XUID saved in allowlist.json", func() bool {
		data, _ := os.ReadFile(allow)
		return strings.Contains(string(data), "2535400000000001")
	})
	renamed := dial(t, addr, raknet.Dialer{})
	renamed.sendRequest(is.Request(authtest.NewPlayer("Steve", "2535400000000002"), authtest.TokenOptions{}))
	renamed.expectDisconnect(session.DisconnectReasonNotAllowed, NotAllowlistedMessage)
}

func TestAllowlistOfflineWarning(t *testing.T) {
	for _, online := range []bool{false, true} {
		var sink syncBuffer
		log := zerolog.New(&sink)
		c := Config{Log: &log, Access: access.Config{Allowlist: true}}
		if online {
			is := authtest.NewIssuer()
			defer is.Close()
			c.Auth = is.Config()
		}
		startServer(t, c)
		warned := strings.Contains(sink.String(), "the allowlist is on in offline mode")
		if warned == online {
			t.Errorf("online %v: warned %v, want %v:\n%s", online, warned, !online, sink.String())
		}
	}
}

// In online mode a name ban read from bans.json takes the XUID of the
// verified player it refuses, and the file is saved: the player stays
// banned under a new name.
func TestNameBanLearnsXUID(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	bans := filepath.Join(t.TempDir(), "bans.json")
	if err := os.WriteFile(bans, []byte(`[{"name":"Steve","reason":"griefing"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := onlineConfig(is)
	c.Access.BansFile = bans
	srv := startOnline(t, c)
	addr := gameAddr(t, srv)
	cl := dial(t, addr, raknet.Dialer{})
	cl.sendRequest(is.Request(authtest.NewPlayer("Steve", "2535400000000001"), authtest.TokenOptions{}))
	cl.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage+" Reason: griefing")
	waitFor(t, "the learned XUID saved in bans.json", func() bool {
		data, _ := os.ReadFile(bans)
		return strings.Contains(string(data), "2535400000000001")
	})
	renamed := dial(t, addr, raknet.Dialer{})
	renamed.sendRequest(is.Request(authtest.NewPlayer("Steve2", "2535400000000001"), authtest.TokenOptions{}))
	renamed.expectDisconnect(session.DisconnectReasonNotAllowed, BannedMessage+" Reason: griefing")
}
