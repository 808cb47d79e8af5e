package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
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
// LoadConfig. Check it with Validate and turn it into runtime values with
// Config. A UserConfig is a plain value with no internal locking.
//
// UserConfig and DefaultUserConfig are the one source of the configuration
// file: each key's name and comment are the field's toml and comment tags,
// its default is set in DefaultUserConfig, and DefaultConfigFile encodes
// the two into the commented config.toml. To add a key:
//
//  1. add a field with its toml tag and a comment tag saying what it does,
//     its unit, range and what 0 or "" means (one long line: the file wraps
//     it at 80 columns; "\n" starts a new paragraph);
//  2. set its default in DefaultUserConfig, from the owning package's
//     exported constant where there is one;
//  3. check it in Validate (config_check.go), naming the key and the fix;
//  4. carry it into a Config field in UserConfig.Config;
//  5. run go test ./server -run TestConfigFile -update, which rewrites the
//     repository's config.toml, and add the key's row to README.md's
//     configuration table (TestREADMEConfigTable names the row it wants).
type UserConfig struct {
	Network struct {
		AddressV4        string   `toml:"address_v4" comment:"UDP address for IPv4 clients, \"host:port\". An empty string disables IPv4."`
		AddressV6        string   `toml:"address_v6" comment:"UDP address for IPv6 clients, \"[host]:port\". An empty string disables IPv6. At least one of address_v4 and address_v6 must be set."`
		LANDiscovery     bool     `toml:"lan_discovery" comment:"Also answer LAN discovery pings on the standard ports (19132 for IPv4, 19133 for IPv6) when the game ports above differ, so that clients on the local network list the server. The pong points them at the game ports. With nethernet, NetherNet LAN discovery is answered on UDP 7551 too, under the same GUID."`
		Query            bool     `toml:"query" comment:"Answer the Query protocol (GameSpy4, as PocketMine-MP does) on the game ports, so server lists and tools can read the name, version and player names. A stat goes only to a client that echoed the token sent to it."`
		CookieSecretFile string   `toml:"cookie_secret_file" comment:"File holding the secret that keys RakNet's handshake cookies and the query tokens, created with a random secret if missing. Give servers behind one load balancer the same file so they accept each other's cookies. Empty means a new random secret at each start. A relative path is relative to this file's directory."`
		ProxyProtocol    bool     `toml:"proxy_protocol" comment:"Take the PROXY protocol header (v2, or v1 as nginx sends it) that tunnels, balancers and DDoS filters (playit.gg, frp, nginx, TCPShield-style) put on the datagrams they forward, and see each client by the address it names. Clients not behind a proxy still connect."`
		TrustedProxies   []string `toml:"trusted_proxies" comment:"The proxies allowed to send PROXY headers, as CIDR prefixes (\"203.0.113.0/24\", \"2001:db8::/32\") or single IPs; proxy_protocol needs at least one. A header from any other address is refused. Only the proxies should be able to send from these addresses: whoever can may claim to be any client. Without proxy_protocol, a per-IP refusal of one of these addresses (a balancer whose players share it) is explained in the log."`
		Sockets          int      `toml:"sockets" comment:"UDP sockets opened on each address (1-64), each read by its own thread of work. More than 1 shares the address with SO_REUSEPORT, so that receiving spreads over CPU cores; Linux only (elsewhere 1 is used). Worth it only on a machine with cores to spare under heavy traffic."`
		PublicAddress    string   `toml:"public_address" comment:"The address players reach this server at, \"IP:port\", when it differs from the one it listens on: a load balancer's, a tunnel's or a NAT's. Its port is the one pongs advertise, and clients connect to the advertised port, so behind a balancer on another port they would otherwise bypass it. Empty means the listening ports."`
		Encryption       bool     `toml:"encryption" comment:"Encrypt every session after its Login with the Bedrock handshake (AES-256, as vanilla servers do). Keep it on in online mode: the handshake proves the client holds the key its Login names, so a captured Login cannot be replayed."`
		NetherNet        bool     `toml:"nethernet" comment:"Also serve NetherNet, the WebRTC transport Bedrock 1.26.50 and later try first and 1.26.60 and later use alone: HTTP signalling on TCP at the IPv4 game port's number (or the IPv6 one's), the peer connections over UDP (see nethernet_ice_port). Without it current clients cannot join."`
		NetherNetTLSCert string   `toml:"nethernet_tls_cert" comment:"PEM certificate file for NetherNet signalling over HTTPS; with nethernet_tls_key. A certificate clients trust for the name they type spares them the one-time prompt to trust the server's key. Empty means plain HTTP. A relative path is relative to this file's directory."`
		NetherNetTLSKey  string   `toml:"nethernet_tls_key" comment:"PEM private key file of nethernet_tls_cert."`
		NetherNetIDFile  string   `toml:"nethernet_identity_file" comment:"File holding the server's NetherNet identity, a P-384 key created (mode 0600) if missing; clients asked to trust the server trust this key, so keep it. Empty means a new key at each start, and a new prompt. A relative path is relative to the GUID file's directory."`
		NetherNetICEPort int      `toml:"nethernet_ice_port" comment:"UDP port of NetherNet's peer connections: 0 shares the game port's socket with RakNet (the datagrams are told apart by their first bytes), so a firewall opens one UDP and one TCP port, both the game port; 1-65535 opens a socket of its own on that port."`
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
		File        string `toml:"file" comment:"File the log is written to instead of standard error, rotated by size. Empty means standard error, for a terminal or a process manager such as systemd. A relative path is relative to this file's directory."`
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

// BuiltinHandler names a handler the server has built in: the value of
// server.handler in config.toml and of Config.Handler.
type BuiltinHandler string

// The built-in handlers.
const (
	// HandlerGate disconnects every player once logged in, with
	// Config.DisconnectMessage (session.Gate).
	HandlerGate BuiltinHandler = "gate"
	// HandlerLobby lets every player into the lobby of session/lobby.
	HandlerLobby BuiltinHandler = "lobby"
)

// newLobby makes the lobby of HandlerLobby and returns its NewHandler and
// the OnShutdown that closes it before the sessions are disconnected, after
// calling c.OnShutdown if set: the lobby then disconnects its players with
// the shutdown message and announces no departures; and the OnDrain that
// says the restart message in the lobby's chat, after c.OnDrain if set.
func (c Config) newLobby() (func(*session.Session) (session.Handler, error), func(string), func(string)) {
	lby := lobby.New(lobby.Config{
		Greeting:    c.Greeting,
		WorldName:   c.LevelName,
		JoinTimeout: c.LobbyJoinTimeout,
		Log:         c.Log,
	})
	next, nextDrain := c.OnShutdown, c.OnDrain
	return lby.NewHandler, func(msg string) {
			if next != nil {
				next(msg)
			}
			lby.Shutdown(msg)
		}, func(msg string) {
			if nextDrain != nil {
				nextDrain(msg)
			}
			lby.Announce(msg)
		}
}

// DefaultUserConfig returns the configuration config.toml holds when first
// written: every key at its default. It is the one place defaults are set;
// Config.New takes the defaults of zero fields from it too.
func DefaultUserConfig() UserConfig {
	var uc UserConfig
	uc.Network.AddressV4 = net.JoinHostPort("0.0.0.0", strconv.Itoa(LANPortV4))
	uc.Network.AddressV6 = net.JoinHostPort("::", strconv.Itoa(LANPortV6))
	uc.Network.LANDiscovery = true
	uc.Network.Query = true
	uc.Network.TrustedProxies = []string{}
	uc.Network.Sockets = 1
	uc.Network.Encryption = true
	uc.Network.NetherNet = true
	uc.Network.NetherNetIDFile = "nethernet_identity"
	uc.Server.Name = "Basalt"
	uc.Server.LevelName = "Bedrock level"
	uc.Server.Edition = string(motd.EditionBedrock)
	uc.Server.GameMode = "Survival"
	uc.Server.MaxPlayers = 20
	uc.Server.Version = session.CurrentVersion
	uc.Server.Protocol = int(session.CurrentProtocol)
	uc.Server.AcceptedProtocols = nil
	for _, p := range session.KnownProtocols() {
		uc.Server.AcceptedProtocols = append(uc.Server.AcceptedProtocols, int(p))
	}
	uc.Server.DisconnectMessage = session.DefaultGateMessage
	uc.Server.ShutdownMessage = DefaultShutdownMessage
	uc.Server.ShutdownGrace = "0s"
	uc.Server.Handler = string(HandlerGate)
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
	for _, v := range raknet.DefaultProtocolVersions {
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

// DefaultConfigFile returns the default config.toml: DefaultUserConfig
// encoded as TOML, each key preceded by its comment, wrapped at 80 columns.
// LoadConfig writes it when the file is missing, and the repository's
// config.toml is this text.
func DefaultConfigFile() []byte {
	var b bytes.Buffer
	b.WriteString(configHeader)
	enc := toml.NewEncoder(&b)
	enc.SetIndentTables(false)
	if err := enc.Encode(DefaultUserConfig()); err != nil {
		panic("server: encode default config: " + err.Error()) // a bad tag: a programmer's error
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

// Config is the runtime configuration: what UserConfig.Config produces from
// config.toml, or what a program or test fills in by hand. New turns it into
// a Server, giving every zero field its default (listed per field), so
// Config{AddressV4: "127.0.0.1:0"}.New() is a working server on a random
// loopback port. A Config is a plain value with no internal locking.
type Config struct {
	// Log is the logger the server and its listeners write to. Nil means
	// discard.
	Log *zerolog.Logger

	// NewHandler makes the handler of each player once the session has
	// logged it in (see session.Config.NewHandler), after the server gave
	// it a player slot. It is called from many sessions' goroutines at
	// once. Nil means the built-in handler Handler names. AcceptedProtocols
	// and Encryption apply whatever it is.
	NewHandler func(*session.Session) (session.Handler, error)
	// Handler is the built-in handler used when NewHandler is nil:
	// HandlerGate (the zero value's default) disconnects every player with
	// DisconnectMessage; HandlerLobby lets them into a lobby (session/lobby)
	// that greets them with Greeting, made by New and closed first on
	// shutdown. It is server.handler in config.toml.
	Handler BuiltinHandler
	// Greeting is the lobby's greeting with HandlerLobby; empty means
	// lobby.DefaultGreeting.
	Greeting string
	// LobbyJoinTimeout bounds, with HandlerLobby, the time from a player's
	// login to their spawn (lobby.Config.JoinTimeout): zero means
	// lobby.DefaultJoinTimeout, negative no bound.
	LobbyJoinTimeout time.Duration
	// Encryption runs the Bedrock encryption handshake with every client
	// after its Login (see session.Config.Encryption), with one P-384 key
	// per Server. False (the zero value) leaves batches unencrypted;
	// config.toml's network.encryption defaults to true.
	Encryption bool

	// AuthenticationDisabled turns online mode off: Logins are read but
	// not verified, so anyone can join under any name or XUID, as bots,
	// tests and proxies that authenticate players themselves need. False
	// (the zero value) verifies every player's Xbox Live sign-in with
	// package auth, refusing the rest with auth.NotSignedInMessage.
	AuthenticationDisabled bool
	// Auth configures online mode's verifier: the endpoints of the
	// Minecraft authentication service, the legacy chain's root keys.
	// Its zero value is the real service; a nil Auth.Log means Log.
	Auth auth.Config
	// Allowlist admits only the players the allowlist lists (see
	// AllowlistEntry); false (the zero value) admits everyone not banned.
	// Server.SetAllowlist changes it while the server runs.
	Allowlist bool
	// AllowlistFile is the allowlist's file, in BDS's allowlist.json
	// format, read at Listen (created holding [] if missing), reloaded
	// when it changes and written when the list is changed through the
	// Server; "" keeps the list in memory.
	AllowlistFile string
	// AllowlistEntries is the allowlist when AllowlistFile is "".
	AllowlistEntries []AllowlistEntry
	// BansFile is the ban list's file, a JSON array of Ban, handled as
	// AllowlistFile is; "" keeps the list in memory.
	BansFile string
	// Bans is the ban list when BansFile is "".
	Bans []Ban
	// AccessPollInterval is how often AllowlistFile and BansFile are
	// checked for changes; 0 means DefaultAccessPollInterval, negative
	// never.
	AccessPollInterval time.Duration

	// AddressV4 is the IPv4 UDP address to listen on, "" for none.
	// If AddressV4 and AddressV6 are both empty, New uses "0.0.0.0:19132"
	// and "[::]:19133".
	AddressV4 string
	// AddressV6 is the IPv6 UDP address to listen on, "" for none.
	AddressV6 string
	// LANDiscovery asks for extra listeners on LANAddressV4 and
	// LANAddressV6 when the game ports differ from theirs, so LAN
	// discovery pings (sent to 19132 and 19133) are answered. Those
	// listeners serve sessions too. False (the zero value) opens none.
	LANDiscovery bool
	// LANAddressV4 is where LAN discovery pings for IPv4 arrive; empty
	// means "0.0.0.0:19132". Only sockets bound to the wildcard address
	// receive broadcasts. Tests set it to a loopback address.
	LANAddressV4 string
	// LANAddressV6 is where LAN discovery pings for IPv6 arrive; empty
	// means "[::]:19133".
	LANAddressV6 string
	// Query answers the Query protocol (package query) on the game
	// listeners; false (the zero value) leaves it unanswered.
	Query bool
	// CookieSecret keys the RakNet handshake cookies and the query
	// tokens, at least raknet.MinCookieSecret bytes; nil means a random
	// secret for each listener.
	CookieSecret []byte
	// CookieSecretFile is the resolved path CookieSecret was read from,
	// "" for none.
	CookieSecretFile string
	// ProxyProtocol makes the listeners take PROXY protocol headers
	// from TrustedProxies (see raknet.ListenConfig.ProxyProtocol). False
	// (the zero value) takes none.
	ProxyProtocol bool
	// TrustedProxies are the proxies whose headers are taken; needed with
	// ProxyProtocol.
	TrustedProxies []netip.Prefix

	// Name is MOTD line 1; empty means "Basalt".
	Name string
	// LevelName is MOTD line 2; empty means "Bedrock level".
	LevelName string
	// Edition is the MOTD edition; empty means motd.EditionBedrock.
	Edition motd.Edition
	// GameMode is the game mode name advertised in the MOTD; empty means
	// "Survival".
	GameMode string
	// MaxPlayers is the player limit; 0 or less means 20. UpdateStatus and
	// StatusProvider can change it while the server runs.
	MaxPlayers int
	// StatusProvider, if set, decides the status advertised in pongs (the
	// MOTD's text, player count and player limit) while the server runs;
	// see StatusProvider. Nil means the configured fields with the live
	// player count.
	StatusProvider StatusProvider
	// StatusInterval is how often StatusProvider is asked, besides after
	// each join and leave; 0 or less means DefaultStatusInterval.
	StatusInterval time.Duration
	// Version is the advertised game version; empty means the version of
	// Protocol.
	Version string
	// Protocol is the advertised network protocol; 0 means the newest
	// of AcceptedProtocols.
	Protocol int32
	// AcceptedProtocols lists the network protocols clients may use, each
	// one this build knows (session.Protocols); empty means all of them.
	AcceptedProtocols []int32
	// DisconnectMessage is shown by the default handler, with
	// session.PlayerPlaceholder replaced by the player's name; empty means
	// session.DefaultGateMessage.
	DisconnectMessage string
	// ShutdownMessage is shown to every session when the server shuts
	// down; empty means DefaultShutdownMessage.
	ShutdownMessage string
	// ShutdownTimeout bounds how long Close waits for the shutdown
	// message to reach the clients; 0 or less means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// OnShutdown, if set, is called once when Close begins, with
	// ShutdownMessage, before the server disconnects the sessions: a
	// handler's shared state (the lobby, say) can close first, so its
	// players are not told one by one that the others left.
	OnShutdown func(message string)
	// ShutdownGrace is how long Run, once its context ends, drains
	// before it closes (see Server.Drain): not ready, refusing new
	// logins with RestartMessage, the players in told. 0 (the zero value)
	// closes at once; at most 5 minutes.
	ShutdownGrace time.Duration
	// RestartMessage is what players are told when the server starts
	// draining, and what refuses those who log in after; empty means
	// DefaultRestartMessage.
	RestartMessage string
	// OnDrain, if set, is called once when Drain begins, with
	// RestartMessage, to tell the players in (the lobby says it in chat).
	OnDrain func(message string)
	// GUIDFile is the resolved path of the GUID file.
	GUIDFile string
	// GUID is the stable, non-negative server GUID read from (or first
	// written to) GUIDFile. It goes in the pong header and MOTD field 6.
	// 0 means a random one for this run only.
	GUID int64
	// LoginTimeout is how long a session has to log in before it is
	// disconnected; 0 means session.DefaultLoginTimeout, negative no
	// deadline.
	LoginTimeout time.Duration

	// Sockets is how many UDP sockets each listener opens on its address
	// (raknet.ListenConfig.Sockets); 0 means 1.
	Sockets int
	// PublicAddress is the address players reach the server at when it
	// is not the one it listens on (a load balancer, a tunnel, a NAT).
	// Its port is advertised in pongs as the IPv4 port (and the IPv6
	// port too for an IPv6 address): clients connect to the advertised
	// port, so without it they would bypass a balancer on another port.
	// The zero value means the listening ports.
	PublicAddress netip.AddrPort
	// MaxMTU is the largest RakNet datagram in bytes; 0 means
	// raknet.DefaultMaxMTU.
	MaxMTU int
	// MaxConnections caps RakNet connections per listener; 0 or less means
	// MaxPlayers plus some slack, so clients over the player limit are
	// told the server is full instead of timing out.
	MaxConnections int
	// Timeout drops a connection that has been silent this long; 0 means
	// raknet.DefaultTimeout.
	Timeout time.Duration
	// RakNetProtocols lists the RakNet protocol versions accepted; nil
	// means raknet.DefaultProtocolVersions.
	RakNetProtocols []byte
	// MaxConnectionsPerIP caps the established connections of one IP
	// address on each listener; 0 means raknet.DefaultMaxConnectionsPerIP,
	// negative no cap.
	MaxConnectionsPerIP int
	// MemoryBudget is the bytes the peers of each listener may make it
	// hold at once (reassembly, ordering and read queues); 0 means the
	// listener's default, 128 MiB.
	MemoryBudget int

	// NetherNet serves NetherNet (package server/nethernet) beside RakNet;
	// false (the zero value) serves RakNet alone. config.toml's
	// network.nethernet defaults to true.
	NetherNet bool
	// NetherNetAddress is the TCP address of NetherNet's HTTP
	// signalling; empty means the IPv4 game listener's address (or the
	// IPv6 one's) over TCP: the port the player typed.
	NetherNetAddress string
	// NetherNetTLSCert and NetherNetTLSKey are PEM files that make the
	// signalling HTTPS; empty means plain HTTP.
	NetherNetTLSCert, NetherNetTLSKey string
	// NetherNetIdentityKey is the P-384 key NetherNet answers are signed
	// with; nil means one made at Listen, for this run only.
	NetherNetIdentityKey *ecdsa.PrivateKey
	// NetherNetIdentityFile is the resolved path NetherNetIdentityKey was
	// read from, "" for none.
	NetherNetIdentityFile string
	// NetherNetLANAddress is where NetherNet LAN discovery is answered,
	// with LANDiscovery; empty means "0.0.0.0:7551". Tests set it to
	// "0.0.0.0:0".
	NetherNetLANAddress string
	// NetherNetICEPort is the UDP port of NetherNet's peer connections: 0
	// shares the IPv4 game listener's socket (or the IPv6 one's), a port
	// opens a socket of its own on the game listener's host, and -1 one
	// on a port the system picks (tests).
	NetherNetICEPort int

	// MetricsAddress is the TCP address, "host:port", of the HTTP server
	// of Prometheus metrics at /metrics; empty (the zero value) serves
	// none.
	MetricsAddress string
	// MetricsPprof also serves net/http/pprof at /debug/pprof/ on
	// MetricsAddress.
	MetricsPprof bool

	// lines is the line of the configuration file that set each key,
	// from UserConfig.Config, for errors found once the server runs to
	// point at; nil for none.
	lines map[string]int

	// listenPacket opens the listeners' sockets; nil means
	// net.ListenPacket. Tests use it to simulate a host without IPv6.
	listenPacket func(network, address string) (net.PacketConn, error)
	// noOfflineLimits lifts the listeners' offline rate limits, so a
	// benchmark can ping as fast as it likes.
	noOfflineLimits bool
}

// LoadConfig reads the TOML file at path over the defaults, so a missing key
// keeps its default, and validates the result. If the file does not exist it
// is created with the commented default configuration and the defaults are
// returned. Decoding is strict: an unknown key is an error naming the key and
// its line, and so is a value of the wrong type.
func LoadConfig(path string) (UserConfig, error) {
	uc := DefaultUserConfig()
	uc.dir = filepath.Dir(path)
	uc.name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := writeNew(path, DefaultConfigFile(), 0o644); err == nil {
			uc.lines = keyLines(DefaultConfigFile())
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
		if key := de.Key(); len(key) > 0 {
			return fmt.Errorf("line %d: key %s: %s; %s", line, strings.Join(key, "."), msg, typeFix(msg))
		}
		return fmt.Errorf("line %d: %s; fix the TOML syntax on that line (strings in double quotes, tables as [name])", line, msg)
	}
	return err
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
		return "write it in double quotes"
	case strings.Contains(msg, "into []"):
		return "write it as a list in brackets, such as [1, 2]"
	case strings.Contains(msg, "out of range") || strings.Contains(msg, "overflow"):
		return "write a smaller number"
	}
	return "write a value of the type its default in a new config.toml has"
}

// writeNew creates path with data and permissions perm, failing with
// fs.ErrExist if it is already there.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// connectionSlack returns how many connections beyond maxPlayers the
// listener accepts when raknet.max_connections is 0: enough for clients over
// the limit to be told the server is full instead of timing out.
func connectionSlack(maxPlayers int) int {
	return max(4, maxPlayers/10)
}

// Config validates uc and turns it into runtime values: durations parsed,
// the GUID file path resolved against the config file's directory and the
// GUID loaded (or created) with LoadOrCreateGUID, max_connections 0 replaced
// by max_players plus slack, max_connections_per_ip 0 (no cap) made
// negative. log becomes Config.Log and is used for the
// notes Config itself writes; nil discards them.
func (uc UserConfig) Config(log *zerolog.Logger) (Config, error) {
	if err := uc.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid config: %w", err)
	}
	l := log
	if l == nil {
		nop := zerolog.Nop()
		l = &nop
	}
	c := Config{
		Log:               log,
		AddressV4:         uc.Network.AddressV4,
		AddressV6:         uc.Network.AddressV6,
		LANDiscovery:      uc.Network.LANDiscovery,
		Query:             uc.Network.Query,
		Sockets:           uc.Network.Sockets,
		PublicAddress:     mustPublicAddress(uc.Network.PublicAddress),
		Encryption:        uc.Network.Encryption,
		NetherNet:         uc.Network.NetherNet,
		NetherNetICEPort:  uc.Network.NetherNetICEPort,
		Name:              uc.Server.Name,
		LevelName:         uc.Server.LevelName,
		Edition:           motd.Edition(uc.Server.Edition),
		GameMode:          uc.Server.GameMode,
		MaxPlayers:        uc.Server.MaxPlayers,
		Version:           uc.Server.Version,
		Protocol:          int32(uc.Server.Protocol),
		DisconnectMessage: uc.Server.DisconnectMessage,
		ShutdownMessage:   uc.Server.ShutdownMessage,
		Handler:           BuiltinHandler(uc.Server.Handler),
		Greeting:          uc.Server.Greeting,
		GUIDFile:          uc.Server.GUIDFile,
		MaxMTU:            uc.RakNet.MaxMTU,
		MaxConnections:    uc.RakNet.MaxConnections,
		MemoryBudget:      uc.RakNet.MemoryBudget,
		MetricsAddress:    uc.Metrics.Address,
		MetricsPprof:      uc.Metrics.Pprof,
	}
	for _, p := range uc.Server.AcceptedProtocols {
		c.AcceptedProtocols = append(c.AcceptedProtocols, int32(p))
	}
	c.ProxyProtocol = uc.Network.ProxyProtocol
	for _, p := range uc.Network.TrustedProxies {
		pp, _ := parseProxyPrefix(p) // checked by Validate
		c.TrustedProxies = append(c.TrustedProxies, pp)
	}
	for _, v := range uc.RakNet.ProtocolVersions {
		c.RakNetProtocols = append(c.RakNetProtocols, byte(v))
	}
	// Checked by Validate.
	c.Timeout, _ = time.ParseDuration(uc.RakNet.Timeout)
	c.LoginTimeout, _ = time.ParseDuration(uc.Server.LoginTimeout)
	c.ShutdownGrace, _ = time.ParseDuration(uc.Server.ShutdownGrace)
	c.MaxConnectionsPerIP = uc.RakNet.MaxConnectionsPerIP
	if c.MaxConnectionsPerIP == 0 {
		c.MaxConnectionsPerIP = -1 // no cap, in ListenConfig's terms
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = c.MaxPlayers + connectionSlack(c.MaxPlayers)
	}
	if c.GUIDFile == "" {
		c.GUIDFile = cmp(uc.name, "config") + ".guid"
	}
	c.GUIDFile = uc.resolve(c.GUIDFile)
	c.lines = uc.lines
	c.AuthenticationDisabled = !uc.Server.OnlineMode
	c.Auth.DiscoveryURL, c.Auth.Issuer = uc.Server.AuthDiscoveryURL, uc.Server.AuthIssuer
	if c.Auth.Issuer == "" {
		c.Auth.Issuer = "-" // none, in auth.Config's terms
	}
	c.Allowlist = uc.Server.Allowlist
	c.AllowlistFile, c.BansFile = uc.resolve(uc.Server.AllowlistFile), uc.resolve(uc.Server.BansFile)
	_, statErr := os.Stat(c.GUIDFile)
	guid, err := LoadOrCreateGUID(c.GUIDFile)
	if err != nil {
		return Config{}, uc.withLines(fileError("server.guid_file", err, ""))
	}
	c.GUID = guid
	if errors.Is(statErr, fs.ErrNotExist) {
		l.Info().Str("path", c.GUIDFile).Int64("guid", guid).Msg("created server GUID file")
	}
	if err := c.loadCookieSecret(uc.Network.CookieSecretFile, uc.dir, l); err != nil {
		return Config{}, uc.withLines(err)
	}
	if err := c.loadNetherNet(uc, l); err != nil {
		return Config{}, uc.withLines(err)
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

// LoadOrCreateGUID returns the server GUID kept in the file at path, a
// non-negative decimal integer. If the file does not exist it first writes a
// new random GUID (from crypto/rand) there, so the server keeps one GUID
// across restarts and clients do not list it twice. A file that cannot be
// read or does not hold a non-negative decimal int64 is an error naming path.
func LoadOrCreateGUID(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		guid := randomGUID()
		werr := writeNew(path, []byte(strconv.FormatInt(guid, 10)+"\n"), 0o644)
		if werr == nil {
			return guid, nil
		}
		if !errors.Is(werr, fs.ErrExist) {
			return 0, fmt.Errorf("create server GUID file: %w", werr)
		}
		// Someone else created it meanwhile: use theirs.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return 0, fmt.Errorf("load server GUID: %w", err)
	}
	text := strings.TrimSpace(string(data))
	guid, err := strconv.ParseInt(text, 10, 64)
	if err != nil || guid < 0 {
		return 0, fmt.Errorf("load server GUID: %s: %.40q is not a non-negative decimal integer; delete the file to make a new GUID", path, text)
	}
	return guid, nil
}

// randomGUID returns a random non-zero GUID with the sign bit clear, so the
// RakNet header (signed) and the MOTD (unsigned) print the same number.
func randomGUID() int64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes instead
		if guid := int64(binary.BigEndian.Uint64(b[:]) >> 1); guid != 0 {
			return guid
		}
	}
}

// mustPublicAddress parses a network.public_address Validate accepted.
func mustPublicAddress(s string) netip.AddrPort {
	ap, _ := parsePublicAddress(s) // checked by Validate
	return ap
}
