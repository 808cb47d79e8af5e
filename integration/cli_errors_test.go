package integration

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandListenErrorNamesFile starts the basalt command on a port
// another program holds: it exits 1 at once, and the error names the
// file, the line and the key, as a configuration error does.
func TestCommandListenErrorNamesFile(t *testing.T) {
	bin := buildBasalt(t)
	taken, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	conf := "[network]\naddress_v4 = \"" + taken.LocalAddr().String() + "\"\naddress_v6 = \"\"\nlan_discovery = false\n[server]\nonline_mode = false\n"
	if err := os.WriteFile(filepath.Join(dir, "server.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-config", "server.toml")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Fatalf("got %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	want := "basalt: server.toml: line 2: network.address_v4 " + taken.LocalAddr().String()
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
}
