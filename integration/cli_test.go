package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBasalt builds the basalt command into a temporary directory and
// returns its path.
func buildBasalt(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the basalt command")
	}
	bin := filepath.Join(t.TempDir(), "basalt")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/basaltmc/basalt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestCommandLine checks the basalt command's flags: -version and -h exit
// 0 with what they print, and a stray argument, which would hide the flags
// after it, is an error before anything is written.
func TestCommandLine(t *testing.T) {
	bin := buildBasalt(t)
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"version", []string{"-version"}, 0, "basalt ", ""},
		{"help", []string{"-h"}, 0, "", "Usage: basalt [-config FILE] [-version]"},
		{"stray argument", []string{"run", "-config", "other.toml"}, 2, "", `basalt: unexpected argument "run"`},
		{"unknown flag", []string{"-port", "1"}, 2, "", "flag provided but not defined: -port"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if code != tc.code || !strings.HasPrefix(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr with %q",
				tc.name, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: wrote %v, want nothing", tc.name, entries)
		}
	}
}

// TestCommandSIGTERM runs the basalt command as a process manager would:
// it logs its version and where it listens at info, and SIGTERM shuts it
// down cleanly, releasing its port.
func TestCommandSIGTERM(t *testing.T) {
	bin := buildBasalt(t)
	dir := t.TempDir()
	conf := "[network]\naddress_v4 = \"127.0.0.1:0\"\naddress_v6 = \"\"\nlan_discovery = false\n[server]\nonline_mode = false\n[log]\nformat = \"json\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan map[string]any, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"message": "not JSON: " + sc.Text()}
			}
			lines <- m
		}
	}()
	next := func(msg string) map[string]any {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %q", msg)
				}
				if m["message"] == msg {
					return m
				}
			case <-timeout:
				_ = cmd.Process.Kill()
				t.Fatalf("no %q line within 30s", msg)
			}
		}
	}
	start := next("starting basalt")
	if v, _ := start["version"].(string); v == "" || start["level"] != "info" {
		t.Errorf("starting line %v, want the version at info", start)
	}
	if m := next("listening"); m["level"] != "info" {
		t.Errorf("listening line %v, want info", m)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	closed := next("server closed")
	if _, ok := closed["uptime"].(string); !ok {
		t.Errorf("server closed line %v, want uptime as a Go duration string", closed)
	}
	for range lines {
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("still running 30s after SIGTERM")
	}
	if _, err := os.Stat(filepath.Join(dir, "config.guid")); err != nil {
		t.Errorf("GUID file: %v, want config.guid beside config.toml", err)
	}
}

// TestCommandConsoleThroughPipe checks the basalt command's console on a
// pipe: list answers, an unknown command gets a hint, and stop shuts the
// server down cleanly, as Ctrl-C does; the allowlist and ban files are
// created beside the config.
func TestCommandConsoleThroughPipe(t *testing.T) {
	bin := buildBasalt(t)
	dir := t.TempDir()
	conf := "[network]\naddress_v4 = \"127.0.0.1:0\"\naddress_v6 = \"\"\nlan_discovery = false\nquery = false\n[server]\nonline_mode = false\n[log]\nformat = \"json\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
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
