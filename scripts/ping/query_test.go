package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/server"
)

func TestQueryOne(t *testing.T) {
	srv := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0", Query: true}, Status: server.StatusConfig{Name: "Query test", LevelName: "Query level", MaxPlayers: 7}})
	addr := srv.Addrs()[0].String()
	code, out, errOut := runPing(t, "-query", "-timeout", "5s", addr)
	if code != 0 {
		t.Fatalf("got exit %d (%s), want 0", code, errOut)
	}
	for _, want := range []string{
		"address        " + addr,
		"hostname       Query test\n",
		"game_id        MINECRAFTPE\n",
		"version        " + srv.Status().Version + "\n",
		"map            Query level\n",
		"numplayers     0\n",
		"maxplayers     7\n",
		"hostport       " + strconv.Itoa(int(srv.Status().PortV4)) + "\n",
		"players        \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestQueryUnanswered(t *testing.T) {
	srv := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}}) // Query off
	code, _, errOut := runPing(t, "-query", "-timeout", "300ms", srv.Addrs()[0].String())
	if code != 1 || !strings.Contains(errOut, "no handshake reply") {
		t.Errorf("got exit %d with %q, want 1 and no handshake reply", code, errOut)
	}
	if code, _, _ := runPing(t, "-query", "-scan"); code != 2 {
		t.Errorf("-query -scan: got exit %d, want 2", code)
	}
}

func TestParseFullStat(t *testing.T) {
	good := "splitnum\x00\x80\x00hostname\x00A\x00numplayers\x001\x00\x00\x01player_\x00\x00Steve\x00\x00"
	st, err := parseFullStat([]byte(good))
	if err != nil || st.values["hostname"] != "A" || len(st.players) != 1 || st.players[0] != "Steve" {
		t.Fatalf("got %+v, %v", st, err)
	}
	for n := range len(good) {
		if _, err := parseFullStat([]byte(good[:n])); err == nil {
			t.Errorf("prefix of %d bytes parsed", n)
		}
	}
}
