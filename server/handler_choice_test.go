package server

import (
	"testing"

	"github.com/basaltmc/basalt/session"
)

// TestHandlerChoice checks Config.Handler picks the built-in handler only
// when NewHandler is nil, and that the lobby's shutdown runs after the
// program's own OnShutdown.
func TestHandlerChoice(t *testing.T) {
	if srv := (Config{}).New(); srv.conf.Handler != HandlerGate || srv.conf.Shutdown.OnClose != nil {
		t.Errorf("zero Config: Handler %q, OnShutdown set %v; want gate, unset", srv.conf.Handler, srv.conf.Shutdown.OnClose != nil)
	}

	var order []string
	srv := Config{Handler: HandlerLobby, Shutdown: ShutdownConfig{OnClose: func(msg string) { order = append(order, "program:"+msg) }}}.New()
	if srv.conf.NewHandler == nil || srv.handler == nil {
		t.Fatal("HandlerLobby: got no NewHandler, want the lobby's")
	}
	srv.conf.Shutdown.OnClose("bye")
	if len(order) != 1 || order[0] != "program:bye" {
		t.Errorf("OnShutdown: got %q, want the program's called once with the message", order)
	}

	mine := func(*session.Session) (session.Handler, error) { return session.NopHandler{}, nil }
	srv = Config{Handler: HandlerLobby, NewHandler: mine}.New()
	if srv.conf.Shutdown.OnClose != nil {
		t.Error("NewHandler set with HandlerLobby: a lobby was made, want NewHandler alone")
	}
}
