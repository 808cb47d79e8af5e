package server

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/internal/file"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/lobby"
	"github.com/rs/zerolog"
)

// Config is the runtime configuration: what config.UserConfig.Config
// produces from config.toml, or what a program or test fills in by hand.
// It is nested as config.toml is: the network, RakNet, NetherNet, the
// status advertised, the access lists, the shutdown, the metrics. New
// turns it into a Server, giving every zero field its default (listed per
// field), and every zero field is the safe choice: the unusual or insecure
// one is a field spelled out (AuthenticationDisabled, EncryptionDisabled).
// So Config{Network: NetworkConfig{AddressV4: "127.0.0.1:0"}}.New() is a
// working server on a random loopback port. A Config is a plain value with
// no internal locking.
type Config struct {
	// Log is the logger the server and its listeners write to. Nil means
	// discard.
	Log *zerolog.Logger

	// NewHandler makes the handler of each player once the session has
	// logged it in (see session.Config.NewHandler), after the server gave
	// it a player slot. It is called from many sessions' goroutines at
	// once. Nil means the built-in handler Handler names. AcceptedProtocols
	// and EncryptionDisabled apply whatever it is.
	NewHandler func(*session.Session) (session.Handler, error)
	// Handler is the built-in handler used when NewHandler is nil:
	// HandlerGate (the zero value's default) disconnects every player with
	// DisconnectMessage; HandlerLobby lets them into a lobby (session/lobby)
	// configured by Lobby, made by New and closed first on shutdown. It is
	// server.handler in config.toml.
	Handler BuiltinHandler
	// Lobby configures the lobby of HandlerLobby: its greeting (empty
	// means lobby.DefaultGreeting) and join timeout (zero means
	// lobby.DefaultJoinTimeout, negative no bound). An empty WorldName
	// means Status.LevelName, a nil Log means Log.
	Lobby lobby.Config
	// DisconnectMessage is shown by the default handler, with
	// session.PlayerPlaceholder replaced by the player's name; empty means
	// session.DefaultGateMessage.
	DisconnectMessage string
	// AcceptedProtocols lists the network protocols clients may use, each
	// one this build knows (session.Protocols); empty means all of them.
	AcceptedProtocols []int32
	// LoginTimeout is how long a session has to log in before it is
	// disconnected; 0 means session.DefaultLoginTimeout, negative no
	// deadline.
	LoginTimeout time.Duration

	// EncryptionDisabled leaves every session's batches unencrypted. False
	// (the zero value) runs the Bedrock encryption handshake with every
	// client after its Login (see session.Config.Encryption), with one
	// P-384 key per Server, as config.toml's network.encryption (true by
	// default) does: in online mode the handshake proves the client holds
	// the key its Login names, so a captured Login cannot be replayed.
	EncryptionDisabled bool
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
	// Access is the allowlist and the ban list (package access): the
	// zero value enforces no allowlist and bans no one, keeping both
	// lists in memory. Server.SetAllowlist changes Access.Allowlist while
	// the server runs.
	Access access.Config

	// Network is where the server listens and how it is reached.
	Network NetworkConfig
	// RakNet configures the RakNet listeners.
	RakNet RakNetConfig
	// NetherNet configures NetherNet beside RakNet; its zero value serves
	// RakNet alone.
	NetherNet NetherNetConfig
	// Status is what the server advertises in pongs (the MOTD).
	Status StatusConfig
	// Shutdown is how the server drains and closes.
	Shutdown ShutdownConfig
	// Metrics configures the HTTP server of package monitor; its zero
	// value serves none.
	Metrics MetricsConfig

	// GUIDFile is the resolved path of the GUID file.
	GUIDFile string
	// GUID is the stable, non-negative server GUID read from (or first
	// written to) GUIDFile. It goes in the pong header and MOTD field 6.
	// 0 means a random one for this run only.
	GUID int64
	// KeyLines is the line of the configuration file that set each key,
	// by dotted name ("network.address_v4"), for errors found once the
	// server runs (a listener's address that cannot be bound, an access
	// file that does not parse) to point at; config.UserConfig.Config
	// sets it. Nil means none.
	KeyLines map[string]int

	// listenPacket opens the listeners' sockets; nil means
	// net.ListenPacket. Tests use it to simulate a host without IPv6.
	listenPacket func(network, address string) (net.PacketConn, error)
	// noOfflineLimits lifts the listeners' offline rate limits, so a
	// benchmark can ping as fast as it likes.
	noOfflineLimits bool
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
	lc := c.Lobby
	lc.WorldName = cmp.Or(lc.WorldName, c.Status.LevelName)
	if lc.Log == nil {
		lc.Log = c.Log
	}
	lby := lobby.New(lc)
	next, nextDrain := c.Shutdown.OnClose, c.Shutdown.OnDrain
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

// connectionSlack returns how many connections beyond maxPlayers a
// listener accepts when Config.RakNet.MaxConnections is 0: enough for clients over
// the limit to be told the server is full instead of timing out.
func connectionSlack(maxPlayers int) int {
	return max(4, maxPlayers/10)
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
		werr := file.CreateNew(path, []byte(strconv.FormatInt(guid, 10)+"\n"), 0o644)
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

// NetworkConfig is where a server listens and how it is reached. Its zero
// value listens on DefaultAddressV4 and DefaultAddressV6, with no LAN
// discovery, Query or PROXY protocol.
type NetworkConfig struct {
	// AddressV4 is the IPv4 UDP address to listen on, "" for none.
	// If AddressV4 and AddressV6 are both empty, New uses
	// DefaultAddressV4 and DefaultAddressV6.
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
	// PublicAddress is the address players reach the server at when it
	// is not the one it listens on (a load balancer, a tunnel, a NAT).
	// Its port is advertised in pongs as the IPv4 port (and the IPv6
	// port too for an IPv6 address): clients connect to the advertised
	// port, so without it they would bypass a balancer on another port.
	// The zero value means the listening ports.
	PublicAddress netip.AddrPort
}

// RakNetConfig configures a server's RakNet listeners (see
// raknet.ListenConfig); each zero field is raknet's default.
type RakNetConfig struct {
	// Sockets is how many UDP sockets each listener opens on its address
	// (raknet.ListenConfig.Sockets); 0 means 1.
	Sockets int
	// MaxMTU is the largest RakNet datagram in bytes; 0 means
	// raknet.DefaultMaxMTU.
	MaxMTU int
	// MaxConnections caps RakNet connections per listener; 0 or less means
	// Status.MaxPlayers plus some slack, so clients over the player limit
	// are told the server is full instead of timing out.
	MaxConnections int
	// Timeout drops a connection that has been silent this long; 0 means
	// raknet.DefaultTimeout.
	Timeout time.Duration
	// ProtocolVersions lists the RakNet protocol versions accepted; nil
	// means raknet.DefaultProtocolVersions.
	ProtocolVersions []byte
	// MaxConnectionsPerIP caps the established connections of one IP
	// address on each listener; 0 means raknet.DefaultMaxConnectionsPerIP,
	// negative no cap.
	MaxConnectionsPerIP int
	// MemoryBudget is the bytes the peers of each listener may make it
	// hold at once (reassembly, ordering and read queues); 0 means the
	// listener's default, 128 MiB.
	MemoryBudget int
}

// NetherNetConfig configures NetherNet (package server/nethernet) beside
// RakNet. Its zero value serves RakNet alone.
type NetherNetConfig struct {
	// Enabled serves NetherNet beside RakNet; false (the zero value)
	// serves RakNet alone. config.toml's network.nethernet defaults to
	// true.
	Enabled bool
	// Address is the TCP address of NetherNet's HTTP signalling; empty
	// means the IPv4 game listener's address (or the IPv6 one's) over TCP:
	// the port the player typed.
	Address string
	// TLSCert and TLSKey are PEM files that make the signalling HTTPS;
	// empty means plain HTTP.
	TLSCert, TLSKey string
	// IdentityKey is the P-384 key NetherNet answers are signed with; nil
	// means one made at Listen, for this run only.
	IdentityKey *ecdsa.PrivateKey
	// IdentityFile is the resolved path IdentityKey was read from, ""
	// for none.
	IdentityFile string
	// LANAddress is where NetherNet LAN discovery is answered, with
	// Network.LANDiscovery; empty means "0.0.0.0:7551". Tests set it to
	// "0.0.0.0:0".
	LANAddress string
	// ICEPort is the UDP port of NetherNet's peer connections: 0 shares
	// the IPv4 game listener's socket (or the IPv6 one's), a port opens a
	// socket of its own on the game listener's host, and -1 one on a port
	// the system picks (tests).
	ICEPort int
	// AdvertiseAddress is the address NetherNet's ICE candidates offer
	// players beside the host candidates, when it is not
	// Network.PublicAddress: behind a load balancer, the instance's own
	// reachable address while PublicAddress is the balancer's. Only its
	// IP is used (pion rewrites a candidate's address, not its port). The
	// zero value means Network.PublicAddress.
	AdvertiseAddress netip.AddrPort
}

// StatusConfig is what a server advertises in pongs: the MOTD's fields.
// Each zero field is its default, listed per field.
type StatusConfig struct {
	// Name is MOTD line 1; empty means DefaultName.
	Name string
	// LevelName is MOTD line 2; empty means DefaultLevelName.
	LevelName string
	// Edition is the MOTD edition; empty means motd.EditionBedrock.
	Edition motd.Edition
	// GameMode is the game mode name advertised in the MOTD; empty means
	// DefaultGameMode.
	GameMode string
	// MaxPlayers is the player limit; 0 or less means DefaultMaxPlayers.
	// UpdateStatus and Provider can change it while the server runs.
	MaxPlayers int
	// Version is the advertised game version; empty means the version of
	// Protocol.
	Version string
	// Protocol is the advertised network protocol; 0 means the newest
	// of Config.AcceptedProtocols.
	Protocol int32
	// Provider, if set, decides the status advertised in pongs (the
	// MOTD's text, player count and player limit) while the server runs;
	// see StatusProvider. Nil means the fields above with the live
	// player count.
	Provider StatusProvider
	// Interval is how often Provider is asked, besides after each join
	// and leave; 0 or less means DefaultStatusInterval.
	Interval time.Duration
}

// ShutdownConfig is how a server drains and closes. Each zero field is its
// default, listed per field.
type ShutdownConfig struct {
	// Message is shown to every session when the server shuts down;
	// empty means DefaultShutdownMessage.
	Message string
	// Timeout bounds how long Close waits for the shutdown message to
	// reach the clients; 0 or less means DefaultShutdownTimeout.
	Timeout time.Duration
	// OnClose, if set, is called once when Close begins, with Message,
	// before the server disconnects the sessions: a handler's shared state
	// (the lobby, say) can close first, so its players are not told one
	// by one that the others left.
	OnClose func(message string)
	// Grace is how long Run, once its context ends, drains before it
	// closes (see Server.Drain): not ready, refusing new logins with
	// RestartMessage, the players in told. 0 (the zero value) closes at
	// once; at most MaxShutdownGrace.
	Grace time.Duration
	// RestartMessage is what players are told when the server starts
	// draining, and what refuses those who log in after; empty means
	// DefaultRestartMessage.
	RestartMessage string
	// OnDrain, if set, is called once when Drain begins, with
	// RestartMessage, to tell the players in (the lobby says it in chat).
	OnDrain func(message string)
}

// MetricsConfig configures the HTTP server of package monitor: Prometheus
// metrics at /metrics, /status, /healthz and /readyz. Its zero value
// serves none.
type MetricsConfig struct {
	// Address is the TCP address, "host:port", of the HTTP server; empty
	// (the zero value) serves none.
	Address string
	// Pprof also serves net/http/pprof at /debug/pprof/ on Address.
	Pprof bool
}
