package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/session/auth"
	"github.com/rs/zerolog"
)

// The [metrics] keys reach Config, and bad values are errors naming them.
func TestMetricsConfig(t *testing.T) {
	path := writeConfig(t, "[metrics]\naddress = \"127.0.0.1:9100\"\npprof = true\n")
	uc, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metrics.Address != "127.0.0.1:9100" || !c.Metrics.Pprof {
		t.Errorf("Config: got address %q, pprof %v, want \"127.0.0.1:9100\", true", c.Metrics.Address, c.Metrics.Pprof)
	}
	if d := DefaultUserConfig(); d.Metrics.Address != "" || d.Metrics.Pprof {
		t.Errorf("defaults: got address %q, pprof %v, want metrics off", d.Metrics.Address, d.Metrics.Pprof)
	}
	for _, tc := range []struct {
		address string
		pprof   bool
		key     string
	}{
		{"localhost:9100", false, "metrics.address"},
		{"127.0.0.1", false, "metrics.address"},
		{"127.0.0.1:99999", false, "metrics.address"},
		{"", true, "metrics.pprof"},
	} {
		uc := DefaultUserConfig()
		uc.Metrics.Address, uc.Metrics.Pprof = tc.address, tc.pprof
		if err := uc.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("address %q, pprof %v: got error %v, want one naming %s", tc.address, tc.pprof, err, tc.key)
		}
	}
	for _, ok := range []string{"", "127.0.0.1:0", "[::1]:9100", ":9100"} {
		uc := DefaultUserConfig()
		uc.Metrics.Address = ok
		if err := uc.Validate(); err != nil {
			t.Errorf("address %q: got error %v, want none", ok, err)
		}
	}
}

// server.online_mode = false is offline mode; an empty auth_issuer is none.
func TestOnlineModeConfigKeys(t *testing.T) {
	uc := DefaultUserConfig()
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "guid")
	c, err := uc.Config(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthenticationDisabled || c.Auth.DiscoveryURL != auth.DefaultDiscoveryURL || c.Auth.Issuer != auth.DefaultIssuer {
		t.Errorf("defaults: got %v, %+v, want online mode against the real service", c.AuthenticationDisabled, c.Auth)
	}
	uc.Server.OnlineMode, uc.Server.AuthIssuer = false, ""
	if c, err = uc.Config(nil); err != nil {
		t.Fatal(err)
	}
	if !c.AuthenticationDisabled || c.Auth.Issuer != "-" {
		t.Errorf("online_mode = false, auth_issuer = \"\": got %v, %q, want offline mode and no issuer", c.AuthenticationDisabled, c.Auth.Issuer)
	}
}

// network.cookie_secret_file is resolved against the config file's
// directory like guid_file, creates its file, and two servers configured
// with one file share the secret; empty means none.
func TestConfigCookieSecretFile(t *testing.T) {
	dir := t.TempDir()
	log := zerolog.Nop()
	uc := DefaultUserConfig()
	if uc.Network.CookieSecretFile != "" || !uc.Network.Query {
		t.Fatalf("defaults: got cookie_secret_file %q, query %v, want \"\", true", uc.Network.CookieSecretFile, uc.Network.Query)
	}
	uc.dir = dir
	c, err := uc.Config(&log)
	if err != nil {
		t.Fatal(err)
	}
	if c.Network.CookieSecret != nil || c.Network.CookieSecretFile != "" || !c.Network.Query {
		t.Errorf("no file: got secret %x from %q, query %v", c.Network.CookieSecret, c.Network.CookieSecretFile, c.Network.Query)
	}
	uc.Network.CookieSecretFile = "cookie_secret"
	a, err := uc.Config(&log)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "cookie_secret"); a.Network.CookieSecretFile != want || len(a.Network.CookieSecret) != 32 {
		t.Errorf("got %d bytes from %q, want 32 from %q", len(a.Network.CookieSecret), a.Network.CookieSecretFile, want)
	}
	b, err := uc.Config(&log)
	if err != nil || !bytes.Equal(a.Network.CookieSecret, b.Network.CookieSecret) {
		t.Errorf("second load: got %x, %v, want %x", b.Network.CookieSecret, err, a.Network.CookieSecret)
	}
	if err := os.WriteFile(a.Network.CookieSecretFile, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.Config(&log); err == nil {
		t.Error("junk secret file: got nil error")
	}
}
