package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The program reads commands from a pipe on standard input: list answers,
// an unknown command gets a hint, and stop shuts the server down cleanly,
// as Ctrl-C does.
func TestConsoleStopThroughPipe(t *testing.T) {
	if os.Getenv("BASALT_RUN_MAIN") == "1" {
		os.Args = []string{"basalt", "-config", os.Getenv("BASALT_CONFIG")}
		main()
		return
	}
	if testing.Short() {
		t.Skip("runs the program")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(conf, []byte(`[network]
address_v4 = "127.0.0.1:0"
address_v6 = ""
lan_discovery = false
query = false
[server]
online_mode = false
[log]
format = "json"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConsoleStopThroughPipe$")
	cmd.Env = append(os.Environ(), "BASALT_RUN_MAIN=1", "BASALT_CONFIG="+conf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("list\nfrobnicate\nstop\n"))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the program exited with %v:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the program did not stop:\n%s", stderr.String())
	}
	_ = in.Close()
	out := stderr.String()
	for _, want := range []string{"0 of 20 players online", `unknown command \"frobnicate\"`, "stopping the server", "server closed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"allowlist.json", "bans.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not created beside the config: %v", f, err)
		}
	}
}
