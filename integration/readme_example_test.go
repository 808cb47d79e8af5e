package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeProgram returns the README's handler example: its first Go block
// that is a main package, as .ci/run builds it in a module of its own.
func readmeProgram(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(readme), "```go\n")[1:] {
		src, _, ok := strings.Cut(block, "```")
		if ok && strings.HasPrefix(src, "package main\n") {
			return src
		}
	}
	t.Fatal("README.md has no Go block with package main")
	return ""
}

// buildREADMEProgram builds the README's handler example inside this
// module, through an overlay (no file is written into the tree), and
// returns the binary's path.
func buildREADMEProgram(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the README's handler example")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(readmeProgram(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg, err := filepath.Abs("readmeexample") // a directory that does not exist
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "main.go"): src}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "example")
	if out, err := exec.Command("go", "build", "-overlay", ov, "-o", bin, "./readmeexample").CombinedOutput(); err != nil {
		t.Fatalf("go build of the README's example: %v\n%s", err, out)
	}
	return bin
}

// TestREADMEProgramExitCode runs the README's handler example where it
// cannot serve: a configuration it refuses, and a port already taken. Each
// must end the program at once with status 1 and the reason on standard
// error, so that a process manager's Restart=on-failure acts.
func TestREADMEProgramExitCode(t *testing.T) {
	bin := buildREADMEProgram(t)
	taken, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	base := "[network]\naddress_v6 = \"\"\nlan_discovery = false\nnethernet = false\n[server]\nonline_mode = false\n"
	tests := []struct {
		name, config, stderr string
	}{
		{"unknown key", base + "max_player = 5\n", "max_player"},
		{"bad value", base + "max_players = 0\n", "max_players"},
		{"port taken", strings.Replace(base, "[network]\n", "[network]\naddress_v4 = \""+taken.LocalAddr().String()+"\"\n", 1),
			taken.LocalAddr().String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			if stderr := runFailing(t, dir, bin); !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// runFailing runs bin with args in dir, for at most 30 s, and returns
// what it wrote to standard error; the test fails unless it exits with
// status 1, as a program that cannot serve must.
func runFailing(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Fatalf("%s: got %v, want exit status 1; stderr:\n%s", filepath.Base(bin), err, stderr.String())
	}
	return stderr.String()
}

// TestREADMEShape keeps the README a tutorial a newcomer reads from the
// top: short (the manual lives in the packages' documentation), the
// Quick start within its first 100 lines, and one Ports and firewall
// section that names every port a client needs, TCP 19132 for NetherNet
// among them.
func TestREADMEShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 25<<10 {
		t.Errorf("README.md is %d bytes, want at most 25 KiB: move reference material to the documentation of the package it describes", len(b))
	}
	lines := strings.Split(string(b), "\n")
	quick := -1
	for i, l := range lines {
		if l == "## Quick start" {
			quick = i + 1
			break
		}
	}
	if quick < 0 || quick > 100 {
		t.Errorf("## Quick start is on line %d, want within the first 100", quick)
	}
	_, ports, ok := strings.Cut(string(b), "\n## Ports and firewall\n")
	if !ok {
		t.Fatal("README.md has no ## Ports and firewall section")
	}
	ports, _, _ = strings.Cut(ports, "\n## ")
	for _, want := range []string{"| 19132 | UDP |", "| 19132 | TCP |", "| 19133 | UDP |", "| 7551 | UDP |", "ufw allow 19132/tcp"} {
		if !strings.Contains(ports, want) {
			t.Errorf("Ports and firewall lacks %q", want)
		}
	}
}
