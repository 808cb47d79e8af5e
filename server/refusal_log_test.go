package server

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
	"github.com/rs/zerolog"
)

// TestRefusalLogged refuses one login for each reason and checks that
// each writes exactly one info line naming who, why and what to do about
// it, with the fields the metric and the other lifecycle lines use.
func TestRefusalLogged(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	offlineLogin := func(name string) func(*client) {
		return func(c *client) { c.sendLogin(name) }
	}
	tests := []struct {
		name    string
		conf    Config
		login   func(*client)
		reason  session.DisconnectReason
		message string
		want    map[string]any // fields of the line
		fix     string         // in its fix field
	}{
		{
			name:    "banned",
			conf:    Config{Access: access.Config{Bans: []Ban{{Name: "Bob", Reason: "griefing"}}}},
			login:   offlineLogin("Bob"),
			reason:  session.DisconnectReasonNotAllowed,
			message: BannedMessage + " Reason: griefing",
			want:    map[string]any{"player": "Bob", "reason": "banned", "verified": false},
			fix:     "unban Bob",
		},
		{
			name:    "not allowlisted, a name with a space",
			conf:    Config{Access: access.Config{Allowlist: true, AllowlistEntries: []AllowlistEntry{{Name: "Steve"}}}},
			login:   offlineLogin("Major Nelson"),
			reason:  session.DisconnectReasonNotAllowed,
			message: NotAllowlistedMessage,
			want:    map[string]any{"player": "Major Nelson", "reason": "not_allowlisted"},
			fix:     `allowlist add "Major Nelson"`,
		},
		{
			name: "not signed in",
			conf: Config{Auth: is.Config()},
			login: func(c *client) {
				p := authtest.NewPlayer("Steve", "2535400000000001")
				c.sendRequest(session.LoginRequest{AuthenticationType: session.AuthenticationSelfSigned,
					Chain: authtest.SelfSignedChain(p), ClientData: authtest.ClientData(p.Key, nil)})
			},
			reason:  session.DisconnectReasonNotAuthenticated,
			message: auth.NotSignedInMessage,
			want:    map[string]any{"player": "Steve", "reason": "not_signed_in", "verified": false},
			fix:     "server.online_mode = false",
		},
		{
			name: "cannot verify right now",
			conf: Config{Auth: auth.Config{DiscoveryURL: closedURL(t), Issuer: "-", RetryMin: time.Hour}},
			login: func(c *client) {
				c.sendRequest(is.Request(authtest.NewPlayer("Alex", "2535400000000002"), authtest.TokenOptions{}))
			},
			reason:  session.DisconnectReasonNotAuthenticated,
			message: auth.UnavailableMessage,
			want:    map[string]any{"player": "Alex", "reason": "auth_unavailable"},
			fix:     "server.auth_discovery_url",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sink syncBuffer
			log := zerolog.New(&sink).Level(zerolog.InfoLevel)
			tc.conf.Log, tc.conf.NewHandler = &log, newHold
			srv := startServer(t, tc.conf)
			if tc.want["reason"] == "not_signed_in" {
				waitFor(t, "the issuer's keys", srv.verifier.Ready)
			}
			c := dial(t, gameAddr(t, srv), raknet.Dialer{})
			tc.login(c)
			c.expectDisconnect(tc.reason, tc.message)
			var lines []map[string]any
			waitFor(t, "a login refused line", func() bool {
				lines = refusedLines(t, sink.String())
				return len(lines) > 0
			})
			_ = srv.Close() // nothing more to log about this player
			if lines = refusedLines(t, sink.String()); len(lines) != 1 {
				t.Fatalf("got %d login refused lines, want 1:\n%s", len(lines), sink.String())
			}
			l := lines[0]
			for k, v := range tc.want {
				if l[k] != v {
					t.Errorf("%s: got %v, want %v in %v", k, l[k], v, l)
				}
			}
			if l["level"] != "info" || !strings.Contains(l["raddr"].(string), "127.0.0.1:") {
				t.Errorf("got %v, want an info line with the client's raddr", l)
			}
			if m, _ := l["message"].(string); m != "login refused" {
				t.Errorf("got message %q", m)
			}
			if fix, _ := l["fix"].(string); !strings.Contains(fix, tc.fix) {
				t.Errorf("fix: got %q, want it to contain %q", fix, tc.fix)
			}
			if l["shown"] != tc.message {
				t.Errorf("shown: got %v, want what the player was shown, %q", l["shown"], tc.message)
			}
		})
	}
}

// refusedLines returns the JSON log lines of refused logins in log.
func refusedLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(log) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["message"] == "login refused" {
			lines = append(lines, m)
		}
	}
	return lines
}

// TestHandlerRefusalFreesSlot refuses a player in NewHandler: the player
// is not logged as joined (nor as left), the log says why at info, and the
// slot is free before the player has even read the Disconnect.
func TestHandlerRefusalFreesSlot(t *testing.T) {
	var sink syncBuffer
	log := zerolog.New(&sink).Level(zerolog.InfoLevel)
	newHandler := func(s *session.Session) (session.Handler, error) {
		if id, _ := s.Identity(); id.DisplayName == "Herobrine" {
			return nil, session.Kick("Not you again.")
		}
		return newHold(s)
	}
	srv := startServer(t, Config{Log: &log, NewHandler: newHandler, Status: StatusConfig{MaxPlayers: 1}})
	addr := gameAddr(t, srv)
	h := dial(t, addr, raknet.Dialer{})
	h.sendLogin("Herobrine")
	h.expect(session.IDPlayStatus) // LoginSuccess, then the handler's refusal
	h.expectDisconnect(session.DisconnectReasonKicked, "Not you again.")
	if n := srv.PlayerCount(); n != 0 {
		t.Errorf("got %d players once Herobrine was refused, want 0", n)
	}
	// The one slot is free for the next player at once.
	s := dial(t, addr, raknet.Dialer{})
	s.login("Steve")
	s.sync()
	_ = srv.Close()
	out := sink.String()
	lines := refusedLines(t, out)
	if len(lines) != 1 || lines[0]["player"] != "Herobrine" || lines[0]["reason"] != "handler" ||
		lines[0]["shown"] != "Not you again." || lines[0]["level"] != "info" {
		t.Errorf("got login refused lines %v, want one for Herobrine by the handler", lines)
	}
	for line := range strings.Lines(out) {
		if strings.Contains(line, "Herobrine") && (strings.Contains(line, `"player joined"`) || strings.Contains(line, `"player left"`)) {
			t.Errorf("Herobrine was logged as a player: %s", line)
		}
	}
}

// TestCountingSampler lets a burst of lines through per period and has the
// first line of the next period say how many were left out, as a flood of
// refused logins would see it.
func TestCountingSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		c := &countingSampler{BurstSampler: zerolog.BurstSampler{Burst: 2, Period: 10 * time.Second}}
		log := zerolog.New(&out).Sample(c)
		write := func() {
			if e := log.Info(); e.Enabled() {
				if n := c.dropped.Swap(0); n > 0 {
					e.Uint64("suppressed", n)
				}
				e.Msg("login refused")
			}
		}
		for range 5 {
			write()
		}
		time.Sleep(10 * time.Second) // the next period, on the bubble's clock
		write()
		want := `{"level":"info","message":"login refused"}
{"level":"info","message":"login refused"}
{"level":"info","suppressed":3,"message":"login refused"}
`
		if out.String() != want {
			t.Errorf("got\n%s\nwant\n%s", out.String(), want)
		}
	})
}
