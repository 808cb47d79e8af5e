package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

// netStats carries every figure of raknet.Stats it names to its field of
// session.NetStats.
func TestNetStatsConversion(t *testing.T) {
	got := netStats(raknet.Stats{
		RTT: 30 * time.Millisecond, RTTVar: 5 * time.Millisecond,
		DatagramsSent: 10, DatagramsReceived: 20, BytesSent: 1000, BytesReceived: 2000,
		Resends: 3, Loss: 0.25, LossIn: 0.125, Window: 8192, InFlight: 100, Buffered: 200,
	})
	want := session.NetStats{
		RTT: 30 * time.Millisecond, RTTVar: 5 * time.Millisecond,
		PacketLossIn: 0.125, PacketLossOut: 0.25, Resends: 3,
		Window: 8192, InFlight: 100, Buffered: 200,
		BytesIn: 2000, BytesOut: 1000, DatagramsIn: 20, DatagramsOut: 10,
	}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// A player's session reports its connection's figures, and its end logs
// them at debug level.
func TestSessionNetStats(t *testing.T) {
	var logs syncBuffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	srv := startServer(t, Config{Log: &log, NewHandler: keepHandler})
	stop := join(t, gameAddr(t, srv), "Steve")
	waitFor(t, "a player", func() bool { return srv.PlayerCount() == 1 })
	s := srv.Sessions()[0]
	var n session.NetStats
	waitFor(t, "an RTT sample", func() bool {
		var ok bool
		n, ok = s.NetStats()
		if !ok {
			t.Fatal("NetStats: got false, want the connection's figures")
		}
		return n.RTT > 0
	})
	if n.BytesIn < 1000 || n.BytesOut == 0 || n.DatagramsIn == 0 || n.DatagramsOut == 0 || n.Window <= 0 {
		t.Errorf("NetStats: got %+v, want the login's traffic and a window", n)
	}
	if n.PacketLossIn != 0 || n.PacketLossOut != 0 {
		t.Errorf("NetStats: got loss %v in, %v out over loopback, want 0, 0", n.PacketLossIn, n.PacketLossOut)
	}
	_ = s.Close()
	<-s.Done()
	stop()
	waitFor(t, "the session to be logged closed", func() bool { return strings.Contains(logs.String(), `"session closed"`) })
	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"session closed"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
		}
	}
	for _, key := range []string{"rtt", "rtt_var", "loss_in", "loss_out", "resends", "window", "bytes_in", "bytes_out", "datagrams_in", "datagrams_out"} {
		if _, ok := line[key]; !ok {
			t.Errorf("session closed line lacks %q: %v", key, line)
		}
	}
	if v, _ := line["bytes_in"].(float64); v < float64(n.BytesIn) {
		t.Errorf("session closed line: got bytes_in %v, want at least %d", line["bytes_in"], n.BytesIn)
	}
}
