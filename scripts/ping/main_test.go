package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
)

// startServer starts a Basalt server for c, closed when the test ends.
func startServer(t *testing.T, c server.Config) *server.Server {
	t.Helper()
	srv := c.New()
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// runPing runs the command with args and returns its exit status and
// output.
func runPing(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestPingOne(t *testing.T) {
	srv := startServer(t, server.Config{
		Network: server.NetworkConfig{
			AddressV4: "127.0.0.1:0",
			AddressV6: "[::1]:0",
		},
		Status: server.StatusConfig{
			Name:       "Ping test",
			LevelName:  "Ping level",
			MaxPlayers: 9,
		},
		GUID: 42,
	})
	for _, a := range srv.Addrs() {
		code, out, errOut := runPing(t, "-timeout", "5s", a.String())
		if code != 0 {
			t.Fatalf("ping %s: got exit %d (%s), want 0", a, code, errOut)
		}
		st := srv.Status()
		for _, want := range []string{
			"address    " + a.String(),
			"name       Ping test",
			"level      Ping level",
			"players    0/9",
			"guid       42\n",
			"protocol   " + strconv.Itoa(st.Protocol),
			"version    " + st.Version,
			"game mode  Survival (1)",
			"ports      " + strconv.Itoa(int(st.PortV4)) + " (IPv4), " + strconv.Itoa(int(st.PortV6)) + " (IPv6)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("ping %s: output lacks %q:\n%s", a, want, out)
			}
		}
	}
}

func TestPingNoServer(t *testing.T) {
	srv := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}})
	addr := srv.Addrs()[0].String()
	_ = srv.Close()
	start := time.Now()
	code, _, errOut := runPing(t, "-timeout", "300ms", addr)
	if code != 1 || !strings.HasPrefix(errOut, "ping: ") {
		t.Errorf("got exit %d with %q, want 1 with an error", code, errOut)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v, want about the 300ms timeout", d)
	}
}

func TestScanAddressList(t *testing.T) {
	a := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}, Status: server.StatusConfig{Name: "Server A"}})
	b := startServer(t, server.Config{Network: server.NetworkConfig{AddressV6: "[::1]:0"}, Status: server.StatusConfig{Name: "Server B"}})
	closed := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}})
	gone := closed.Addrs()[0].String()
	_ = closed.Close()
	// b's port without its address: -port fills it in.
	list := strings.Join([]string{a.Addrs()[0].String(), "::1", gone}, ",")
	bPort := strconv.Itoa(int(b.Status().PortV6))
	code, out, errOut := runPing(t, "-scan", "-timeout", "700ms", "-port", bPort, "-broadcast", list)
	if code != 0 {
		t.Fatalf("got exit %d (%s), want 0", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2 (one per server):\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], a.Addrs()[0].String()) || !strings.Contains(lines[0], `"Server A"`) {
		t.Errorf("line 1: got %q, want server A at %s", lines[0], a.Addrs()[0])
	}
	if !strings.HasPrefix(lines[1], "[::1]:"+bPort) || !strings.Contains(lines[1], `"Server B"`) {
		t.Errorf("line 2: got %q, want server B at [::1]:%s", lines[1], bPort)
	}
}

func TestScanLoopbackBroadcast(t *testing.T) {
	// Broadcasts reach only sockets bound to the wildcard address, so this
	// server listens on 0.0.0.0 (a random port); the broadcast itself stays
	// on the loopback interface.
	srv := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "0.0.0.0:0"}, Status: server.StatusConfig{Name: "Broadcast test"}})
	p := strconv.Itoa(int(srv.Status().PortV4))
	code, out, errOut := runPing(t, "-scan", "-timeout", "700ms", "-port", p, "-broadcast", "127.255.255.255")
	if code != 0 {
		t.Fatalf("got exit %d (%s), want 0", code, errOut)
	}
	if !strings.Contains(out, `"Broadcast test"`) || !strings.Contains(out, ":"+p+" ") {
		t.Errorf("got %q, want the server listed", out)
	}
}

func TestScanNothing(t *testing.T) {
	srv := startServer(t, server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}})
	addr := srv.Addrs()[0].String()
	_ = srv.Close()
	code, out, errOut := runPing(t, "-scan", "-timeout", "300ms", "-broadcast", addr)
	if code != 1 || out != "" || !strings.Contains(errOut, "no server answered") {
		t.Errorf("got exit %d, %q, %q; want 1 and \"no server answered\"", code, out, errOut)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"a", "b"}, 2},
		{[]string{"-scan", "a"}, 2},
		{[]string{"-port", "0", "a"}, 2},
		{[]string{"-h"}, 0},
	}
	for _, tc := range tests {
		if code, _, _ := runPing(t, tc.args...); code != tc.want {
			t.Errorf("%q: got exit %d, want %d", tc.args, code, tc.want)
		}
	}
}

func TestWithPort(t *testing.T) {
	tests := []struct {
		in   string
		port int
		want string
	}{
		{"127.0.0.1", 0, "127.0.0.1:19132"},
		{"127.0.0.1:1", 0, "127.0.0.1:1"},
		{"::1", 0, "[::1]:19133"},
		{"[::1]", 0, "[::1]:19133"},
		{"[::1]:5", 0, "[::1]:5"},
		{"::ffff:127.0.0.1", 0, "[::ffff:127.0.0.1]:19132"},
		{"localhost", 0, "localhost:19132"},
		{"::1", 7, "[::1]:7"},
		{"127.0.0.1", 7, "127.0.0.1:7"},
	}
	for _, tc := range tests {
		if got := withPort(tc.in, tc.port); got != tc.want {
			t.Errorf("withPort(%q, %d): got %q, want %q", tc.in, tc.port, got, tc.want)
		}
	}
}
