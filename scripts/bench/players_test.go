package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPlayersPhase runs the players phase briefly: a few players join
// each server over each transport, play for a second and are measured.
func TestPlayersPhase(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the players phase reads the server's CPU and memory from /proc")
	}
	const n = 3
	type phase struct {
		im   playerImpl
		tr   transport
		loss float64
	}
	var phases []phase
	for _, tr := range []transport{transportRakNet, transportNetherNet} {
		for _, im := range playerImpls {
			phases = append(phases, phase{im, tr, 0})
		}
	}
	phases = append(phases, phase{playerBasalt, transportNetherNet, 0.05})
	for _, ph := range phases {
		im, tr := ph.im, ph.tr
		cfg := playersConfig{n: n, dur: time.Second, settle: 200 * time.Millisecond, dialers: 2, runs: 1, loss: ph.loss, log: io.Discard}
		{
			t.Run(fmt.Sprintf("%s %s %g%% loss", im, tr, 100*ph.loss), func(t *testing.T) {
				t.Parallel()
				r := measurePlayers(cfg, im, tr)
				if r.err != nil {
					t.Fatalf("got %v, want nil", r.err)
				}
				if r.joined != n || r.fails != 0 || r.inWorld != n {
					t.Fatalf("got %d joined, %d failed, %d in the world, want %d, 0, %d", r.joined, r.fails, r.inWorld, n, n)
				}
				if r.joins.N != n || r.joins.P50 <= 0 || r.joins.P99 < r.joins.P50 {
					t.Errorf("join latencies %v, want %d with 0 < p50 <= p99", r.joins, n)
				}
				// The players send 20 ticks a second and ask for /list
				// once: on a loaded machine under -race, at least a
				// quarter of that arrives.
				if r.ticks < 5 || r.lists < 0.25 {
					t.Errorf("got %.1f ticks/s and %.2f /list answers/s per player, want >= 5 and >= 0.25", r.ticks, r.lists)
				}
				if r.listRTT.N == 0 || r.listRTT.P50 <= 0 {
					t.Errorf("/list round trips %v, want some", r.listRTT)
				}
				if r.cpu <= 0 || r.gor <= 0 {
					t.Errorf("got server CPU %.2f ms/s and %.1f goroutines per player, want both > 0", r.cpu, r.gor)
				}
			})
		}
	}
}

func TestPrintPlayers(t *testing.T) {
	res := func(im playerImpl, tr transport, cpu, rss float64, p50 time.Duration) playersResult {
		return playersResult{im: im, t: tr, run: 1, joined: 10, joins: latencies{N: 10, P50: p50, P99: 2 * p50},
			listRTT: latencies{N: 10, P50: 3 * time.Millisecond, P99: 5 * time.Millisecond}, cpu: cpu, rssKiB: rss, gor: 2, ticks: 20}
	}
	rs := []playersResult{
		res(playerBasalt, transportRakNet, 2, 300, 20*time.Millisecond),
		res(playerGophertunnel, transportRakNet, 4, 200, 10*time.Millisecond),
		{im: playerBasalt, t: transportNetherNet, run: 1},
		res(playerGophertunnel, transportNetherNet, 4, 900, 25*time.Millisecond),
	}
	rs[1].ticks = 10 // half the ticks for the same CPU: twice the cost
	var b bytes.Buffer
	printPlayers(&b, playersConfig{n: 10, dur: time.Second}, rs)
	out := b.String()
	for _, want := range []string{
		"| 1 | basalt | raknet | 10 of 10 | 20.0 / 40.0 | 3.0 / 5.0 | 20.0 | 2.00 | 300 | 2.0 | 500 |",
		"| 1 | gophertunnel | raknet | 10 of 10 | 10.0 / 20.0 | 3.0 / 5.0 | 10.0 | 8.00 | 200 | 2.0 | 125 |",
		"| 1 | basalt | nethernet | 0 of 10 | - | - | - | - | - | - | - |",
		"| 1 | raknet | 2.00x | 0.25x | 1.50x | 1.00x |",
		"| 1 | nethernet | - | - | - | - |",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("got\n%s\nwant a line %q", out, want)
		}
	}
}

func TestPlayerAddr(t *testing.T) {
	tests := []struct {
		i    int
		want string
	}{{0, "127.0.10.1"}, {1, "127.0.11.1"}, {239, "127.0.249.1"}, {240, "127.0.10.2"}, {1999, "127.0.89.9"}}
	seen := make(map[netip.Addr]bool)
	for _, tc := range tests {
		a := playerAddr(tc.i)
		if a.String() != tc.want || !a.IsLoopback() {
			t.Errorf("playerAddr(%d): got %v, want loopback %s", tc.i, a, tc.want)
		}
	}
	for i := range 2000 {
		a := playerAddr(i)
		if seen[a] {
			t.Fatalf("playerAddr(%d): got %v twice", i, a)
		}
		seen[a] = true
	}
}

func TestIsListAnswer(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"2 players in the lobby: Alex, Steve", true},
		{"1 player in the lobby: Steve", true},
		{"Steve joined the lobby", false},
		{"Hello Steve, this is the lobby.", false},
	}
	for _, tc := range tests {
		if got := isListAnswer(tc.msg); got != tc.want {
			t.Errorf("isListAnswer(%q): got %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// countingPacketConn counts the datagrams written to it and reads out
// queued ones, then io.EOF.
type countingPacketConn struct {
	net.PacketConn
	written int
	queued  int
}

func (c *countingPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.written++
	return len(b), nil
}

func (c *countingPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if c.queued == 0 {
		return 0, nil, io.EOF
	}
	c.queued--
	return copy(b, "x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil
}

func TestLossyPacketConn(t *testing.T) {
	tests := []struct {
		rate     float64
		min, max int // of 1000 datagrams each way
	}{{0, 1000, 1000}, {0.05, 900, 990}, {0.5, 400, 600}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			under := &countingPacketConn{queued: 1000}
			c := &lossyPacketConn{PacketConn: under, rate: tc.rate}
			for range 1000 {
				if n, err := c.WriteTo([]byte("x"), nil); n != 1 || err != nil {
					t.Fatalf("WriteTo: got %d, %v, want 1, nil", n, err)
				}
			}
			read := 0
			buf := make([]byte, 4)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					break
				}
				read++
			}
			if under.written < tc.min || under.written > tc.max || read < tc.min || read > tc.max {
				t.Errorf("got %d of 1000 written and %d of 1000 read, want %d to %d both", under.written, read, tc.min, tc.max)
			}
		})
	}
}
