package access

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/session"
)

func TestBanMatches(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	steve := session.Identity{DisplayName: "Steve", XUID: "2535400000000001"}
	v4 := netip.MustParseAddr("203.0.113.7")
	v6 := netip.MustParseAddr("2001:db8::7")
	tests := []struct {
		name string
		ban  Ban
		id   session.Identity
		ip   netip.Addr
		want bool
	}{
		{"XUID", Ban{XUID: "2535400000000001"}, steve, v4, true},
		{"other XUID", Ban{XUID: "2535400000000002"}, steve, v4, false},
		{"name in another case", Ban{Name: "sTEVE"}, steve, v4, true},
		{"other name", Ban{Name: "Alex"}, steve, v4, false},
		{"IP", Ban{IP: "203.0.113.7"}, steve, v4, true},
		{"other IP", Ban{IP: "203.0.113.8"}, steve, v4, false},
		{"CIDR", Ban{IP: "203.0.113.0/24"}, steve, v4, true},
		{"CIDR not holding it", Ban{IP: "198.51.100.0/24"}, steve, v4, false},
		{"CIDR with host bits", Ban{IP: "203.0.113.99/24"}, steve, v4, true},
		{"IPv6 CIDR", Ban{IP: "2001:db8::/32"}, steve, v6, true},
		{"IPv4 ban, IPv4-mapped address", Ban{IP: "203.0.113.0/24"}, steve, netip.AddrFrom16(v4.As16()), true},
		{"IPv4 ban, IPv6 client", Ban{IP: "203.0.113.0/24"}, steve, v6, false},
		{"IP ban, no address", Ban{IP: "203.0.113.7"}, steve, netip.Addr{}, false},
		{"IPv4-mapped CIDR", Ban{IP: "::ffff:203.0.113.0/120"}, steve, v4, true},
		{"IPv4-mapped CIDR, mapped client", Ban{IP: "::ffff:203.0.113.0/120"}, steve, netip.AddrFrom16(v4.As16()), true},
		{"IPv4-mapped CIDR not holding it", Ban{IP: "::ffff:198.51.100.0/120"}, steve, v4, false},
		{"IPv4-mapped CIDR, IPv6 client", Ban{IP: "::ffff:203.0.113.0/120"}, steve, v6, false},
		{"IPv4-mapped address", Ban{IP: "::ffff:203.0.113.7"}, steve, v4, true},
		{"prefix holding all IPv4-mapped addresses", Ban{IP: "::ffff:0:0/95"}, steve, v4, true},
		{"expired", Ban{XUID: "2535400000000001", Expires: now.Add(-time.Second)}, steve, v4, false},
		{"not expired yet", Ban{XUID: "2535400000000001", Expires: now.Add(time.Hour)}, steve, v4, true},
		{"XUID ban, player without XUID", Ban{XUID: "2535400000000001"}, session.Identity{DisplayName: "Steve2"}, v4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ban.matches(tc.id, tc.ip, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []Ban{{}, {IP: "not an ip"}, {IP: "10.0.0.0/33"}, {Reason: "no target"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("validate(%+v): got nil, want an error", bad)
		}
	}
}

func TestAllowlistMatches(t *testing.T) {
	steve := session.Identity{DisplayName: "Steve", XUID: "2535400000000001"}
	for _, tc := range []struct {
		e    AllowlistEntry
		want bool
	}{
		{AllowlistEntry{Name: "steve"}, true},
		{AllowlistEntry{Name: "Alex"}, false},
		{AllowlistEntry{XUID: "2535400000000001"}, true},
		// An entry with an XUID matches that XUID only, not the name: a
		// gamertag can change hands.
		{AllowlistEntry{Name: "Steve", XUID: "2535400000000002"}, false},
		{AllowlistEntry{}, false},
	} {
		if got := tc.e.matches(steve); got != tc.want {
			t.Errorf("%+v: got %v, want %v", tc.e, got, tc.want)
		}
	}
}

// writeFile writes data to path through a rename, as an editor does.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A name ban read from the file learns the XUID of the verified player it
// refuses, and the file keeps it: the player stays banned under a new
// name. An unverified player teaches it nothing.
func TestNameBanLearnsXUID(t *testing.T) {
	const xuid = "2535400000000001"
	ip := netip.MustParseAddr("203.0.113.7")
	tests := []struct {
		name     string
		verified bool
		want     bool // the XUID learned and saved
	}{
		{"verified", true, true},
		{"unverified", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bans.json")
			writeFile(t, path, `[{"name":"Steve","reason":"griefing"}]`)
			l := New(Config{BansFile: path})
			if err := l.LoadBans(); err != nil {
				t.Fatal(err)
			}
			steve := session.Identity{DisplayName: "Steve", XUID: xuid, Verified: tc.verified}
			if err := l.Admit(steve, ip); err == nil {
				t.Fatal("Admit of a banned name: got nil, want a refusal")
			}
			if err := l.SaveBans(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(readFile(t, path), xuid); got != tc.want {
				t.Fatalf("bans.json holds the XUID: got %v, want %v:\n%s", got, tc.want, readFile(t, path))
			}
			// A server started afresh refuses the player under a new
			// name, if the XUID was learned.
			fresh := New(Config{BansFile: path})
			if err := fresh.LoadBans(); err != nil {
				t.Fatal(err)
			}
			renamed := session.Identity{DisplayName: "Steve2", XUID: xuid, Verified: true}
			if got := fresh.Check(renamed, ip, time.Now()) != nil; got != tc.want {
				t.Errorf("renamed player refused: got %v, want %v", got, tc.want)
			}
		})
	}
}

// A save in progress holds no lock a login takes: Admit and Check return
// while the file is being written.
func TestSaveOffTheLoginLock(t *testing.T) {
	dir := t.TempDir()
	l := New(Config{AllowlistFile: filepath.Join(dir, "allowlist.json"), BansFile: filepath.Join(dir, "bans.json")})
	if err := l.LoadAllowlist(); err != nil {
		t.Fatal(err)
	}
	if err := l.LoadBans(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *listFile
		save func() error
	}{
		{"allowlist", &l.allowF, l.SaveAllowlist},
		{"bans", &l.bansF, l.SaveBans},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writing, release := make(chan struct{}), make(chan struct{})
			tc.f.testHookWrite = func() {
				close(writing)
				<-release
			}
			defer func() { tc.f.testHookWrite = nil }()
			saved := make(chan error, 1)
			go func() { saved <- tc.save() }()
			<-writing
			checked := make(chan error, 1)
			go func() {
				checked <- l.Admit(session.Identity{DisplayName: "Steve"}, netip.MustParseAddr("203.0.113.7"))
			}()
			var err error
			select {
			case err = <-checked:
			case <-time.After(10 * time.Second): // a bound on failure only
				t.Error("Admit waited for the file being written")
				close(release)
				err = <-checked
				release = nil
			}
			if err != nil {
				t.Errorf("Admit: got %v, want nil", err)
			}
			if release != nil {
				close(release)
			}
			if err := <-saved; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A file edited by hand since it was last read keeps the edit when the
// lists write it: an XUID a login learned, a console ban and an unban
// are applied to what the file holds now.
func TestHandEditSurvivesWrite(t *testing.T) {
	const xuid = "2535400000000001"
	ip := netip.MustParseAddr("203.0.113.7")
	steve := session.Identity{DisplayName: "Steve", XUID: xuid, Verified: true}
	t.Run("allowlist, learned XUID", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "allowlist.json")
		writeFile(t, path, `[{"name":"Steve"}]`)
		l := New(Config{Allowlist: true, AllowlistFile: path, PollInterval: -1})
		if err := l.LoadAllowlist(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, `[{"name":"Steve"},{"name":"Alex"}]`)
		if err := l.Admit(steve, ip); err != nil {
			t.Fatal(err)
		}
		if err := l.SaveAllowlist(); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		if !strings.Contains(got, "Alex") || !strings.Contains(got, xuid) {
			t.Errorf("allowlist.json holds\n%s\nwant Alex, added by hand, and Steve's XUID", got)
		}
		_, entries := l.Allowlist()
		if len(entries) != 2 {
			t.Errorf("got allowlist %+v, want the 2 entries of the file", entries)
		}
	})
	t.Run("bans, learned XUID", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bans.json")
		writeFile(t, path, `[{"name":"Steve"}]`)
		l := New(Config{BansFile: path, PollInterval: -1})
		if err := l.LoadBans(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, `[{"name":"Steve"},{"ip":"198.51.100.0/24","reason":"by hand"}]`)
		if err := l.Admit(steve, ip); err == nil {
			t.Fatal("Admit of a banned name: got nil, want a refusal")
		}
		if err := l.SaveBans(); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		if !strings.Contains(got, "by hand") || !strings.Contains(got, xuid) {
			t.Errorf("bans.json holds\n%s\nwant the ban added by hand and Steve's XUID", got)
		}
	})
	t.Run("console ban and unban", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bans.json")
		writeFile(t, path, `[{"name":"Herobrine"}]`)
		l := New(Config{BansFile: path, PollInterval: -1})
		if err := l.LoadBans(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, `[{"name":"Herobrine"},{"name":"Notch","reason":"by hand"}]`)
		if err := l.Ban(Ban{Name: "Alex"}); err != nil {
			t.Fatal(err)
		}
		if n, err := l.Unban("Herobrine"); n != 1 || err != nil {
			t.Fatalf("Unban: got %d, %v, want 1, nil", n, err)
		}
		got := readFile(t, path)
		if !strings.Contains(got, "Notch") || !strings.Contains(got, "Alex") || strings.Contains(got, "Herobrine") {
			t.Errorf("bans.json holds\n%s\nwant Notch (by hand) and Alex, not Herobrine", got)
		}
	})
	t.Run("a hand edit that does not parse is not overwritten", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bans.json")
		writeFile(t, path, `[]`)
		l := New(Config{BansFile: path, PollInterval: -1})
		if err := l.LoadBans(); err != nil {
			t.Fatal(err)
		}
		const broken = `[{"name":"Notch",`
		writeFile(t, path, broken)
		if err := l.Ban(Ban{Name: "Alex"}); err == nil {
			t.Error("Ban over a file that does not parse: got nil, want an error")
		}
		if got := readFile(t, path); got != broken {
			t.Errorf("bans.json holds %q, want the hand edit %q", got, broken)
		}
		if l.Check(session.Identity{DisplayName: "Alex"}, ip, time.Now()) == nil {
			t.Error("the ban not saved is not in force")
		}
	})
}

// Admit writes no file: a login that teaches an entry its XUID signals
// Learned, and SaveLearned writes it.
func TestAdmitLeavesTheWriteToSaveLearned(t *testing.T) {
	const xuid = "2535400000000001"
	path := filepath.Join(t.TempDir(), "allowlist.json")
	writeFile(t, path, `[{"name":"Steve"}]`)
	l := New(Config{Allowlist: true, AllowlistFile: path})
	if err := l.LoadAllowlist(); err != nil {
		t.Fatal(err)
	}
	l.allowF.testHookWrite = func() { t.Error("Admit wrote the file") }
	steve := session.Identity{DisplayName: "Steve", XUID: xuid, Verified: true}
	if err := l.Admit(steve, netip.MustParseAddr("203.0.113.7")); err != nil {
		t.Fatal(err)
	}
	l.allowF.testHookWrite = nil
	select {
	case <-l.Learned():
	default:
		t.Fatal("Learned: got no signal, want one")
	}
	if err := l.SaveLearned(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, xuid) {
		t.Errorf("allowlist.json holds\n%s\nwant Steve's XUID", got)
	}
}
