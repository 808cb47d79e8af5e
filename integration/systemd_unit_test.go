package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server"
)

// TestSystemdUnitStopTimeout keeps scripts/systemd/basalt.service's
// TimeoutStopSec longer than the longest clean stop the server may take
// (the longest server.shutdown_grace, then the wait for clients to read the
// shutdown message), so that systemd never kills a server mid-drain.
func TestSystemdUnitStopTimeout(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "scripts", "systemd", "basalt.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var timeout time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "TimeoutStopSec="); ok {
			// systemd takes a bare number as seconds; the unit writes "s".
			if timeout, err = time.ParseDuration(v); err != nil {
				t.Fatalf("TimeoutStopSec=%s: %v", v, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if longest := server.MaxShutdownGrace + server.DefaultShutdownTimeout; timeout <= longest {
		t.Errorf("TimeoutStopSec is %v, want more than the longest stop, %v", timeout, longest)
	}
}
