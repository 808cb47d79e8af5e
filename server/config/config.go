package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/internal/file"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/lobby"
	"github.com/pelletier/go-toml/v2"
	"github.com/rs/zerolog"
)

// Limits on configuration values. RakNet's MTU bounds and the socket count
// are raknet's own (raknet.MinMTU, raknet.MaxMTU, raknet.MaxSockets). The
// timeout cap keeps a misconfigured server from holding dead sessions for
// hours.
const (
	maxTimeout = 5 * time.Minute
	// maxLoginTimeout bounds server.login_timeout: a Login of a few MiB
	// arrives within seconds even on a poor link, and a connection that
	// has not logged in holds a session and its pre-login memory share
	// while it waits.
	maxLoginTimeout = time.Minute
	// minMemoryBudget and maxMemoryBudget bound raknet.memory_budget. Below
	// 4 MiB a few players logging in at once (each Login a few hundred KiB
	// on the wire) would not fit; 64 GiB is beyond what any peers should be
	// let hold, and keeps the count far from the transport's own limits.
	minMemoryBudget = 4 << 20
	maxMemoryBudget = 64 << 30
)

// UserConfig is the configuration as written in config.toml, one struct per
// TOML table. Its zero value is not valid; start from DefaultUserConfig or
// Load. Check it with Validate and turn it into runtime values with
// Config. A UserConfig is a plain value with no internal locking.
//
// UserConfig and DefaultUserConfig are the one source of the configuration
// file: each key's name and comment are the field's toml and comment tags,
// its default is set in DefaultUserConfig, and DefaultFile encodes
// the two into the commented config.toml. To add a key:
//
//  1. add a field with its toml tag and a comment tag saying what it does,
//     its unit, range and what 0 or "" means (one long line: the file wraps
//     it at 80 columns; "\n" starts a new paragraph);
//  2. set its default in DefaultUserConfig, from the owning package's
//     exported constant where there is one;
//  3. check it in Validate (check.go), naming the key and the fix;
//  4. carry it into a server.Config field, in the nested struct of its
//     table, in UserConfig.Config;
//  5. run go test ./server/config -run TestConfigFile -update, which rewrites the
//     repository's config.toml, and add the key's row to README.md's
//     configuration table (TestREADMEConfigTable names the row it wants).
type UserConfig struct {
	Network struct {
		AddressV4          string   `toml:"address_v4" comment:"UDP address for IPv4 clients, \"host:port\". An empty string disables IPv4."`
		AddressV6          string   `toml:"address_v6" comment:"UDP address for IPv6 clients, \"[host]:port\". An empty string disables IPv6. At least one of address_v4 and address_v6 must be set."`
		LANDiscovery       bool     `toml:"lan_discovery" comment:"Also answer LAN discovery pings on the standard ports (19132 for IPv4, 19133 for IPv6) when the game ports above differ, so that clients on the local network list the server. The pong points them at the game ports. With nethernet, NetherNet LAN discovery is answered on UDP 7551 too, under the same GUID."`
		Query              bool     `toml:"query" comment:"Answer the Query protocol (GameSpy4, as PocketMine-MP does) on the game ports, so server lists and tools can read the name, version and player names. A stat goes only to a client that echoed the token sent to it."`
		CookieSecretFile   string   `toml:"cookie_secret_file" comment:"File holding the secret that keys RakNet's handshake cookies and the query tokens, created with a random secret if missing. Give servers behind one load balancer the same file so they accept each other's cookies. Empty means a new random secret at each start. A relative path is relative to this file's directory."`
		ProxyProtocol      bool     `toml:"proxy_protocol" comment:"Take the PROXY protocol header (v2, or v1 as nginx sends it) that tunnels, balancers and DDoS filters (playit.gg, frp, nginx, TCPShield-style) put on the datagrams they forward, and see each client by the address it names. Clients not behind a proxy still connect."`
		TrustedProxies     []string `toml:"trusted_proxies" comment:"The proxies allowed to send PROXY headers, as CIDR prefixes (\"203.0.113.0/24\", \"2001:db8::/32\") or single IPs; proxy_protocol needs at least one. A header from any other address is refused. Only the proxies should be able to send from these addresses: whoever can may claim to be any client. Their own addresses are never limited per IP, on RakNet or NetherNet: the players of a proxy that sends no headers share its address."`
		Sockets            int      `toml:"sockets" comment:"UDP sockets opened on each address (1-64), each read by its own thread of work. More than 1 shares the address with SO_REUSEPORT, so that receiving spreads over CPU cores; Linux only (elsewhere 1 is used). Worth it only on a machine with cores to spare under heavy traffic."`
		PublicAddress      string   `toml:"public_address" comment:"The address players reach this server at, \"IP:port\", when it differs from the one it listens on: a load balancer's, a tunnel's or a NAT's. Its port is the one pongs advertise, and clients connect to the advertised port, so behind a balancer on another port they would otherwise bypass it. Empty means the listening ports."`
		Encryption         bool     `toml:"encryption" comment:"Encrypt every session after its Login with the Bedrock handshake (AES-256, as vanilla servers do). Keep it on in online mode: the handshake proves the client holds the key its Login names, so a captured Login cannot be replayed."`
		NetherNet          bool     `toml:"nethernet" comment:"Also serve NetherNet, the WebRTC transport Bedrock 1.26.50 and later try first and 1.26.60 and later use alone: HTTP signalling on TCP at the IPv4 game port's number (or the IPv6 one's), the peer connections over UDP (see nethernet_ice_port). Without it current clients cannot join."`
		NetherNetTLSCert   string   `toml:"nethernet_tls_cert" comment:"PEM certificate file for NetherNet signalling over HTTPS; with nethernet_tls_key. A certificate clients trust for the name they type spares them the one-time prompt to trust the server's key. Empty means plain HTTP. A relative path is relative to this file's directory."`
		NetherNetTLSKey    string   `toml:"nethernet_tls_key" comment:"PEM private key file of nethernet_tls_cert."`
		NetherNetIDFile    string   `toml:"nethernet_identity_file" comment:"File holding the server's NetherNet identity, a P-384 key created (mode 0600) if missing; clients asked to trust the server trust this key, so keep it. Empty means a new key at each start, and a new prompt. A relative path is relative to the GUID file's directory."`
		NetherNetICEPort   int      `toml:"nethernet_ice_port" comment:"UDP port of NetherNet's peer connections: 0 shares the game port's socket with RakNet (the datagrams are told apart by their first bytes), so a firewall opens one UDP and one TCP port, both the game port; 1-65535 opens a socket of its own on that port."`
		NetherNetAdvertise string   `toml:"nethernet_advertise_address" comment:"The address, \"IP:port\", this server's NetherNet peer connections advertise to players (its ICE candidates), when it differs from public_address: behind a load balancer, public_address is the balancer's, which players type and pongs advertise, while each instance must advertise an address of its own that reaches its UDP socket. The port must be the one NetherNet's peer connections use (the game port, or nethernet_ice_port): candidates keep their port, so a NAT in front must forward it unchanged. Empty means public_address's IP."`
	} `toml:"network"`
	Server struct {
		Name              string `toml:"name" comment:"First MOTD line: the server name shown in the server list. Minecraft colour codes (§) are allowed; ';', '\\' and control characters are not."`
		LevelName         string `toml:"level_name" comment:"Second MOTD line: the world name shown under the server name."`
		Edition           string `toml:"edition" comment:"\"MCPE\" for Bedrock Edition, \"MCEE\" for Education Edition."`
		GameMode          string `toml:"game_mode" comment:"Game mode advertised in the MOTD: \"Survival\", \"Creative\", \"Adventure\" or \"Spectator\". Clients show it but it changes nothing else."`
		MaxPlayers        int    `toml:"max_players" comment:"Most players online at once (at least 1)."`
		Version           string `toml:"version" comment:"Game version advertised in the MOTD, in network form (\"1.26.50\")."`
		Protocol          int    `toml:"protocol" comment:"Network protocol advertised in the MOTD. Must be in accepted_protocols."`
		AcceptedProtocols []int  `toml:"accepted_protocols" comment:"Network protocols a joining client may speak: any of those this build knows (2193 = 1.26.50-1.26.52, 2225 = 1.26.60-1.26.66)."`
		DisconnectMessage string `toml:"disconnect_message" comment:"Message a player sees when the server disconnects them (handler = \"gate\"). {player} is replaced by the player's name; no other {…} placeholder is recognised."`
		ShutdownMessage   string `toml:"shutdown_message" comment:"Message every player sees when the server shuts down (Ctrl-C, SIGTERM)."`
		ShutdownGrace     string `toml:"shutdown_grace" comment:"On Ctrl-C or SIGTERM, how long to drain before closing, as a Go duration (at most 5m): /readyz on the metrics address answers 503 so that balancers and orchestrators send new players elsewhere, players logging in are told the server is restarting, and the players in are told too and keep playing until it ends. \"0s\" closes at once. A second signal ends it."`
		Handler           string `toml:"handler" comment:"What a player meets once logged in: \"gate\" disconnects them with disconnect_message; \"lobby\" lets them into an empty world where they float as spectators, see who joins and leaves, chat, and use /list and /leave."`
		Greeting          string `toml:"greeting" comment:"Chat message a player gets on entering the lobby (handler = \"lobby\"). {player} is replaced by the player's name."`
		GUIDFile          string `toml:"guid_file" comment:"File that keeps the server GUID stable across restarts, so clients do not list the server twice. Empty means this file's name with .guid for its extension (config.toml keeps its GUID in config.guid), so that configurations side by side in one directory have GUIDs of their own. A relative path is relative to this file's directory. Servers behind one load balancer share one GUID: give them the same file's contents."`
		LoginTimeout      string `toml:"login_timeout" comment:"How long a client has, once connected, to log in before it is disconnected with \"Login timed out.\", as a Go duration. More than 0 and at most 1m."`
		OnlineMode        bool   `toml:"online_mode" comment:"Verify every player's Xbox Live sign-in with the Minecraft authentication service, as BDS's online-mode does: a player who is not signed in is told \"You must be signed in to Xbox Live to join.\" The keys are fetched in the background; until they are, players are told the server cannot verify sign-ins right now. false trusts whatever name and XUID a client claims: only for bots, tests, and proxies that verify players themselves."`
		AuthDiscoveryURL  string `toml:"auth_discovery_url" comment:"Discovery document of the Minecraft services, which names the issuer of the tokens online mode verifies."`
		AuthIssuer        string `toml:"auth_issuer" comment:"Token issuer whose keys are fetched when discovery fails. Empty means none."`
		Allowlist         bool   `toml:"allowlist" comment:"Admit only the players allowlist_file lists. Names and XUIDs are proven only in online mode."`
		AllowlistFile     string `toml:"allowlist_file" comment:"The allowlist, in BDS's allowlist.json format ([{\"name\": \"Steve\", \"xuid\": \"…\"}]), created empty if missing and reloaded when it changes, on SIGHUP and on the console's reload. A relative path is relative to this file's directory."`
		BansFile          string `toml:"bans_file" comment:"The ban list: a JSON array of {\"xuid\", \"name\" or \"ip\" (an address or CIDR prefix), \"reason\", \"expires\" (RFC 3339)}, created empty if missing and reloaded as allowlist_file is. A banned player online is disconnected with the reason."`
	} `toml:"server"`
	Log struct {
		Level       string `toml:"level" comment:"Least severe level written: \"trace\", \"debug\", \"info\", \"warn\" or \"error\"."`
		Format      string `toml:"format" comment:"\"console\" for human-readable lines (coloured only on a terminal), \"json\" for one JSON object per line."`
		File        string `toml:"file" comment:"File the log is written to instead of standard error, rotated by size. Empty means standard error, for a terminal or a process manager such as systemd. A relative path is relative to this file's directory, and the directory is created if missing."`
		FileMaxMiB  int    `toml:"file_max_mib" comment:"Size in MiB at which log.file is rotated: renamed with the time in its name and started afresh (1-10240)."`
		FileBackups int    `toml:"file_backups" comment:"Rotated log files kept beside log.file; older ones are deleted. 0 keeps them all."`
	} `toml:"log"`
	RakNet struct {
		MaxMTU              int    `toml:"max_mtu" comment:"Largest RakNet datagram in bytes, offered during MTU discovery (576-1492)."`
		MaxConnections      int    `toml:"max_connections" comment:"Most RakNet connections at once on each listener. 0 means max_players plus 10% (at least 4 more), so that a client over the limit still sees the \"server full\" message."`
		Timeout             string `toml:"timeout" comment:"Drop a connection after hearing nothing from the peer for this long, as a Go duration: \"10s\", \"1m30s\". More than 0 and at most 5m."`
		ProtocolVersions    []int  `toml:"protocol_versions" comment:"RakNet protocol versions accepted in OpenConnectionRequest1: 11 (Minecraft since 1.19.30) and 10 (older versions, PrismarineJS clients). Only these two can be listed; leave one out to refuse its clients."`
		MaxConnectionsPerIP int    `toml:"max_connections_per_ip" comment:"Most established connections at once from one IP address on each listener. Generous, because households and LAN parties share one address. 0 means no limit."`
		MemoryBudget        int    `toml:"memory_budget" comment:"Bytes that all peers of a listener together may make it hold at once: messages being reassembled, waiting for their turn or for the server to read them. 134217728 is 128 MiB; at least 4 MiB, at most 64 GiB."`
	} `toml:"raknet"`
	Metrics struct {
		Address string `toml:"address" comment:"TCP address, \"host:port\", of an HTTP server of Prometheus metrics at /metrics, such as \"127.0.0.1:9100\". An empty string serves none. Whoever can reach it sees the server's traffic figures: keep it on a private address."`
		Pprof   bool   `toml:"pprof" comment:"Also serve Go's profiler at /debug/pprof/ on that address, for debugging: a profile costs CPU while it runs. Needs metrics.address."`
	} `toml:"metrics"`

	// dir is the directory of the file the config was loaded from, against
	// which relative paths are resolved. Empty means the working
	// directory.
	dir string
	// name is that file's name without its extension, which an empty
	// guid_file is named after; empty means "config".
	name string
	// lines is the line that set each key in that file, by dotted name,
	// for errors to point at; nil when not loaded from a file.
	lines map[string]int
}

// DefaultUserConfig returns the configuration config.toml holds when first
// written: every key at its default. It is the one place defaults are set;
// Config.New takes the defaults of zero fields from it too.
func DefaultUserConfig() UserConfig {
	var uc UserConfig
	uc.Network.AddressV4 = server.DefaultAddressV4
	uc.Network.AddressV6 = server.DefaultAddressV6
	uc.Network.LANDiscovery = true
	uc.Network.Query = true
	uc.Network.TrustedProxies = []string{}
	uc.Network.Sockets = 1
	uc.Network.Encryption = true
	uc.Network.NetherNet = true
	uc.Network.NetherNetIDFile = "nethernet_identity"
	uc.Server.Name = server.DefaultName
	uc.Server.LevelName = server.DefaultLevelName
	uc.Server.Edition = string(motd.EditionBedrock)
	uc.Server.GameMode = server.DefaultGameMode
	uc.Server.MaxPlayers = server.DefaultMaxPlayers
	uc.Server.Version = session.CurrentVersion
	uc.Server.Protocol = int(session.CurrentProtocol)
	uc.Server.AcceptedProtocols = nil
	for _, p := range session.KnownProtocols() {
		uc.Server.AcceptedProtocols = append(uc.Server.AcceptedProtocols, int(p))
	}
	uc.Server.DisconnectMessage = session.DefaultGateMessage
	uc.Server.ShutdownMessage = server.DefaultShutdownMessage
	uc.Server.ShutdownGrace = "0s"
	uc.Server.Handler = string(server.HandlerGate)
	uc.Server.Greeting = lobby.DefaultGreeting
	uc.Server.GUIDFile = ""
	uc.Server.LoginTimeout = session.DefaultLoginTimeout.String()
	uc.Server.OnlineMode = true
	uc.Server.AuthDiscoveryURL = auth.DefaultDiscoveryURL
	uc.Server.AuthIssuer = auth.DefaultIssuer
	uc.Server.AllowlistFile = "allowlist.json"
	uc.Server.BansFile = "bans.json"
	uc.Log.Level = "info"
	uc.Log.Format = "console"
	uc.Log.File = ""
	uc.Log.FileMaxMiB = 100
	uc.Log.FileBackups = 5
	uc.RakNet.MaxMTU = raknet.DefaultMaxMTU
	uc.RakNet.MaxConnections = 0
	uc.RakNet.Timeout = raknet.DefaultTimeout.String()
	for _, v := range raknet.DefaultProtocolVersions() {
		uc.RakNet.ProtocolVersions = append(uc.RakNet.ProtocolVersions, int(v))
	}
	uc.RakNet.MaxConnectionsPerIP = raknet.DefaultMaxConnectionsPerIP
	uc.RakNet.MemoryBudget = raknet.DefaultMemoryBudget
	return uc
}

// configHeader opens the default config.toml.
const configHeader = `# Basalt configuration. Every key is optional; a missing key takes its default.
# An unknown key is an error, so a typo cannot go unnoticed.

`

// DefaultFile returns the default config.toml: DefaultUserConfig
// encoded as TOML, each key preceded by its comment, wrapped at 80 columns.
// Load writes it when the file is missing, and the repository's
// config.toml is this text.
func DefaultFile() []byte {
	var b bytes.Buffer
	b.WriteString(configHeader)
	enc := toml.NewEncoder(&b)
	enc.SetIndentTables(false)
	if err := enc.Encode(DefaultUserConfig()); err != nil {
		panic("config: encode default config: " + err.Error()) // a bad tag: a programmer's error
	}
	var out []byte
	for line := range strings.Lines(b.String()) {
		out = appendWrapped(out, strings.TrimSuffix(line, "\n"))
	}
	return out
}

// appendWrapped appends line and a newline to b, breaking a comment line
// longer than 80 columns between words into several comment lines.
func appendWrapped(b []byte, line string) []byte {
	const width = 80
	text, ok := strings.CutPrefix(line, "# ")
	if !ok || utf8.RuneCountInString(line) <= width {
		return append(append(b, line...), '\n')
	}
	n := 0
	for i, w := range strings.Fields(text) {
		wl := utf8.RuneCountInString(w)
		switch {
		case i == 0:
			b = append(b, "# "...)
			n = 2
		case n+1+wl > width:
			b = append(b, "\n# "...)
			n = 2
		default:
			b = append(b, ' ')
			n++
		}
		b = append(b, w...)
		n += wl
	}
	return append(b, '\n')
}

// Load reads the TOML file at path over the defaults, so a missing key
// keeps its default, and validates the result. If the file does not exist it
// is created with the commented default configuration and the defaults are
// returned. Decoding is strict: an unknown key is an error naming the key and
// its line, and so is a value of the wrong type.
func Load(path string) (UserConfig, error) {
	uc := DefaultUserConfig()
	uc.dir = filepath.Dir(path)
	uc.name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := file.CreateNew(path, DefaultFile(), 0o644); err == nil {
			uc.lines = keyLines(DefaultFile())
			return uc, nil
		} else if !errors.Is(err, fs.ErrExist) {
			return UserConfig{}, fmt.Errorf("write default config: %w; make its directory writable, or give the path of an existing file", err)
		}
		// Someone else created it meanwhile: read theirs.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return UserConfig{}, fmt.Errorf("load config: %w; give the path of a readable TOML file, or of none to have it created", err)
	}
	if err := decodeStrict(data, &uc); err != nil {
		return UserConfig{}, fmt.Errorf("load config %s: %w", path, err)
	}
	uc.lines = keyLines(data)
	if err := uc.Validate(); err != nil {
		return UserConfig{}, fmt.Errorf("load config %s: %w", path, err)
	}
	return uc, nil
}

// decodeStrict decodes a TOML document into v, rejecting unknown keys, and
// rewrites the library's errors to name the key and line.
func decodeStrict(data []byte, v any) error {
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil {
		return nil
	}
	if sm, ok := errors.AsType[*toml.StrictMissingError](err); ok {
		errs := make([]error, len(sm.Errors))
		for i, e := range sm.Errors {
			line, _ := e.Position()
			what := "key"
			if strings.Contains(e.Error(), "table") { // "missing table"
				what = "table"
			}
			errs[i] = fmt.Errorf("line %d: unknown %s %s; remove it, or correct its spelling to one of the %ss a new config.toml lists", line, what, strings.Join(e.Key(), "."), what)
		}
		return errors.Join(errs...)
	}
	if de, ok := errors.AsType[*toml.DecodeError](err); ok {
		line, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		// "cannot decode TOML string into struct field <Go type>.Name of
		// type int" names Go types the operator never sees; keep the
		// TOML side and the wanted type.
		if i := strings.Index(msg, " into struct field "); i >= 0 {
			if j := strings.LastIndex(msg, " of type "); j > i {
				msg = msg[:i] + " into " + msg[j+len(" of type "):]
			}
		}
		if key := de.Key(); len(key) > 0 && strings.HasSuffix(msg, " is already defined") {
			// go-toml names the key without its table: put it back.
			name := strings.Join(key, ".")
			if t := tableAt(data, line); t != "" && !strings.Contains(name, ".") {
				name = t + "." + name
			}
			return fmt.Errorf("line %d: %s is set twice; delete one of its two lines", line, name)
		}
		if key := de.Key(); len(key) > 0 {
			return fmt.Errorf("line %d: key %s: %s; %s", line, strings.Join(key, "."), msg, typeFix(msg))
		}
		return fmt.Errorf("line %d: %s; fix the TOML syntax on that line: strings in quotes ('like this' or \"like this\"), tables as [name]", line, msg)
	}
	return err
}

// tableAt returns the name of the TOML table that line (1-based) of data
// is in: the last [table] header above it, "" for the top level.
func tableAt(data []byte, line int) string {
	table := ""
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 >= line {
			break
		}
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "[[") {
			if name, _, ok := strings.Cut(l[1:], "]"); ok {
				table = strings.TrimSpace(name)
			}
		}
	}
	return table
}

// typeFix says how to write a value the decoder refused, from its message
// ("cannot decode TOML string into int").
func typeFix(msg string) string {
	switch {
	case strings.HasPrefix(msg, "cannot decode TOML string into int"):
		return "write the number without quotes"
	case strings.HasSuffix(msg, "into bool"):
		return "write true or false, without quotes"
	case strings.HasSuffix(msg, "into string"):
		return "write it in quotes, 'like this' or \"like this\""
	case strings.Contains(msg, "into []"):
		return "write it as a list in brackets, such as [1, 2]"
	case strings.Contains(msg, "out of range") || strings.Contains(msg, "overflow"):
		return "write a smaller number"
	}
	return "write a value of the type its default in a new config.toml has"
}

// Config validates uc and turns it into runtime values: durations parsed,
// the GUID file path resolved against the config file's directory and the
// GUID loaded (or created) with server.LoadOrCreateGUID,
// max_connections_per_ip 0 (no cap) made negative. log becomes Config.Log and is used for the
// notes Config itself writes; nil discards them.
func (uc UserConfig) Config(log *zerolog.Logger) (server.Config, error) {
	if err := uc.Validate(); err != nil {
		return server.Config{}, fmt.Errorf("invalid config: %w", err)
	}
	l := log
	if l == nil {
		nop := zerolog.Nop()
		l = &nop
	}
	c := server.Config{
		Log: log,
		Network: server.NetworkConfig{
			AddressV4:     uc.Network.AddressV4,
			AddressV6:     uc.Network.AddressV6,
			LANDiscovery:  uc.Network.LANDiscovery,
			Query:         uc.Network.Query,
			PublicAddress: mustPublicAddress(uc.Network.PublicAddress),
		},
		RakNet: server.RakNetConfig{
			Sockets:        uc.Network.Sockets,
			MaxMTU:         uc.RakNet.MaxMTU,
			MaxConnections: uc.RakNet.MaxConnections,
			MemoryBudget:   uc.RakNet.MemoryBudget,
		},
		EncryptionDisabled: !uc.Network.Encryption,
		NetherNet: server.NetherNetConfig{
			Enabled:          uc.Network.NetherNet,
			ICEPort:          uc.Network.NetherNetICEPort,
			AdvertiseAddress: mustPublicAddress(uc.Network.NetherNetAdvertise),
		},
		Status: server.StatusConfig{
			Name:       uc.Server.Name,
			LevelName:  uc.Server.LevelName,
			Edition:    motd.Edition(uc.Server.Edition),
			GameMode:   uc.Server.GameMode,
			MaxPlayers: uc.Server.MaxPlayers,
			Version:    uc.Server.Version,
			Protocol:   int32(uc.Server.Protocol),
		},
		DisconnectMessage: uc.Server.DisconnectMessage,
		Shutdown: server.ShutdownConfig{
			Message: uc.Server.ShutdownMessage,
		},
		Handler: server.BuiltinHandler(uc.Server.Handler),
		Lobby: lobby.Config{
			Greeting: uc.Server.Greeting,
		},
		GUIDFile: uc.Server.GUIDFile,
		Metrics: server.MetricsConfig{
			Address: uc.Metrics.Address,
			Pprof:   uc.Metrics.Pprof,
		},
	}
	for _, p := range uc.Server.AcceptedProtocols {
		c.AcceptedProtocols = append(c.AcceptedProtocols, int32(p))
	}
	c.Network.ProxyProtocol = uc.Network.ProxyProtocol
	for _, p := range uc.Network.TrustedProxies {
		pp, _ := parseProxyPrefix(p) // checked by Validate
		c.Network.TrustedProxies = append(c.Network.TrustedProxies, pp)
	}
	for _, v := range uc.RakNet.ProtocolVersions {
		c.RakNet.ProtocolVersions = append(c.RakNet.ProtocolVersions, byte(v))
	}
	// Checked by Validate.
	c.RakNet.Timeout, _ = time.ParseDuration(uc.RakNet.Timeout)
	c.LoginTimeout, _ = time.ParseDuration(uc.Server.LoginTimeout)
	c.Shutdown.Grace, _ = time.ParseDuration(uc.Server.ShutdownGrace)
	c.RakNet.MaxConnectionsPerIP = uc.RakNet.MaxConnectionsPerIP
	if c.RakNet.MaxConnectionsPerIP == 0 {
		c.RakNet.MaxConnectionsPerIP = -1 // no cap, in ListenConfig's terms
	}
	if c.GUIDFile == "" {
		c.GUIDFile = cmp.Or(uc.name, "config") + ".guid"
	}
	c.GUIDFile = uc.resolve(c.GUIDFile)
	c.KeyLines = uc.lines
	c.AuthenticationDisabled = !uc.Server.OnlineMode
	c.Auth.DiscoveryURL, c.Auth.Issuer = uc.Server.AuthDiscoveryURL, uc.Server.AuthIssuer
	if c.Auth.Issuer == "" {
		c.Auth.Issuer = "-" // none, in auth.Config's terms
	}
	c.Access.Allowlist = uc.Server.Allowlist
	c.Access.AllowlistFile, c.Access.BansFile = uc.resolve(uc.Server.AllowlistFile), uc.resolve(uc.Server.BansFile)
	_, statErr := os.Stat(c.GUIDFile)
	guid, err := server.LoadOrCreateGUID(c.GUIDFile)
	if err != nil {
		return server.Config{}, uc.withLines(server.FileError("server.guid_file", err, ""))
	}
	c.GUID = guid
	if errors.Is(statErr, fs.ErrNotExist) {
		l.Info().Str("path", c.GUIDFile).Int64("guid", guid).Msg("created server GUID file")
	}
	if err := loadCookieSecret(&c, uc.Network.CookieSecretFile, uc.dir, l); err != nil {
		return server.Config{}, uc.withLines(err)
	}
	if err := loadNetherNet(&c, uc, l); err != nil {
		return server.Config{}, uc.withLines(err)
	}
	return c, nil
}

// resolve returns path relative to the config file's directory, unless it
// is absolute.
func (uc UserConfig) resolve(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(uc.dir, path)
}

// mustPublicAddress parses a network.public_address Validate accepted.
func mustPublicAddress(s string) netip.AddrPort {
	ap, _ := parsePublicAddress(s) // checked by Validate
	return ap
}
