package config

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/internal/servertest"
)

// TestConfigErrorsSayTheFix runs every problem Validate and Load
// report, one case per message, and checks each names its key and line and
// ends with a fix.
func TestConfigErrorsSayTheFix(t *testing.T) {
	tests := []struct {
		name, doc, key string
		line           int
	}{
		// Load's decoding.
		{"unknown key", "[server]\nnmae = \"x\"\n", "server.nmae", 2},
		{"unknown table", "[worlds]\nseed = 1\n", "worlds", 1},
		{"quoted number", "[server]\nmax_players = \"20\"\n", "server.max_players", 2},
		{"quoted bool", "[network]\nquery = \"yes\"\n", "network.query", 2},
		{"unquoted string", "[server]\nname = 5\n", "server.name", 2},
		{"number for a list", "[raknet]\nprotocol_versions = 11\n", "raknet.protocol_versions", 2},
		{"syntax", "[server]\nname = \"x\n", "", 2},

		// [network]
		{"both addresses empty", "[network]\naddress_v4 = \"\"\naddress_v6 = \"\"\n", "network.address_v4, network.address_v6", 2},
		{"v4 address a name", "[network]\naddress_v4 = \"localhost:19132\"\n", "network.address_v4", 2},
		{"v4 address without port", "[network]\naddress_v4 = \"0.0.0.0\"\n", "network.address_v4", 2},
		{"v4 address port too big", "[network]\naddress_v4 = \"0.0.0.0:70000\"\n", "network.address_v4", 2},
		{"v4 address an IPv6 one", "[network]\naddress_v4 = \"[::]:19132\"\n", "network.address_v4", 2},
		{"v6 address an IPv4 one", "[network]\naddress_v6 = \"0.0.0.0:19133\"\n", "network.address_v6", 2},
		{"v6 address mapped", "[network]\naddress_v6 = \"[::ffff:127.0.0.1]:19133\"\n", "network.address_v6", 2},
		{"trusted proxy", "[network]\n\ntrusted_proxies = [\"10.0.0.0/33\"]\n", "network.trusted_proxies[0]", 3},
		{"proxy protocol without proxies", "[network]\nproxy_protocol = true\n", "network.trusted_proxies, network.proxy_protocol", 2},
		{"public address without port", "[network]\npublic_address = \"203.0.113.5\"\n", "network.public_address", 2},
		{"public address port 0", "[network]\npublic_address = \"203.0.113.5:0\"\n", "network.public_address", 2},
		{"public address a name", "[network]\npublic_address = \"play.example:19132\"\n", "network.public_address", 2},
		{"public address zone", "[network]\npublic_address = \"[fe80::1%eth0]:19132\"\n", "network.public_address", 2},
		{"public address unspecified", "[network]\npublic_address = \"0.0.0.0:19132\"\n", "network.public_address", 2},
		{"public address multicast", "[network]\npublic_address = \"224.0.0.1:19132\"\n", "network.public_address", 2},
		{"TLS certificate without key", "[network]\nnethernet_tls_cert = \"cert.pem\"\n", "network.nethernet_tls_cert, network.nethernet_tls_key", 2},
		{"ICE port", "[network]\nnethernet_ice_port = 70000\n", "network.nethernet_ice_port", 2},
		{"sockets", "[network]\nsockets = 0\n", "network.sockets", 2},

		// [server]
		{"edition", "[server]\nedition = \"Bedrock\"\n", "server.edition", 2},
		{"game mode", "[server]\ngame_mode = \"survival\"\n", "server.game_mode", 2},
		{"max players", "[server]\nmax_players = 0\n", "server.max_players", 2},
		{"version", "[server]\nversion = \"latest\"\n", "server.version", 2},
		{"protocol out of range", "[server]\nprotocol = 0\n", "server.protocol", 2},
		{"protocol not accepted", "[server]\nprotocol = 800\n", "server.protocol, server.accepted_protocols", 2},
		{"no accepted protocols", "[server]\naccepted_protocols = []\n", "server.accepted_protocols", 2},
		{"accepted protocol out of range", "[server]\naccepted_protocols = [2193, 0]\n", "server.accepted_protocols[1]", 2},
		{"accepted protocol unknown", "[server]\naccepted_protocols = [2193, 2259]\n", "server.accepted_protocols[1]", 2},
		{"disconnect message placeholder", "[server]\ndisconnect_message = \"Bye {name}\"\n", "server.disconnect_message", 2},
		{"handler", "[server]\nhandler = \"hub\"\n", "server.handler", 2},
		{"greeting placeholder", "[server]\ngreeting = \"Hi {name}\"\n", "server.greeting", 2},
		{"login timeout not a duration", "[server]\nlogin_timeout = \"soon\"\n", "server.login_timeout", 2},
		{"login timeout zero", "[server]\nlogin_timeout = \"0s\"\n", "server.login_timeout", 2},
		{"login timeout too long", "[server]\nlogin_timeout = \"2m\"\n", "server.login_timeout", 2},
		{"shutdown grace not a duration", "[server]\nshutdown_grace = \"soon\"\n", "server.shutdown_grace", 2},
		{"shutdown grace too long", "[server]\nshutdown_grace = \"6m\"\n", "server.shutdown_grace", 2},
		{"discovery URL", "[server]\nauth_discovery_url = \"ftp://x\"\n", "server.auth_discovery_url", 2},
		{"issuer", "[server]\nauth_issuer = \"issuer\"\n", "server.auth_issuer", 2},
		{"allowlist file empty", "[server]\nallowlist_file = \"\"\n", "server.allowlist_file", 2},
		{"bans file empty", "[server]\nbans_file = \"\"\n", "server.bans_file", 2},
		{"name with a semicolon", "[server]\nname = \"a;b\"\n", "server.name", 2},
		{"level name with a newline", "[server]\nlevel_name = \"a\\nb\"\n", "server.level_name", 2},
		{"names too long", "[server]\nname = \"" + strings.Repeat("n", 200) + "\"\nlevel_name = \"" + strings.Repeat("l", 200) + "\"\n",
			"server.name, server.level_name", 2},

		// [log]
		{"log level", "[log]\nlevel = \"loud\"\n", "log.level", 2},
		{"log format", "[log]\nformat = \"xml\"\n", "log.format", 2},
		{"log file size", "[log]\nfile_max_mib = 0\n", "log.file_max_mib", 2},
		{"log file backups", "[log]\nfile_backups = -1\n", "log.file_backups", 2},

		// [raknet]
		{"MTU", "[raknet]\nmax_mtu = 5000\n", "raknet.max_mtu", 2},
		{"max connections negative", "[raknet]\nmax_connections = -1\n", "raknet.max_connections", 2},
		{"max connections below max players", "[raknet]\nmax_connections = 5\n", "raknet.max_connections", 2},
		{"timeout not a duration", "[raknet]\ntimeout = \"10\"\n", "raknet.timeout", 2},
		{"timeout zero", "[raknet]\ntimeout = \"0s\"\n", "raknet.timeout", 2},
		{"timeout too long", "[raknet]\ntimeout = \"6m\"\n", "raknet.timeout", 2},
		{"no RakNet versions", "[raknet]\nprotocol_versions = []\n", "raknet.protocol_versions", 2},
		{"RakNet version", "[raknet]\nprotocol_versions = [11, 12]\n", "raknet.protocol_versions[1]", 2},
		{"connections per IP", "[raknet]\nmax_connections_per_ip = -1\n", "raknet.max_connections_per_ip", 2},
		{"memory budget", "[raknet]\nmemory_budget = 1\n", "raknet.memory_budget", 2},

		// [metrics]
		{"metrics address", "[metrics]\naddress = \"localhost:9100\"\n", "metrics.address", 2},
		{"pprof without address", "[metrics]\npprof = true\n", "metrics.pprof, metrics.address", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.doc))
			servertest.Fixes(t, err, tc.key, tc.line)
		})
	}
}

// TestConfigFileErrorsSayTheFix checks the files keys name (GUID, cookie
// secret, NetherNet identity, log file) are reported, when they cannot be
// used, with the key, its line and the fix.
func TestConfigFileErrorsSayTheFix(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	guid := filepath.Join(dir, "ok.guid")
	tests := []struct {
		name, doc, key string
		logger         bool // the error is Logger's, not Config's
	}{
		{"GUID file a directory", "[server]\nguid_file = '" + dir + "'\n", "server.guid_file", false},
		{"GUID file garbled", "[server]\nguid_file = '" + garbage + "'\n", "server.guid_file", false},
		{"GUID file in a missing directory", "[server]\nguid_file = '" + filepath.Join(dir, "no", "guid") + "'\n", "server.guid_file", false},
		{"cookie secret a directory", "[network]\ncookie_secret_file = '" + dir + "'\n[server]\nguid_file = '" + guid + "'\n", "network.cookie_secret_file", false},
		{"cookie secret garbled", "[network]\ncookie_secret_file = '" + garbage + "'\n[server]\nguid_file = '" + guid + "'\n", "network.cookie_secret_file", false},
		{"identity key a directory", "[network]\nnethernet_identity_file = '" + dir + "'\n[server]\nguid_file = '" + guid + "'\n", "network.nethernet_identity_file", false},
		{"identity key garbled", "[network]\nnethernet_identity_file = '" + garbage + "'\n[server]\nguid_file = '" + guid + "'\n", "network.nethernet_identity_file", false},
		{"log file a directory", "[log]\nfile = '" + dir + "'\n", "log.file", true},
		{"log file under a file", "[log]\nfile = '" + filepath.Join(garbage, "log") + "'\n", "log.file", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uc, err := Load(writeConfig(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if tc.logger {
				_, c, err := uc.logger(io.Discard, false)
				if c != nil {
					_ = c.Close()
				}
				servertest.Fixes(t, err, tc.key, 2)
				return
			}
			_, err = uc.Config(nil)
			servertest.Fixes(t, err, tc.key, 2)
		})
	}
}

// TestAccessFileErrorsSayTheFix checks an allowlist or ban file that
// cannot be used stops Listen with its key and the fix.
func TestAccessFileErrorsSayTheFix(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	noName := filepath.Join(dir, "noname.json")
	if err := os.WriteFile(noName, []byte(`[{"reason": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key   string
		allow, bans string
	}{
		{"allowlist not JSON", "server.allowlist_file", bad, ""},
		{"allowlist entry without a player", "server.allowlist_file", noName, ""},
		{"allowlist a directory", "server.allowlist_file", dir, ""},
		{"allowlist in a missing directory", "server.allowlist_file", filepath.Join(dir, "no", "a.json"), ""},
		{"bans not JSON", "server.bans_file", "", bad},
		{"ban without a player", "server.bans_file", "", noName},
		{"bans a directory", "server.bans_file", "", dir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.Config{
				AuthenticationDisabled: true,
				Network: server.NetworkConfig{
					AddressV4: "127.0.0.1:0",
				},
				Access: access.Config{
					AllowlistFile: tc.allow,
					BansFile:      tc.bans,
					PollInterval:  -1,
				},
			}.New()
			err := srv.Listen()
			_ = srv.Close()
			servertest.Fixes(t, err, tc.key, 0)
		})
	}
}

// TestReloadErrorsSayTheFix checks an access file broken while the server
// runs is reported by Reload with its key and the fix too.
func TestReloadErrorsSayTheFix(t *testing.T) {
	dir := t.TempDir()
	allow, bans := filepath.Join(dir, "allowlist.json"), filepath.Join(dir, "bans.json")
	srv := server.Config{
		AuthenticationDisabled: true,
		Network: server.NetworkConfig{
			AddressV4: "127.0.0.1:0",
		},
		Access: access.Config{
			AllowlistFile: allow,
			BansFile:      bans,
			PollInterval:  -1,
		},
	}.New()
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct{ path, key string }{{allow, "server.allowlist_file"}, {bans, "server.bans_file"}} {
		if err := os.WriteFile(tc.path, []byte(`[{"name":`), 0o644); err != nil {
			t.Fatal(err)
		}
		servertest.Fixes(t, srv.Reload(), tc.key, 0)
		if err := os.WriteFile(tc.path, []byte(`[]`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Reload(); err != nil {
		t.Errorf("Reload of fixed files: got %v, want nil", err)
	}
}

// TestListenErrorsNameLine checks a listener address that cannot be bound,
// and an access file that does not parse, found once the server starts,
// point at the line of the configuration file that set them.
func TestListenErrorsNameLine(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := func(addr, allow string) string {
		return "[network]\naddress_v4 = \"" + addr + "\"\naddress_v6 = \"\"\nnethernet = false\n" +
			"[server]\nonline_mode = false\nguid_file = '" + filepath.Join(dir, "guid") + "'\n" +
			"allowlist_file = '" + allow + "'\n"
	}
	for _, tc := range []struct {
		name, doc, key string
		line           int
	}{
		{"port in use", doc(pc.LocalAddr().String(), filepath.Join(dir, "allowlist.json")), "network.address_v4", 2},
		{"allowlist not JSON", doc("127.0.0.1:0", bad), "server.allowlist_file", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uc, err := Load(writeConfig(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			c, err := uc.Config(nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := c.New()
			err = srv.Listen()
			_ = srv.Close()
			servertest.Fixes(t, err, tc.key, tc.line)
		})
	}
}
