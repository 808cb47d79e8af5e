package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

// TestLifecycleLogs checks a player's join, a refusal for a full server
// and a leave are each one info line, with the player's name and the
// count of players.
func TestLifecycleLogs(t *testing.T) {
	var logs syncBuffer
	log := zerolog.New(&logs).Level(zerolog.InfoLevel)
	srv := startServer(t, Config{Log: &log, NewHandler: newHold, Status: StatusConfig{MaxPlayers: 1}})
	addr := gameAddr(t, srv)

	a := dial(t, addr, raknet.Dialer{})
	a.login("Alex")
	a.sync()
	b := dial(t, addr, raknet.Dialer{})
	b.login("Steve")
	b.expect(session.IDDisconnect)
	b.expectClosed()
	_ = a.conn.Close()
	waitFor(t, "0 players", func() bool { return srv.PlayerCount() == 0 })
	waitFor(t, "the leave logged", func() bool { return strings.Contains(logs.String(), "player left") })

	want := map[string]struct {
		player  string
		players float64
	}{
		"player joined":              {"Alex", 1},
		"server full; login refused": {"Steve", -1},
		"player left":                {"Alex", 0},
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := m["message"].(string)
		w, ok := want[msg]
		if !ok {
			continue
		}
		seen[msg]++
		if m["level"] != "info" || m["player"] != w.player {
			t.Errorf("%s: got %v, want level info, player %s", msg, m, w.player)
		}
		if n, ok := m["players"].(float64); w.players >= 0 && (!ok || n != w.players) {
			t.Errorf("%s: players %v, want %v", msg, m["players"], w.players)
		}
	}
	for msg := range want {
		if seen[msg] != 1 {
			t.Errorf("%q logged %d times, want once", msg, seen[msg])
		}
	}
}
