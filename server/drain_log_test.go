package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestDrainLogOnlyWithGrace stops a server with Run: without a shutdown
// grace the stop writes no drain line at info (the close says it all), and
// with one it writes exactly one.
func TestDrainLogOnlyWithGrace(t *testing.T) {
	for _, tc := range []struct {
		grace time.Duration
		lines int
	}{
		{0, 0},
		{10 * time.Millisecond, 1},
	} {
		var sink syncBuffer
		log := zerolog.New(&sink).Level(zerolog.InfoLevel)
		srv := Config{
			Log: &log,
			Network: NetworkConfig{
				AddressV4: "127.0.0.1:0",
			},
			AuthenticationDisabled: true,
			Shutdown: ShutdownConfig{
				Grace: tc.grace,
			},
			NewHandler: newHold,
		}.New()
		if err := srv.Listen(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop at once, as a signal would
		if err := srv.Run(ctx); err != nil {
			t.Fatalf("grace %v: Run: %v", tc.grace, err)
		}
		out := sink.String()
		if n := strings.Count(out, "draining: not ready"); n != tc.lines {
			t.Errorf("grace %v: %d drain lines at info, want %d:\n%s", tc.grace, n, tc.lines, out)
		}
		if !strings.Contains(out, "server closed") {
			t.Errorf("grace %v: no server closed line:\n%s", tc.grace, out)
		}
	}
}
