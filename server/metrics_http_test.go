package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/monitor"
)

// GET /status says whether the allowlist is on, as it changes, and
// whether online mode is on.
func TestStatusJSON(t *testing.T) {
	srv := startServer(t, Config{Metrics: MetricsConfig{Address: "127.0.0.1:0"}, Access: access.Config{Allowlist: true}, Status: StatusConfig{Name: "JSON", MaxPlayers: 7}})
	url := "http://" + srv.MetricsAddr().String() + "/status"
	read := func() monitor.Status {
		t.Helper()
		resp := get(t, url)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET /status: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var st monitor.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := read()
	if want := (monitor.Status{Name: "JSON", Level: "Bedrock level", Version: st.Version, Protocol: st.Protocol,
		MaxPlayers: 7, OnlineModeReady: true, Allowlist: true}); st != want || st.Version == "" {
		t.Errorf("got %+v, want %+v", st, want)
	}
	srv.SetAllowlist(false)
	if st := read(); st.Allowlist {
		t.Error("allowlist still on in /status after SetAllowlist(false)")
	}
}
