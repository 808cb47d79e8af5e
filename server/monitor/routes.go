package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/basaltmc/basalt/motd"
)

// Source is what /status and /readyz report on; *server.Server is one.
// Its methods are called from the HTTP server's goroutines.
type Source interface {
	// Status returns the MOTD the server advertises now.
	Status() motd.Status
	// OnlineMode reports whether Xbox Live sign-ins are verified, and
	// OnlineModeReady whether they can be now.
	OnlineMode() bool
	OnlineModeReady() bool
	// AllowlistEnabled reports whether the allowlist is enforced.
	AllowlistEnabled() bool
	// Draining reports whether the server has begun to drain, and Ready
	// whether it should be sent new players.
	Draining() bool
	Ready() bool
}

// Status is the answer of GET /status, in JSON: what the server advertises
// and who it lets in, for dashboards and scripts.
type Status struct {
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

// statusRoutes adds GET /status to mux.
func statusRoutes(mux *http.ServeMux, srv Source) {
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		st := srv.Status()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(Status{
			Name: st.ServerName, Level: st.LevelName, Version: st.Version, Protocol: st.Protocol,
			Players: st.Players, MaxPlayers: st.MaxPlayers,
			OnlineMode: srv.OnlineMode(), OnlineModeReady: srv.OnlineModeReady(),
			Allowlist: srv.AllowlistEnabled(),
		})
	})
}

// healthRoutes adds /healthz and /readyz to the metrics server's mux:
// /healthz answers 200 while the process serves HTTP at all (liveness),
// /readyz 200 while Ready and 503 otherwise (readiness), each with a
// one-line body.
func healthRoutes(mux *http.ServeMux, srv Source) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case srv.Draining():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "draining")
		case !srv.Ready():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not listening")
		default:
			fmt.Fprintln(w, "ready")
		}
	})
}
