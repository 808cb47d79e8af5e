package server

import (
	"context"
	"time"

	"github.com/basaltmc/basalt/session"
)

// Draining: how a server leaves a load balancer or an orchestrator
// gracefully.
const (
	// DefaultRestartMessage is what a player who logs in while the server
	// drains sees, and what the players already in are told when it
	// starts.
	DefaultRestartMessage = "The server is restarting. Join again in a moment."
	// MaxShutdownGrace bounds server.shutdown_grace: an orchestrator
	// kills a process that takes longer (Kubernetes after 30 s unless
	// told otherwise), and players should not wait longer either.
	MaxShutdownGrace = 5 * time.Minute
)

// Ready reports whether the server should be sent new players: it is
// listening, and neither draining nor closing. /readyz on the metrics
// address answers with it.
func (srv *Server) Ready() bool {
	if srv.draining.Load() {
		return false
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.listening && !srv.closing
}

// Draining reports whether Drain has begun.
func (srv *Server) Draining() bool { return srv.draining.Load() }

// Drain begins a graceful stop and waits out grace (at most 5 minutes),
// or until ctx ends: Ready turns false at once (/readyz answers 503, so
// a balancer's health check moves new players elsewhere), players who
// log in from now on are refused with RestartMessage, and the players in
// are told with it (Config.Shutdown.OnDrain; the lobby says it in chat). Their
// sessions go on until Close, which Drain does not call: Run calls Drain
// with Config.Shutdown.Grace and then Close. The wait also ends when Close
// begins. Calls after the first only wait.
func (srv *Server) Drain(ctx context.Context, grace time.Duration) {
	grace = min(grace, MaxShutdownGrace)
	if !srv.draining.Swap(true) {
		srv.mu.Lock()
		players := srv.players
		srv.mu.Unlock()
		// Without a grace the close follows at once and says it all:
		// a drain line on every stop would be noise.
		e := srv.log.Debug()
		if grace > 0 {
			e = srv.log.Info()
		}
		e.Int("players", players).Stringer("grace", max(grace, 0)).
			Msg("draining: not ready, refusing new logins, telling the players")
		if srv.conf.Shutdown.OnDrain != nil {
			srv.conf.Shutdown.OnDrain(srv.conf.Shutdown.RestartMessage)
		}
	}
	if grace <= 0 {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-srv.adv.done: // Close has begun
	}
}

// refuseDraining returns the error that refuses a login while the server
// drains, nil otherwise.
func (srv *Server) refuseDraining(s *session.Session) error {
	if !srv.draining.Load() {
		return nil
	}
	s.Log().Debug().Msg("draining; refusing login")
	return &session.DisconnectError{Reason: session.DisconnectReasonShutdown, Message: srv.conf.Shutdown.RestartMessage}
}
