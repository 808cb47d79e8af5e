package integration

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckServerScript runs scripts/check-server.sh, the smoke test the
// README's Quick start tells a newcomer to run, so that it keeps passing on
// a fresh clone: it builds the server, starts the gate and the lobby on
// loopback, joins each with gophertunnel and stops them with SIGINT.
func TestCheckServerScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the basalt command")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run scripts/check-server.sh")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "check-server.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// The script's own waits are bounded (10 s each); this bound catches
	// a step that hangs. It usually takes about 10 s with a warm cache.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, script)
	cmd.SysProcAttr = childProcAttr(syscall.SIGTERM)
	// SIGTERM, not the default SIGKILL: the script's trap then kills the
	// server it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/check-server.sh: %v after %v:\n%s", err, time.Since(start).Round(time.Millisecond), out.String())
	}
	// Each step the README promises, once per handler.
	for _, want := range []string{
		"== handler gate", `disconnected: "Basalt is a skeleton server: you, Checker,`,
		"== handler lobby", "spawned", "/list: \"1 player in the lobby: Checker\"",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.HasSuffix(out.String(), "ok\n") {
		t.Errorf("the script's output does not end with ok:\n%s", out.String())
	}
}
