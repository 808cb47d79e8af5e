package lobby

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/rs/zerolog"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// DefaultGreeting is the chat message a player gets on spawning unless
// Config says otherwise. session.PlayerPlaceholder in it is replaced by the
// player's display name.
const DefaultGreeting = "Welcome to the Basalt lobby, " + session.PlayerPlaceholder +
	"! Type /list to see who is here and /leave to go."

// DefaultWorldName is the world name a client shows in its pause menu unless
// Config says otherwise.
const DefaultWorldName = "Basalt lobby"

// DefaultShutdownMessage is the Disconnect message of Shutdown("") and of a
// player who arrives after it.
const DefaultShutdownMessage = "The lobby has closed."

// DefaultJoinTimeout is how long a player has, once logged in, to finish
// joining (resource packs, StartGame, spawn) unless Config says otherwise. A
// real client on a slow device spends a few seconds building terrain; one
// that stalls holds a player slot until then.
const DefaultJoinTimeout = 30 * time.Second

// joinTimeoutMessage is the Disconnect message of a player who did not
// finish joining in time.
const joinTimeoutMessage = "Joining the lobby took too long."

// Config configures a Lobby. Its zero value is ready to use.
type Config struct {
	// Greeting is the chat message a player gets on spawning;
	// session.PlayerPlaceholder in it is replaced by the display name.
	// Empty means DefaultGreeting.
	Greeting string
	// WorldName is the world name shown in the client's pause menu. Empty
	// means DefaultWorldName.
	WorldName string
	// JoinTimeout bounds the time from login to spawn. Zero means
	// DefaultJoinTimeout; negative means no bound.
	JoinTimeout time.Duration
	// Log receives the lobby's messages. Nil discards them; each player's
	// own messages go to its session's logger.
	Log *zerolog.Logger
	// Operator reports whether a logged-in player may use the operators'
	// commands: /transfer HOST:PORT, which sends the player to another
	// server. Nil means nobody may. Offline (without login verification)
	// a name or XUID is only a claim: check id.Verified. It is called on
	// the player's session goroutine, once, when the player joins.
	Operator func(id session.Identity) bool
}

// Lobby is a built-in world for players to wait in: an empty world where
// they float as spectators, see who joins and leaves in chat, and can use
// /list and /leave. It holds the state all its players share. NewHandler
// makes each session's handler. A Lobby is safe for concurrent use.
type Lobby struct {
	greeting    string
	worldName   string
	joinTimeout time.Duration
	operator    func(session.Identity) bool
	log         zerolog.Logger
	// codec encodes for every player, at each one's protocol: they all get
	// the same ItemRegistry, so the same shield ID.
	codec packets.Codec

	mu       sync.Mutex
	players  map[*player]struct{} // joining or spawned; guarded by mu
	closed   bool                 // guarded by mu
	shutdown string               // Shutdown's message; guarded by mu
}

// New returns a Lobby configured by cfg.
func New(cfg Config) *Lobby {
	l := &Lobby{
		greeting:    cfg.Greeting,
		worldName:   cfg.WorldName,
		joinTimeout: cfg.JoinTimeout,
		operator:    cfg.Operator,
		log:         zerolog.Nop(),
		players:     make(map[*player]struct{}),
		codec:       packets.Codec{ShieldID: shieldID(items)},
	}
	if l.greeting == "" {
		l.greeting = DefaultGreeting
	}
	if l.worldName == "" {
		l.worldName = DefaultWorldName
	}
	if l.joinTimeout == 0 {
		l.joinTimeout = DefaultJoinTimeout
	}
	if cfg.Log != nil {
		l.log = cfg.Log.With().Str("src", "lobby").Logger()
	}
	return l
}

// NewHandler starts a logged-in player's join and returns the session's
// handler; it is a session.Config.NewHandler. After Shutdown it refuses the
// player with the shutdown message.
func (l *Lobby) NewHandler(s *session.Session) (session.Handler, error) {
	id, _ := s.Identity()
	p := &player{
		lobby:    l,
		s:        s,
		name:     id.DisplayName,
		entityID: join.NewEntityID(),
		operator: l.operator != nil && l.operator(id),
	}
	l.mu.Lock()
	if l.closed {
		msg := l.shutdown
		l.mu.Unlock()
		return nil, &session.DisconnectError{Reason: session.DisconnectReasonShutdown, Message: msg}
	}
	l.players[p] = struct{}{}
	l.mu.Unlock()
	if err := p.start(); err != nil {
		l.remove(p)
		return nil, err
	}
	return join.Adapt(p.join, p), nil
}

// Players returns the display names of the players in the world (spawned),
// sorted.
func (l *Lobby) Players() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.namesLocked()
}

// namesLocked returns the sorted names of the spawned players.
func (l *Lobby) namesLocked() []string {
	// Each name is lowered once, not at every comparison: /list is
	// answered often, and a sort compares n log n times.
	type entry struct{ key, name string }
	var es []entry
	for p := range l.players {
		if p.spawned.Load() {
			es = append(es, entry{strings.ToLower(p.name), p.name})
		}
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.name, b.name))
	})
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.name
	}
	return names
}

// Shutdown closes the lobby: every player, joining or spawned, is
// disconnected with message (DisconnectReasonShutdown), and players who
// arrive later are refused with it. An empty message means
// DefaultShutdownMessage. It does not wait for the sessions to end; calls
// after the first do nothing.
func (l *Lobby) Shutdown(message string) {
	if message == "" {
		message = DefaultShutdownMessage
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed, l.shutdown = true, message
	ps := make([]*player, 0, len(l.players))
	for p := range l.players {
		ps = append(ps, p)
	}
	l.mu.Unlock()
	l.log.Info().Int("players", len(ps)).Msg("lobby shutting down")
	for _, p := range ps {
		p.leaving("shutdown")
		_ = p.s.DisconnectWith(session.DisconnectReasonShutdown, message)
	}
}

// remove forgets p and reports whether it had spawned while the lobby was
// open, so that the others should hear it left.
func (l *Lobby) remove(p *player) (announce bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.players, p)
	return p.spawned.Load() && !l.closed
}

// spawned marks p as in the world and returns the other players in it, to
// tell them.
func (l *Lobby) spawned(p *player) []*player {
	l.mu.Lock()
	defer l.mu.Unlock()
	p.spawned.Store(true)
	return l.othersLocked(p)
}

// othersLocked returns the spawned players other than p.
func (l *Lobby) othersLocked(p *player) []*player {
	var ps []*player
	for o := range l.players {
		if o != p && o.spawned.Load() {
			ps = append(ps, o)
		}
	}
	return ps
}

// others returns the spawned players other than p.
func (l *Lobby) others(p *player) []*player {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.othersLocked(p)
}

// broadcast writes pk to every player in ps. It encodes once per protocol
// among them and runs
// outside the lobby's lock: a write may wait on a slow client's transport,
// up to the session's write timeout, and must not hold up the others'
// joins and leaves meanwhile. A player whose session has just closed is
// skipped.
func (l *Lobby) broadcast(ps []*player, pk packet.Packet) {
	if len(ps) == 0 {
		return
	}
	encoded := make(map[int32][]byte, 2)
	for _, p := range ps {
		c := l.codec.For(p.s)
		b, ok := encoded[c.Protocol]
		if !ok {
			var err error
			if b, err = c.Append(nil, pk); err != nil {
				continue
			}
			encoded[c.Protocol] = b
		}
		_ = p.s.WritePacket(pk.ID(), b)
	}
}

// shieldID returns the runtime ID of minecraft:shield among entries, or 0 if
// there is none.
func shieldID(entries []protocol.ItemEntry) int32 {
	for _, e := range entries {
		if e.Name == "minecraft:shield" {
			return int32(e.RuntimeID)
		}
	}
	return 0
}
