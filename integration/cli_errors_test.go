package integration

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	stderr := runFailing(t, dir, bin, "-config", "server.toml")
	want := "basalt: server.toml: line 2: network.address_v4 " + taken.LocalAddr().String()
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}
