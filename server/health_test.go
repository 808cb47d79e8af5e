package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
)

// getHealth returns the status and body of GET path on srv's metrics
// address.
func getHealth(t *testing.T, srv *Server, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: testTimeout}
	resp, err := c.Get("http://" + srv.MetricsAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// checkHealth checks what /healthz and /readyz answer.
func checkHealth(t *testing.T, srv *Server, ready int, readyBody string) {
	t.Helper()
	if code, body := getHealth(t, srv, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: got %d %q, want 200 \"ok\"", code, body)
	}
	if code, body := getHealth(t, srv, "/readyz"); code != ready || body != readyBody {
		t.Errorf("/readyz: got %d %q, want %d %q", code, body, ready, readyBody)
	}
}

// Draining: /readyz turns 503 at once while the listener still serves,
// a player logging in is refused with the restart message, the player
// already in stays and is told at Close with the shutdown message.
func TestDrain(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold, Metrics: MetricsConfig{Address: "127.0.0.1:0"}, Shutdown: ShutdownConfig{Message: "Bye for now."}})
	checkHealth(t, srv, http.StatusOK, "ready")
	if !srv.Ready() || srv.Draining() {
		t.Fatalf("Ready %v Draining %v, want true false", srv.Ready(), srv.Draining())
	}
	addr := gameAddr(t, srv)
	in := dial(t, addr, raknet.Dialer{})
	in.login("Steve")
	in.sync()

	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		srv.Drain(ctx, time.Minute)
	}()
	waitFor(t, "draining", srv.Draining)
	checkHealth(t, srv, http.StatusServiceUnavailable, "draining")
	if srv.Ready() {
		t.Error("Ready while draining")
	}
	// The listener still answers, and a new player is refused.
	ping(t, addr)
	late := dial(t, addr, raknet.Dialer{})
	late.login("Alex") // LoginSuccess comes before the handler is chosen
	reason, msg := disconnectMsg(t, late.expect(session.IDDisconnect).payload)
	if reason != session.DisconnectReasonShutdown || msg != DefaultRestartMessage {
		t.Errorf("late login: got Disconnect %v %q, want %v %q", reason, msg, session.DisconnectReasonShutdown, DefaultRestartMessage)
	}
	// The player in keeps playing.
	in.sync()
	if n := srv.PlayerCount(); n != 1 {
		t.Errorf("got %d players while draining, want 1", n)
	}
	select {
	case <-drained:
		t.Fatal("Drain returned before its grace or its context ended")
	default:
	}
	cancel()
	<-drained

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	reason, msg = disconnectMsg(t, in.expect(session.IDDisconnect).payload)
	if reason != session.DisconnectReasonShutdown || msg != "Bye for now." {
		t.Errorf("at Close: got Disconnect %v %q, want the shutdown message", reason, msg)
	}
}

// Run drains for ShutdownGrace once its context ends, telling the
// players (OnDrain), and the drain ends when Close begins; /readyz is 503
// while the game listener still answers.
func TestRunDrainsForShutdownGrace(t *testing.T) {
	told := make(chan string, 1)
	c := Config{
		Network: NetworkConfig{
			AddressV4: "127.0.0.1:0",
		},
		Metrics: MetricsConfig{
			Address: "127.0.0.1:0",
		},
		NewHandler: newHold,
		Shutdown: ShutdownConfig{
			Grace:          time.Minute,
			RestartMessage: "Back soon.",
			OnDrain:        func(msg string) { told <- msg },
		},
	}
	offline(&c)
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	checkHealth(t, srv, http.StatusOK, "ready")
	cancel()
	select {
	case msg := <-told:
		if msg != "Back soon." {
			t.Errorf("OnDrain got %q, want the restart message", msg)
		}
	case <-time.After(testTimeout):
		t.Fatal("OnDrain not called")
	}
	checkHealth(t, srv, http.StatusServiceUnavailable, "draining")
	ping(t, gameAddr(t, srv))
	select {
	case err := <-ran:
		t.Fatalf("Run returned %v during its grace", err)
	default:
	}
	_ = srv.Close()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after Close")
	}
}

// A grace over the bound is cut to it; none drains without waiting.
func TestDrainGraceBounds(t *testing.T) {
	srv := startServer(t, Config{Shutdown: ShutdownConfig{Grace: time.Hour}})
	if got := srv.conf.Shutdown.Grace; got != MaxShutdownGrace {
		t.Errorf("ShutdownGrace %v, want it cut to %v", got, MaxShutdownGrace)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Drain(context.Background(), 0)
	}()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Drain with no grace did not return")
	}
	if srv.Ready() {
		t.Error("Ready after Drain")
	}
}

// Before Listen the server is not ready.
func TestNotReadyBeforeListen(t *testing.T) {
	if (Config{}).New().Ready() {
		t.Error("Ready before Listen")
	}
}
