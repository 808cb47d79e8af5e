package server

import (
	"context"
	"crypto/ecdsa"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/server/monitor"
	"github.com/basaltmc/basalt/server/nethernet"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/df-mc/atomic"
	"github.com/rs/zerolog"
)

// Defaults New gives zero Config fields.
const (
	// DefaultShutdownMessage is what players see when the server shuts
	// down, unless configured.
	DefaultShutdownMessage = "Server closed."
	// DefaultShutdownTimeout bounds how long Close waits for the shutdown
	// message to be delivered. It is longer than raknet's close timeout
	// (3 s), so a client that acknowledges slowly still gets it.
	DefaultShutdownTimeout = 5 * time.Second
	// DefaultAddressV4 and DefaultAddressV6 are the game addresses when
	// neither is configured: every address of each family, on the ports
	// LAN discovery pings go to.
	DefaultAddressV4, DefaultAddressV6 = "0.0.0.0:19132", "[::]:19133"
	// DefaultName and DefaultLevelName are the MOTD's two lines unless
	// configured.
	DefaultName, DefaultLevelName = "Basalt", "Bedrock level"
	// DefaultGameMode is the game mode the MOTD advertises unless
	// configured.
	DefaultGameMode = "Survival"
	// DefaultMaxPlayers is the player limit unless configured.
	DefaultMaxPlayers = 20
	// ServerFullMessage is the Disconnect message a client gets when it
	// logs in while MaxPlayers players are online.
	ServerFullMessage = "The server is full."
	// LANPortV4 and LANPortV6 are the ports Bedrock clients send LAN
	// discovery pings to: IPv4 broadcast to 19132, IPv6 to 19133.
	LANPortV4, LANPortV6 = 19132, 19133
	// lifecycleBurst and lifecycleEvery bound the info lines of players
	// joining, leaving and being refused: plenty for a busy server's
	// comings and goings, few enough that a flood of logins cannot fill
	// the log.
	lifecycleBurst = 30
	lifecycleEvery = 10 * time.Second
)

// Server is a Bedrock server: it owns the RakNet listeners (one per address
// family, plus LAN discovery listeners), a stable GUID, the live MOTD, the
// registry of sessions, the player limit and the shutdown. Create one with
// Config.New, start it with Listen or Run, and stop it with Close. Its
// methods are safe for concurrent use.
//
// A player is a session whose login the server admitted: a session takes a
// player slot when it has logged in (the session ran the pre-game protocol)
// while fewer than MaxPlayers are online, and frees it when it ends. A
// login beyond the limit is refused with a Disconnect
// (DisconnectReasonServerFull, ServerFullMessage) before NewHandler sees it.
// The MOTD's player count is the number of players, updated on every join
// and leave.
type Server struct {
	conf Config
	log  zerolog.Logger
	// handler makes each player's handler: Config.NewHandler, or the gate.
	handler func(*session.Session) (session.Handler, error)
	// key signs and derives every session's encryption handshake.
	key *ecdsa.PrivateKey
	// adv is what the server advertises in pongs.
	adv advert

	// sessCtx is the context sessions run under; cancelled last in Close,
	// after they were told the server is closing.
	sessCtx context.Context
	cancel  context.CancelFunc
	loops   sync.WaitGroup // accept loops
	running sync.WaitGroup // session goroutines

	mu        sync.Mutex
	listening bool
	closing   bool
	draining  atomic.Bool // Drain has begun; see health.go
	started   time.Time
	ls        listenerSet // every listener open
	sessions  map[*session.Session]*entry
	players   int

	stats     counters
	closeOnce sync.Once

	// lifecycle samples the info lines of players joining, leaving and
	// being refused, which anyone able to log in can trigger: bursts of
	// lifecycleBurst per lifecycleEvery, the rest dropped.
	lifecycle *zerolog.BurstSampler
	// refusals samples the "login refused" lines apart from lifecycle,
	// so that a flood of refused logins cannot crowd out the joins and
	// leaves, and counts the lines it drops.
	refusals *countingSampler
	metrics  *monitor.Server // guarded by mu; nil unless serving metrics

	// verifier checks Logins in online mode; nil in offline mode.
	verifier *auth.Verifier
	// access is the allowlist and ban list; accessDone stops their
	// file watcher.
	access     *access.Lists
	accessDone chan struct{}
}

// listenerSet is every listener a server has open: the game listeners of
// each family, the LAN discovery listeners and NetherNet's. Guarded by
// Server.mu.
type listenerSet struct {
	v4, v6 *raknet.Listener    // game listeners, nil when disabled
	lan    []*raknet.Listener  // LAN discovery listeners opened
	nn     *nethernet.Listener // nil unless serving NetherNet
	demux  *nethernet.Demux    // ICE's view of the game socket, if shared
}

// entry is what the registry keeps per session.
type entry struct {
	player bool // took a player slot; guarded by Server.mu
}

// game returns the game listeners, IPv4 first.
func (srv *Server) game() []*raknet.Listener {
	var ls []*raknet.Listener
	for _, l := range []*raknet.Listener{srv.ls.v4, srv.ls.v6} {
		if l != nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// listeners returns every open listener, game listeners first.
func (srv *Server) listeners() []*raknet.Listener {
	return append(srv.game(), srv.ls.lan...)
}

// addrPort returns a as a netip.AddrPort, the zero value if it is not a
// UDP address.
func addrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// port returns a's port.
func port(a net.Addr) uint16 { return addrPort(a).Port() }

// advert is what a server advertises in pongs and how it is kept current:
// the configured status, the live one, the player limit in force and the
// StatusProvider's goroutine.
type advert struct {
	base   motd.Status // the MOTD without player count and ports; guarded by Server.mu
	status atomic.Value[motd.Status]
	// maxPlayers is the player limit in force: Config.Status.MaxPlayers
	// until UpdateStatus or the StatusProvider change it.
	maxPlayers atomic.Int64
	// self is the status the server computed itself, for the
	// StatusProvider; guarded by Server.mu.
	self     motd.Status
	provided bool          // the provider has answered once; guarded by Server.mu
	kick     chan struct{} // wakes provideStatus
	done     chan struct{} // stops provideStatus, and Drain's wait
	warned   atomic.Bool   // a bad provider is reported once
}
