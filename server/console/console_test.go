package console

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
)

func TestParseBanLength(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"12h", 12 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"7days", 7 * 24 * time.Hour, true},
		{"1DAY", 24 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"90min", 90 * time.Minute, true},
		{"forever", 0, true},
		{"Forever", 0, true},
		{"0d", 0, false},
		{"-1h", 0, false},
		{"2x", 0, false},
		{"griefing", 0, false},
		{"d", 0, false},
		{"days", 0, false},
		{"7 days", 0, false},
		{"99999999d", 0, false},
		{"9999999999999999999999d", 0, false},
	} {
		got, err := parseBanLength(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: got %v, %v, want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for in, want := range map[string]access.Ban{
		"203.0.113.7": {IP: "203.0.113.7"}, "2001:db8::/32": {IP: "2001:db8::/32"},
		"2535400000000001": {XUID: "2535400000000001"}, "Steve": {Name: "Steve"},
		"Major Nelson": {Name: "Major Nelson"},
	} {
		if got := banTarget(in); got != want {
			t.Errorf("banTarget(%q): got %+v, want %+v", in, got, want)
		}
	}
}

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []field
		err  bool
	}{
		{"kick Steve", []field{{"kick", false}, {"Steve", false}}, false},
		{"  kick\tSteve  too   loud ", []field{{"kick", false}, {"Steve", false}, {"too", false}, {"loud", false}}, false},
		{`kick "Major Nelson" griefing`, []field{{"kick", false}, {"Major Nelson", true}, {"griefing", false}}, false},
		{`kick 'Major Nelson'`, []field{{"kick", false}, {"Major Nelson", true}}, false},
		{`kick "it's me"`, []field{{"kick", false}, {"it's me", true}}, false},
		{`kick "Major Nelson`, nil, true},
		{"   ", nil, true},
	} {
		got, err := splitLine(tc.in)
		if !slices.Equal(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("%q: got %v, %v, want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// fakeServer records what the console asked of it.
type fakeServer struct {
	online []string
	calls  []string
	bans   []access.Ban
}

func (f *fakeServer) Players() []session.Identity {
	ids := make([]session.Identity, len(f.online))
	for i, n := range f.online {
		ids[i] = session.Identity{DisplayName: n}
	}
	return ids
}
func (f *fakeServer) PlayerLimit() int { return 20 }
func (f *fakeServer) Say(message string) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("say %q", message))
	return len(f.online), nil
}
func (f *fakeServer) Kick(player, reason string) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("kick %q %q", player, reason))
	n := 0
	for _, p := range f.online {
		if strings.EqualFold(p, player) {
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no player %q online", player)
	}
	return n, nil
}
func (f *fakeServer) Transfer(player, address string) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("transfer %q %q", player, address))
	return 1, nil
}
func (f *fakeServer) Ban(b access.Ban) error {
	f.bans = append(f.bans, b)
	f.calls = append(f.calls, fmt.Sprintf("ban %q %q %q %q", b.Name, b.XUID, b.IP, b.Reason))
	return nil
}
func (f *fakeServer) Unban(who string) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("unban %q", who))
	return 1, nil
}
func (f *fakeServer) Allowlist() (bool, []access.AllowlistEntry) { return false, nil }
func (f *fakeServer) SetAllowlist(on bool) {
	f.calls = append(f.calls, fmt.Sprintf("allowlist %v", on))
}
func (f *fakeServer) AllowlistAdd(who string) error {
	f.calls = append(f.calls, fmt.Sprintf("allowlist add %q", who))
	return nil
}
func (f *fakeServer) AllowlistRemove(who string) (bool, error) {
	f.calls = append(f.calls, fmt.Sprintf("allowlist remove %q", who))
	return true, nil
}
func (f *fakeServer) Reload() error { return nil }

var _ Server = (*fakeServer)(nil)

// TestCommands runs each command with "Major" and "Major Nelson" both
// online: each reaches exactly the player it names, and a line that could
// mean either, or a length that does not parse, is refused with the usage
// rather than guessed at.
func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		line  string
		call  string // what the server was asked, "" for nothing
		reply string // in the reply, or in the error when err
		err   bool
		ban   time.Duration // the ban's length, 0 for forever
	}{
		{line: `kick Major griefing`, call: `kick "Major" "griefing"`, reply: "kicked 1 player(s) named Major"},
		{line: `kick "Major Nelson" griefing`, call: `kick "Major Nelson" "griefing"`, reply: `named Major Nelson`},
		{line: `kick 'major nelson'`, call: `kick "major nelson" ""`},
		{line: `kick "Major"   too  loud`, call: `kick "Major" "too loud"`},
		{line: `kick Major Nelson`, err: true, reply: `"Major Nelson" is online: quote a name with spaces, as in kick "Major Nelson" (or kick "Major" for the other)`},
		{line: `kick Major nelson was rude`, err: true, reply: `quote a name with spaces`},
		{line: `kick "Major Nelson`, err: true, reply: `no closing " in "Major Nelson`},
		{line: `kick`, err: true, reply: kickUsage},
		{line: `transfer Steve play.example.com:19132`, call: `transfer "Steve" "play.example.com:19132"`, reply: "transferred 1 player(s) named Steve to play.example.com:19132"},
		{line: `transfer "Major Nelson" 10.0.0.2:19133`, call: `transfer "Major Nelson" "10.0.0.2:19133"`},
		{line: `transfer Steve`, err: true, reply: transferUsage},
		{line: `ban Bob 7days`, call: `ban "Bob" "" "" ""`, reply: "banned Bob until", ban: 7 * 24 * time.Hour},
		{line: `ban Bob 7d griefing again`, call: `ban "Bob" "" "" "griefing again"`, ban: 7 * 24 * time.Hour},
		{line: `ban Bob 12h`, call: `ban "Bob" "" "" ""`, ban: 12 * time.Hour},
		{line: `ban Bob 30m`, call: `ban "Bob" "" "" ""`, ban: 30 * time.Minute},
		{line: `ban Bob`, call: `ban "Bob" "" "" ""`, reply: "banned Bob for good"},
		{line: `ban Bob forever griefing`, call: `ban "Bob" "" "" "griefing"`, reply: "banned Bob for good"},
		{line: `ban Bob griefing`, err: true, reply: `"griefing" is not a ban length`},
		{line: `ban Bob 7dayz`, err: true, reply: `"7dayz" is not a ban length`},
		{line: `ban 127.0.0.0/8 2x`, err: true, reply: `"2x" is not a ban length: give one such as 30m, 12h, 7d or 2w, or forever, before the reason; ` + banUsage},
		{line: `ban 127.0.0.0/8 2h`, call: `ban "" "" "127.0.0.0/8" ""`, ban: 2 * time.Hour},
		{line: `ban 2535400000000001 forever`, call: `ban "" "2535400000000001" "" ""`},
		{line: `ban "Major Nelson" 7d spam`, call: `ban "Major Nelson" "" "" "spam"`, ban: 7 * 24 * time.Hour},
		{line: `ban Major 7d spam`, call: `ban "Major" "" "" "spam"`, ban: 7 * 24 * time.Hour},
		{line: `ban Major Nelson 7d`, err: true, reply: `"Major Nelson" is online`},
		{line: `ban`, err: true, reply: banUsage},
		{line: `unban "Major Nelson"`, call: `unban "Major Nelson"`, reply: "lifted 1 ban(s) of Major Nelson"},
		{line: `unban Major Nelson`, call: `unban "Major Nelson"`},
		{line: `unban Major`, call: `unban "Major"`},
		{line: `unban "Major" Nelson`, err: true, reply: unbanUsage},
		{line: `unban`, err: true, reply: unbanUsage},
		{line: `allowlist add "Major Nelson"`, call: `allowlist add "Major Nelson"`, reply: "added Major Nelson to the allowlist"},
		{line: `allowlist add Major Nelson`, call: `allowlist add "Major Nelson"`},
		{line: `allowlist remove 'Major Nelson'`, call: `allowlist remove "Major Nelson"`, reply: "removed Major Nelson from the allowlist"},
		{line: `allowlist remove Major`, call: `allowlist remove "Major"`},
		{line: `allowlist add`, err: true, reply: allowlistUsage},
		{line: `allowlist on now`, err: true, reply: allowlistUsage},
		{line: `allowlist on`, call: `allowlist true`},
		{line: `say Restart in 5 minutes, "Major Nelson" too`, call: `say "Restart in 5 minutes, \"Major Nelson\" too"`, reply: "said to 2 player(s): Restart in 5 minutes"},
		{line: `say it's 'fine`, call: `say "it's 'fine"`},
		{line: "SAY\thello", call: `say "hello"`},
		{line: `say`, err: true, reply: sayUsage},
		{line: `say   `, err: true, reply: sayUsage},
	} {
		t.Run(tc.line, func(t *testing.T) {
			srv := &fakeServer{online: []string{"Major", "Major Nelson"}}
			start := time.Now()
			reply, _, err := execCommand(srv, tc.line)
			got := reply
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.err || !strings.Contains(got, tc.reply) {
				t.Errorf("got %q, error %v; want %q, error %v", got, err != nil, tc.reply, tc.err)
			}
			var want []string
			if tc.call != "" {
				want = []string{tc.call}
			}
			if !slices.Equal(srv.calls, want) {
				t.Errorf("server asked %q, want %q", srv.calls, want)
			}
			if len(srv.bans) == 1 {
				b := srv.bans[0]
				switch {
				case tc.ban == 0 && !b.Expires.IsZero():
					t.Errorf("ban expires %v, want never", b.Expires)
				case tc.ban != 0 && (b.Expires.Before(start.Add(tc.ban-time.Second)) || b.Expires.After(time.Now().Add(tc.ban))):
					t.Errorf("ban expires %v, want in %v", b.Expires, tc.ban)
				}
			}
		})
	}
}

func TestInput(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if Input(null) {
		t.Error("Input(/dev/null) = true, want false")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !Input(r) {
		t.Error("Input(a pipe) = false, want true")
	}
	_ = r.Close()
	if Input(r) {
		t.Error("Input(a closed file) = true, want false")
	}
}
