package config

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/lobby"
	"github.com/rs/zerolog"
)

// writeConfig writes doc to a config.toml in a fresh directory and returns
// its path.
func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultUserConfigIsValid(t *testing.T) {
	if err := DefaultUserConfig().Validate(); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

// update rewrites the repository's config.toml from DefaultFile.
var update = flag.Bool("update", false, "rewrite ../../config.toml from DefaultFile")

// TestConfigFileDecodesToDefaults checks the encoded file says what
// DefaultUserConfig holds, so the file written on first run changes nothing.
func TestConfigFileDecodesToDefaults(t *testing.T) {
	var got UserConfig
	if err := decodeStrict(DefaultFile(), &got); err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if want := DefaultUserConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestConfigFile holds the repository's config.toml to DefaultFile;
// with -update it rewrites it.
func TestConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "config.toml")
	want := DefaultFile()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("config.toml differs from DefaultFile; run go test ./server/config -run TestConfigFile -update\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// TestConfigFileComments checks every key and table of the file is
// commented and no comment line is wider than 80 columns.
func TestConfigFileComments(t *testing.T) {
	prev := ""
	for i, line := range strings.Split(strings.TrimSuffix(string(DefaultFile()), "\n"), "\n") {
		if n := utf8.RuneCountInString(line); strings.HasPrefix(line, "#") && n > 80 {
			t.Errorf("line %d: %d columns, want at most 80: %s", i+1, n, line)
		}
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "[") && !strings.HasPrefix(prev, "#") {
			t.Errorf("line %d: key without a comment: %s", i+1, line)
		}
		prev = line
	}
}

func TestAppendWrapped(t *testing.T) {
	tests := []struct{ in, want string }{
		{"key = 1", "key = 1\n"},
		{"# short", "# short\n"},
		{"# " + strings.Repeat("word ", 20) + "end", "# " + strings.TrimSpace(strings.Repeat("word ", 15)) + "\n# " + strings.Repeat("word ", 5) + "end\n"},
		{"# " + strings.Repeat("x", 100), "# " + strings.Repeat("x", 100) + "\n"},
	}
	for _, tc := range tests {
		if got := string(appendWrapped(nil, tc.in)); got != tc.want {
			t.Errorf("appendWrapped(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLoadConfigCreatesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	uc, err := Load(path)
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	want := DefaultUserConfig()
	want.dir = filepath.Dir(path)
	want.name = "config"
	want.lines = keyLines(DefaultFile())
	if got := want.lines["server.max_players"]; got == 0 {
		t.Errorf("line of server.max_players in the default file: got %d, want it found", got)
	}
	if !reflect.DeepEqual(uc, want) {
		t.Errorf("config: got %+v, want %+v", uc, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read written file: %v", err)
	}
	if !bytes.Equal(b, DefaultFile()) {
		t.Errorf("written file: got %q, want the template", b)
	}

	again, err := Load(path)
	if err != nil {
		t.Fatalf("second load: got error %v, want nil", err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Errorf("second load: got %+v, want %+v", again, want)
	}
}

func TestLoadConfigKeepsDefaultsForMissingKeys(t *testing.T) {
	path := writeConfig(t, "[server]\nmax_players = 5\naccepted_protocols = [2193]\nprotocol = 2193\n\n[raknet]\ntimeout = \"30s\"\n")
	uc, err := Load(path)
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	want := DefaultUserConfig()
	want.dir = filepath.Dir(path)
	want.name = "config"
	want.Server.MaxPlayers = 5
	want.Server.AcceptedProtocols = []int{2193}
	want.Server.Protocol = 2193
	want.RakNet.Timeout = "30s"
	want.lines = map[string]int{"server.max_players": 2, "server.accepted_protocols": 3, "server.protocol": 4, "raknet.timeout": 7}
	if !reflect.DeepEqual(uc, want) {
		t.Errorf("got %+v, want %+v", uc, want)
	}
}

func TestLoadConfigEmptyFile(t *testing.T) {
	uc, err := Load(writeConfig(t, ""))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	uc.dir, uc.name, uc.lines = "", "", nil
	if want := DefaultUserConfig(); !reflect.DeepEqual(uc, want) {
		t.Errorf("got %+v, want %+v", uc, want)
	}
}

func TestLoadConfigUnknownKey(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"misspelt key", "[server]\nname = \"x\"\nnmae = \"y\"\n", []string{"unknown key server.nmae", "line 3"}},
		{"unknown table", "[network]\n\n[worlds]\nseed = 1\n", []string{"unknown table worlds", "line 3"}},
		{"top-level key", "max_players = 5\n", []string{"unknown key max_players", "line 1"}},
		{"key in wrong table", "[raknet]\nmax_players = 5\n", []string{"unknown key raknet.max_players", "line 2"}},
		{"two unknown keys", "[log]\ncolour = true\n[raknet]\nmtu = 1\n",
			[]string{"unknown key log.colour", "line 2", "unknown key raknet.mtu", "line 4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.doc))
			if err == nil {
				t.Fatal("got nil error, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadConfigBadValues(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantKey string
		wantMsg string // another substring of the error, "" for none
	}{
		{"mtu too big", "[raknet]\nmax_mtu = 5000\n", "raknet.max_mtu", "5000"},
		{"mtu too small", "[raknet]\nmax_mtu = 500\n", "raknet.max_mtu", "576-1492"},
		{"mtu wrong type", "[raknet]\nmax_mtu = \"big\"\n", "raknet.max_mtu", "line 2"},
		{"bad duration", "[raknet]\ntimeout = \"ten seconds\"\n", "raknet.timeout", "ten seconds"},
		{"duration without unit", "[raknet]\ntimeout = \"10\"\n", "raknet.timeout", ""},
		{"zero timeout", "[raknet]\ntimeout = \"0s\"\n", "raknet.timeout", "more than 0"},
		{"timeout too long", "[raknet]\ntimeout = \"6m\"\n", "raknet.timeout", "longer than 5m0s"},
		{"negative max connections", "[raknet]\nmax_connections = -1\n", "raknet.max_connections", ""},
		{"max connections below max players", "[raknet]\nmax_connections = 5\n", "raknet.max_connections", "server.max_players"},
		{"no RakNet versions", "[raknet]\nprotocol_versions = []\n", "raknet.protocol_versions", "empty"},
		{"RakNet version too big", "[raknet]\nprotocol_versions = [11, 300]\n", "raknet.protocol_versions[1]", "300"},
		{"bad edition", "[server]\nedition = \"Bedrock\"\n", "server.edition", "Bedrock"},
		{"bad game mode", "[server]\ngame_mode = \"Hardcore\"\n", "server.game_mode", "Hardcore"},
		{"no players", "[server]\nmax_players = 0\n", "server.max_players", ""},
		{"bad version", "[server]\nversion = \"latest\"\n", "server.version", "latest"},
		{"bad protocol", "[server]\nprotocol = 0\naccepted_protocols = [0]\n", "server.protocol", ""},
		{"protocol not accepted", "[server]\nprotocol = 800\n", "server.protocol", "accepted_protocols"},
		{"no accepted protocols", "[server]\naccepted_protocols = []\n", "server.accepted_protocols", "empty"},
		{"protocol too big", "[server]\naccepted_protocols = [2193, 4294967296]\n", "server.accepted_protocols[1]", ""},
		{"protocol unknown to the build", "[server]\naccepted_protocols = [2193, 2259]\n", "server.accepted_protocols[1]", "2259 is not a protocol this build speaks"},
		{"unknown placeholder", "[server]\ndisconnect_message = \"Bye {name}\"\n", "server.disconnect_message", "{name}"},
		{"semicolon in name", "[server]\nname = \"a;b\"\n", "server.name", "';'"},
		{"newline in level name", "[server]\nlevel_name = \"a\\nb\"\n", "server.level_name", ""},
		{"names too long", "[server]\nname = \"" + strings.Repeat("n", 200) + "\"\nlevel_name = \"" + strings.Repeat("l", 200) + "\"\n",
			"server.name, server.level_name", "too long"},
		{"both addresses empty", "[network]\naddress_v4 = \"\"\naddress_v6 = \"\"\n", "network.address_v4, network.address_v6", "set network.address_v4 to"},
		{"IPv6 host in v4 address", "[network]\naddress_v4 = \"[::]:19132\"\n", "network.address_v4", "not an IPv4"},
		{"IPv4 host in v6 address", "[network]\naddress_v6 = \"0.0.0.0:19133\"\n", "network.address_v6", "not an IPv6"},
		{"mapped host in v6 address", "[network]\naddress_v6 = \"[::ffff:127.0.0.1]:19133\"\n", "network.address_v6", "IPv4-mapped"},
		{"hostname", "[network]\naddress_v4 = \"localhost:19132\"\n", "network.address_v4", "not an IP"},
		{"missing port", "[network]\naddress_v4 = \"0.0.0.0\"\n", "network.address_v4", ""},
		{"port too big", "[network]\naddress_v4 = \"0.0.0.0:70000\"\n", "network.address_v4", "70000"},
		{"lan discovery wrong type", "[network]\nlan_discovery = \"yes\"\n", "network.lan_discovery", "bool"},
		{"trusted proxy not a prefix", "[network]\ntrusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n", "network.trusted_proxies[1]", "10.0.0.0/33"},
		{"trusted proxy a name", "[network]\ntrusted_proxies = [\"proxy.example\"]\n", "network.trusted_proxies[0]", "CIDR"},
		{"proxy protocol without proxies", "[network]\nproxy_protocol = true\n", "network.trusted_proxies", "proxy_protocol needs"},
		{"public address without port", "[network]\npublic_address = \"203.0.113.5\"\n", "network.public_address", "IP:port"},
		{"public address a name", "[network]\npublic_address = \"play.example:19132\"\n", "network.public_address", "not an IP address"},
		{"public address port 0", "[network]\npublic_address = \"203.0.113.5:0\"\n", "network.public_address", "1 to 65535"},
		{"public address port too big", "[network]\npublic_address = \"203.0.113.5:65536\"\n", "network.public_address", "1 to 65535"},
		{"public address unspecified", "[network]\npublic_address = \"0.0.0.0:19132\"\n", "network.public_address", "unspecified"},
		{"public address IPv6 unspecified", "[network]\npublic_address = \"[::]:19132\"\n", "network.public_address", "unspecified"},
		{"public address multicast", "[network]\npublic_address = \"224.0.0.1:19132\"\n", "network.public_address", "multicast"},
		{"public address zone", "[network]\npublic_address = \"[fe80::1%eth0]:19132\"\n", "network.public_address", "zone"},
		{"public address IPv6 without brackets", "[network]\npublic_address = \"2001:db8::1:19132\"\n", "network.public_address", "[IPv6]:port"},
		{"no sockets", "[network]\nsockets = 0\n", "network.sockets", "1-64"},
		{"too many sockets", "[network]\nsockets = 65\n", "network.sockets", "1-64"},
		{"bad login timeout", "[server]\nlogin_timeout = \"soon\"\n", "server.login_timeout", "soon"},
		{"zero login timeout", "[server]\nlogin_timeout = \"0s\"\n", "server.login_timeout", "more than 0"},
		{"login timeout too long", "[server]\nlogin_timeout = \"2m\"\n", "server.login_timeout", "longer than 1m0s"},
		{"bad shutdown grace", "[server]\nshutdown_grace = \"soon\"\n", "server.shutdown_grace", "soon"},
		{"negative shutdown grace", "[server]\nshutdown_grace = \"-1s\"\n", "server.shutdown_grace", "outside 0s-5m0s"},
		{"shutdown grace too long", "[server]\nshutdown_grace = \"5m1s\"\n", "server.shutdown_grace", "outside 0s-5m0s"},
		{"discovery URL not a URL", "[server]\nauth_discovery_url = \"ftp://x\"\n", "server.auth_discovery_url", "ftp://x"},
		{"issuer not a URL", "[server]\nauth_issuer = \"issuer\"\n", "server.auth_issuer", "issuer"},
		{"empty allowlist file", "[server]\nallowlist_file = \"\"\n", "server.allowlist_file", "empty"},
		{"empty bans file", "[server]\nbans_file = \"\"\n", "server.bans_file", "empty"},
		{"negative connections per IP", "[raknet]\nmax_connections_per_ip = -1\n", "raknet.max_connections_per_ip", "0 for no limit"},
		{"memory budget too small", "[raknet]\nmemory_budget = 4194303\n", "raknet.memory_budget", "4 MiB"},
		{"memory budget too large", "[raknet]\nmemory_budget = 68719476737\n", "raknet.memory_budget", "64 GiB"},
		{"memory budget wrong type", "[raknet]\nmemory_budget = \"128MiB\"\n", "raknet.memory_budget", "line 2"},
		{"bad log level", "[log]\nlevel = \"verbose\"\n", "log.level", "verbose"},
		{"bad log format", "[log]\nformat = \"xml\"\n", "log.format", "xml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.doc))
			if err == nil {
				t.Fatal("got nil error, want an error")
			}
			if !strings.Contains(err.Error(), tc.wantKey) {
				t.Errorf("got %q, want it to name %v", err, tc.wantKey)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		change func(uc *UserConfig)
	}{
		{"IPv4 only", func(uc *UserConfig) { uc.Network.AddressV6 = "" }},
		{"IPv6 only", func(uc *UserConfig) { uc.Network.AddressV4 = "" }},
		{"no host", func(uc *UserConfig) { uc.Network.AddressV4, uc.Network.AddressV6 = ":19132", ":19133" }},
		{"ephemeral ports", func(uc *UserConfig) { uc.Network.AddressV4, uc.Network.AddressV6 = "127.0.0.1:0", "[::1]:0" }},
		{"education", func(uc *UserConfig) { uc.Server.Edition = "MCEE" }},
		{"colour codes", func(uc *UserConfig) { uc.Server.Name = "§aBasalt §r§7test" }},
		{"several placeholders and braces", func(uc *UserConfig) { uc.Server.DisconnectMessage = "{player}, bye {player} {" }},
		{"empty disconnect message", func(uc *UserConfig) { uc.Server.DisconnectMessage = "" }},
		{"explicit max connections", func(uc *UserConfig) { uc.RakNet.MaxConnections = 20 }},
		{"edge MTUs", func(uc *UserConfig) { uc.RakNet.MaxMTU = 576 }},
		{"most sockets", func(uc *UserConfig) { uc.Network.Sockets = 64 }},
		{"longest timeout", func(uc *UserConfig) { uc.RakNet.Timeout = "5m" }},
		{"longest login timeout", func(uc *UserConfig) { uc.Server.LoginTimeout = "1m" }},
		{"no limit per IP", func(uc *UserConfig) { uc.RakNet.MaxConnectionsPerIP = 0 }},
		{"edge memory budgets", func(uc *UserConfig) { uc.RakNet.MemoryBudget = 4 << 20 }},
		{"largest memory budget", func(uc *UserConfig) { uc.RakNet.MemoryBudget = 64 << 30 }},
		{"trace", func(uc *UserConfig) { uc.Log.Level, uc.Log.Format = "trace", "json" }},
		{"behind a proxy", func(uc *UserConfig) {
			uc.Network.ProxyProtocol, uc.Network.TrustedProxies = true, []string{"203.0.113.0/24", "198.51.100.7", "2001:db8::/32"}
		}},
		{"trusted proxies kept while proxy protocol is off", func(uc *UserConfig) { uc.Network.TrustedProxies = []string{"10.0.0.0/8"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uc := DefaultUserConfig()
			tc.change(&uc)
			if err := uc.Validate(); err != nil {
				t.Errorf("got %v, want nil", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	uc := DefaultUserConfig()
	uc.Server.MaxPlayers = 0
	uc.Log.Level = "loud"
	uc.RakNet.MaxMTU = 1
	err := uc.Validate()
	for _, key := range []string{"server.max_players", "log.level", "raknet.max_mtu"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("got %v, want it to name %v", err, key)
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	uc, err := Load(path)
	if err != nil {
		t.Fatalf("Load: got error %v, want nil", err)
	}
	log := zerolog.Nop()
	c, err := uc.Config(&log)
	if err != nil {
		t.Fatalf("Config: got error %v, want nil", err)
	}
	guidFile := filepath.Join(dir, "config.guid")
	b, err := os.ReadFile(guidFile)
	if err != nil {
		t.Fatalf("GUID file: %v", err)
	}
	guid, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("GUID file %q: %v", b, err)
	}
	want := server.Config{
		Log: &log,
		Network: server.NetworkConfig{
			AddressV4:    "0.0.0.0:19132",
			AddressV6:    "[::]:19133",
			LANDiscovery: true,
			Query:        true,
		},
		Status: server.StatusConfig{
			Name:       "Basalt",
			LevelName:  "Bedrock level",
			Edition:    motd.EditionBedrock,
			GameMode:   "Survival",
			MaxPlayers: 20,
			Version:    "1.26.60",
			Protocol:   2225,
		},
		AcceptedProtocols: []int32{2193, 2225},
		DisconnectMessage: DefaultUserConfig().Server.DisconnectMessage,
		Shutdown: server.ShutdownConfig{
			Message: "Server closed.",
		},
		Handler: server.HandlerGate,
		Lobby: lobby.Config{
			Greeting: lobby.DefaultGreeting,
		},
		GUIDFile:     guidFile,
		GUID:         guid,
		LoginTimeout: 10 * time.Second,
		RakNet: server.RakNetConfig{
			Sockets:             1,
			MaxMTU:              1400,
			MaxConnections:      0,
			Timeout:             10 * time.Second,
			ProtocolVersions:    []byte{11, 10},
			MaxConnectionsPerIP: 16,
			MemoryBudget:        128 << 20,
		},
		Auth: auth.Config{DiscoveryURL: auth.DefaultDiscoveryURL, Issuer: auth.DefaultIssuer},
		Access: access.Config{
			AllowlistFile: filepath.Join(dir, "allowlist.json"),
			BansFile:      filepath.Join(dir, "bans.json"),
		},
		NetherNet: server.NetherNetConfig{
			Enabled: true,
			// The key is new; its file is checked below.
			IdentityKey:  c.NetherNet.IdentityKey,
			IdentityFile: filepath.Join(dir, "nethernet_identity"),
		},
		// For errors found once the server runs to name their line.
		KeyLines: keyLines(DefaultFile()),
	}
	if c.NetherNet.IdentityKey == nil {
		t.Error("no NetherNet identity key")
	} else if k, created, err := nethernet.LoadIdentityKey(want.NetherNet.IdentityFile); err != nil || created || !k.Equal(c.NetherNet.IdentityKey) {
		t.Errorf("identity file: created %v, %v, or not the key loaded", created, err)
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}

	again, err := uc.Config(nil)
	if err != nil {
		t.Fatalf("second Config: got error %v, want nil", err)
	}
	if again.GUID != guid {
		t.Errorf("second GUID: got %v, want %v", again.GUID, guid)
	}
}

func TestConfigConversions(t *testing.T) {
	tests := []struct {
		name   string
		change func(uc *UserConfig)
		check  func(t *testing.T, c server.Config)
	}{
		// 0 is left for Config.New, which adds the slack to the players.
		{"max connections from many players", func(uc *UserConfig) { uc.Server.MaxPlayers = 200 }, func(t *testing.T, c server.Config) {
			if got, want := c.RakNet.MaxConnections, 0; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"explicit max connections", func(uc *UserConfig) { uc.RakNet.MaxConnections = 50 }, func(t *testing.T, c server.Config) {
			if got, want := c.RakNet.MaxConnections, 50; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"timeout", func(uc *UserConfig) { uc.RakNet.Timeout = "1m30s" }, func(t *testing.T, c server.Config) {
			if got, want := c.RakNet.Timeout, 90*time.Second; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"education", func(uc *UserConfig) { uc.Server.Edition = "MCEE" }, func(t *testing.T, c server.Config) {
			if got, want := c.Status.Edition, motd.EditionEducation; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"login timeout", func(uc *UserConfig) { uc.Server.LoginTimeout = "2500ms" }, func(t *testing.T, c server.Config) {
			if got, want := c.LoginTimeout, 2500*time.Millisecond; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"connections per IP", func(uc *UserConfig) { uc.RakNet.MaxConnectionsPerIP = 3 }, func(t *testing.T, c server.Config) {
			if got, want := c.RakNet.MaxConnectionsPerIP, 3; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"no limit per IP", func(uc *UserConfig) { uc.RakNet.MaxConnectionsPerIP = 0 }, func(t *testing.T, c server.Config) {
			if got := c.RakNet.MaxConnectionsPerIP; got >= 0 {
				t.Errorf("got %v, want negative (no cap)", got)
			}
		}},
		{"proxy protocol", func(uc *UserConfig) {
			uc.Network.ProxyProtocol, uc.Network.TrustedProxies = true, []string{"203.0.113.0/24", "198.51.100.7", "2001:db8::1"}
		}, func(t *testing.T, c server.Config) {
			want := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("2001:db8::1/128")}
			if !c.Network.ProxyProtocol || !slices.Equal(c.Network.TrustedProxies, want) {
				t.Errorf("got %v %v, want true %v", c.Network.ProxyProtocol, c.Network.TrustedProxies, want)
			}
		}},
		{"no public address", func(uc *UserConfig) {}, func(t *testing.T, c server.Config) {
			if c.Network.PublicAddress.IsValid() {
				t.Errorf("got %v, want the zero value", c.Network.PublicAddress)
			}
		}},
		{"public address", func(uc *UserConfig) { uc.Network.PublicAddress = "203.0.113.5:25000" }, func(t *testing.T, c server.Config) {
			if got, want := c.Network.PublicAddress, netip.MustParseAddrPort("203.0.113.5:25000"); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"public IPv6 address", func(uc *UserConfig) { uc.Network.PublicAddress = "[2001:db8::7]:19133" }, func(t *testing.T, c server.Config) {
			if got, want := c.Network.PublicAddress, netip.MustParseAddrPort("[2001:db8::7]:19133"); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"mapped public address", func(uc *UserConfig) { uc.Network.PublicAddress = "[::ffff:203.0.113.5]:19132" }, func(t *testing.T, c server.Config) {
			if got, want := c.Network.PublicAddress, netip.MustParseAddrPort("203.0.113.5:19132"); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"shutdown grace", func(uc *UserConfig) { uc.Server.ShutdownGrace = "5m" }, func(t *testing.T, c server.Config) {
			if got, want := c.Shutdown.Grace, 5*time.Minute; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"memory budget", func(uc *UserConfig) { uc.RakNet.MemoryBudget = 32 << 20 }, func(t *testing.T, c server.Config) {
			if got, want := c.RakNet.MemoryBudget, 32<<20; got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uc := DefaultUserConfig()
			uc.Server.GUIDFile = filepath.Join(t.TempDir(), "guid")
			tc.change(&uc)
			c, err := uc.Config(nil)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			tc.check(t, c)
		})
	}
}

func TestConfigRejectsInvalid(t *testing.T) {
	uc := DefaultUserConfig()
	uc.Server.GUIDFile = filepath.Join(t.TempDir(), "guid")
	uc.RakNet.Timeout = "soon"
	if _, err := uc.Config(nil); err == nil || !strings.Contains(err.Error(), "raknet.timeout") {
		t.Errorf("got %v, want an error naming raknet.timeout", err)
	}
	if _, err := os.Stat(uc.Server.GUIDFile); err == nil {
		t.Errorf("GUID file: got created, want untouched for an invalid config")
	}
}

// TestLogLevelsParse checks every log.level Validate accepts is one
// zerolog.ParseLevel knows, as main relies on.
func TestLogLevelsParse(t *testing.T) {
	for _, l := range logLevels {
		if _, err := zerolog.ParseLevel(l); err != nil {
			t.Errorf("ParseLevel(%q): got %v, want nil", l, err)
		}
	}
}

func TestLoadOrCreateGUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server_guid")
	first, err := server.LoadOrCreateGUID(path)
	if err != nil {
		t.Fatalf("first call: got error %v, want nil", err)
	}
	if first <= 0 {
		t.Errorf("GUID: got %v, want positive", first)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read GUID file: %v", err)
	}
	if got, want := strings.TrimSpace(string(b)), strconv.FormatInt(first, 10); got != want {
		t.Errorf("file: got %q, want %q", got, want)
	}
	second, err := server.LoadOrCreateGUID(path)
	if err != nil {
		t.Fatalf("second call: got error %v, want nil", err)
	}
	if second != first {
		t.Errorf("second call: got %v, want %v", second, first)
	}

	other, err := server.LoadOrCreateGUID(filepath.Join(t.TempDir(), "server_guid"))
	if err != nil {
		t.Fatalf("other file: got error %v, want nil", err)
	}
	if other == first {
		t.Errorf("other file: got %v, the same GUID, want a new random one", other)
	}
}

func TestLoadOrCreateGUIDReadsExisting(t *testing.T) {
	tests := []struct {
		name, content string
		want          int64
	}{
		{"plain", "42", 42},
		{"newline", "13253860892328930\n", 13253860892328930},
		{"spaces", "  7 \r\n", 7},
		{"largest", "9223372036854775807", 9223372036854775807},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "guid")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := server.LoadOrCreateGUID(path)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoadOrCreateGUIDErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string // written to the file unless dir is set
		dir     bool   // make path a directory, so it cannot be read
		missing bool   // put path in a directory that does not exist
	}{
		{name: "garbled", content: "not a number"},
		{name: "empty", content: ""},
		{name: "negative", content: "-5"},
		{name: "too big", content: "18446744073709551615"},
		{name: "hex", content: "0x2a"},
		{name: "unreadable", dir: true},
		{name: "missing directory", missing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "guid")
			switch {
			case tc.dir:
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			case tc.missing:
				path = filepath.Join(filepath.Dir(path), "nope", "guid")
			default:
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := server.LoadOrCreateGUID(path)
			if err == nil {
				t.Fatalf("got %v, nil error, want an error", got)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name %v", err, path)
			}
		})
	}
}

func TestConfigFileUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want an error naming %v", err, path)
	}
}

func TestLoadConfigSyntaxError(t *testing.T) {
	_, err := Load(writeConfig(t, "[server\nname = 1\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v, want an error naming line 1", err)
	}
}
