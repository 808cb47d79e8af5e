package server

import (
	"encoding/json"
	"net/http"
)

// statusJSON is the answer of GET /status on the metrics address: what the
// server advertises and who it lets in, for dashboards and scripts.
type statusJSON struct {
	Name       string `json:"name"`
	Level      string `json:"level"`
	Version    string `json:"version"`
	Protocol   int    `json:"protocol"`
	Players    int    `json:"players"`
	MaxPlayers int    `json:"max_players"`
	// OnlineMode is whether Xbox Live sign-ins are verified, and
	// OnlineModeReady whether they can be now (the keys fetched).
	OnlineMode      bool `json:"online_mode"`
	OnlineModeReady bool `json:"online_mode_ready"`
	// Allowlist is whether the allowlist is enforced.
	Allowlist bool `json:"allowlist"`
}

// statusRoutes adds GET /status to the metrics server's mux.
func (srv *Server) statusRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		st := srv.Status()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(statusJSON{
			Name: st.ServerName, Level: st.LevelName, Version: st.Version, Protocol: st.Protocol,
			Players: st.Players, MaxPlayers: st.MaxPlayers,
			OnlineMode: srv.OnlineMode(), OnlineModeReady: srv.OnlineModeReady(),
			Allowlist: srv.AllowlistEnabled(),
		})
	})
}
