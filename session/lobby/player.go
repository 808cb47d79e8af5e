package lobby

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// phase is how far a player has come in joining the lobby.
type phase uint8

const (
	// phasePacks: ResourcePacksInfo sent, waiting for the client to say it
	// has every pack (there are none).
	phasePacks phase = iota
	// phaseStack: ResourcePackStack sent, waiting for Completed.
	phaseStack
	// phaseChunkRadius: StartGame sent, waiting for RequestChunkRadius.
	phaseChunkRadius
	// phaseSpawn: PlayStatus PlayerSpawn sent, waiting for
	// SetLocalPlayerAsInitialised.
	phaseSpawn
	// phasePlaying: in the world.
	phasePlaying
)

// String returns the phase's name.
func (p phase) String() string {
	switch p {
	case phasePacks:
		return "packs"
	case phaseStack:
		return "stack"
	case phaseChunkRadius:
		return "chunk radius"
	case phaseSpawn:
		return "spawn"
	case phasePlaying:
		return "playing"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Chat limits. A chat message is relayed to every other player, so a
// player's rate is capped: a burst of chatBurst, then one per chatInterval.
// Bedrock's own chat box stops at maxChatLength characters.
const (
	chatBurst     = 5
	chatInterval  = time.Second
	maxChatLength = 512
)

// Messages a player may get in chat.
const (
	leaveMessage    = "You left the lobby."
	chatSlowMessage = "§cYou are sending messages too fast."
	chatLongMessage = "§cThat message is too long."
)

// wanted lists the packets a player's handler decodes; every other packet a
// client sends (PlayerAuthInput every tick, ClientCacheStatus, ...) is let
// by raw without being decoded.
var wanted = map[uint32]bool{
	packet.IDResourcePackClientResponse:  true,
	packet.IDRequestChunkRadius:          true,
	packet.IDSetLocalPlayerAsInitialised: true,
	packet.IDText:                        true,
	packet.IDCommandRequest:              true,
}

// player is one session's handler. Its fields other than spawned are
// immutable or owned by the session's goroutine; other players' goroutines
// only write packets to s.
type player struct {
	packets.NopHandler
	lobby    *Lobby
	s        *session.Session
	name     string
	entityID int64
	spawned  atomic.Bool // in the world; written under lobby.mu

	phase phase
	// phaseNow mirrors phase for other goroutines: the join deadline logs
	// the phase a player stalled in.
	phaseNow atomic.Uint32
	// why is the reason this side ended the session, for the log: /leave,
	// the join deadline, shutdown. Nil when the session ended otherwise.
	why atomic.Pointer[string]
	// joinTimer ends a join that stalls; nil when there is no bound.
	timerMu   sync.Mutex
	joinTimer *time.Timer // guarded by timerMu

	// chatTokens and chatAt are the chat rate limit's bucket.
	chatTokens float64
	chatAt     time.Time
	// throttled is set once a message was dropped, so the player is told
	// only once until a message goes through again.
	throttled bool
}

var (
	_ packets.Handler    = (*player)(nil)
	_ packets.RawHandler = (*player)(nil)
)

// setPhase moves the player to ph.
func (p *player) setPhase(ph phase) {
	p.phase = ph
	p.phaseNow.Store(uint32(ph))
}

// leaving records why this side ends the session, for the log; the first
// reason stays.
func (p *player) leaving(why string) {
	p.why.CompareAndSwap(nil, &why)
}

// write encodes pk for the player's session.
func (p *player) write(pk packet.Packet) error {
	return p.lobby.codec.Write(p.s, pk)
}

// start sends what opens the join and arms the join deadline.
func (p *player) start() error {
	for _, pk := range loginPackets() {
		if err := p.write(pk); err != nil {
			return err
		}
	}
	if d := p.lobby.joinTimeout; d > 0 {
		p.timerMu.Lock()
		p.joinTimer = time.AfterFunc(d, func() {
			ph := phase(p.phaseNow.Load())
			p.leaving("timed out while joining")
			p.s.Log().Info().Str("player", p.name).Stringer("phase", ph).Dur("timeout", d).
				Msg("player timed out while joining the lobby")
			_ = p.s.DisconnectWith(session.DisconnectReasonTimeout, joinTimeoutMessage)
		})
		p.timerMu.Unlock()
	}
	return nil
}

// stopTimer stops the join deadline.
func (p *player) stopTimer() {
	p.timerMu.Lock()
	defer p.timerMu.Unlock()
	if p.joinTimer != nil {
		p.joinTimer.Stop()
		p.joinTimer = nil
	}
}

// HandleRawPacket lets every packet the lobby has no use for by undecoded.
func (p *player) HandleRawPacket(_ *session.Session, pk session.Packet) (bool, error) {
	return !wanted[pk.ID], nil
}

// HandlePacket drives the join, then chat and commands.
func (p *player) HandlePacket(_ *session.Session, pk packet.Packet) error {
	switch pk := pk.(type) {
	case *packet.ResourcePackClientResponse:
		return p.handlePackResponse(pk)
	case *packet.RequestChunkRadius:
		return p.handleRequestChunkRadius(pk)
	case *packet.SetLocalPlayerAsInitialised:
		return p.handleInitialised(pk)
	case *packet.Text:
		return p.handleText(pk)
	case *packet.CommandRequest:
		if p.phase == phasePlaying {
			return p.command(pk.CommandLine)
		}
	}
	return nil
}

// handlePackResponse moves through the resource pack phases. The lobby has
// no packs, so a client normally answers twice: it has them all (or asks
// for none), then it has applied the stack. Completed is taken in any phase
// before StartGame, as gophertunnel's server (minecraft/conn.go,
// handleResourcePackClientResponse) and BDS take it: PrismarineJS
// bedrock-protocol answers ResourcePacksInfo with Completed at once. A
// response repeated or out of turn changes nothing.
func (p *player) handlePackResponse(pk *packet.ResourcePackClientResponse) error {
	switch pk.Response {
	case packet.PackResponseRefused:
		return session.Kick("You must accept the server's resource packs to join.")
	case packet.PackResponseSendPacks:
		if len(pk.PacksToDownload) != 0 {
			return fmt.Errorf("client asked for %d resource packs the lobby does not have", len(pk.PacksToDownload))
		}
		// Asking for no packs is having them all.
		fallthrough
	case packet.PackResponseAllPacksDownloaded:
		if p.phase != phasePacks {
			return nil
		}
		p.setPhase(phaseStack)
		return p.write(p.packStack())
	case packet.PackResponseCompleted:
		if p.phase != phasePacks && p.phase != phaseStack {
			return nil
		}
		p.setPhase(phaseChunkRadius)
		for _, pk := range p.startGame() {
			if err := p.write(pk); err != nil {
				return err
			}
		}
		return p.s.Flush()
	}
	return fmt.Errorf("unknown resource pack response %d", pk.Response)
}

// handleRequestChunkRadius answers the client's view distance; the first
// one, after StartGame, spawns the player.
func (p *player) handleRequestChunkRadius(pk *packet.RequestChunkRadius) error {
	switch p.phase {
	case phaseChunkRadius:
		if pk.ChunkRadius < 1 {
			return fmt.Errorf("chunk radius %d: want at least 1", pk.ChunkRadius)
		}
		p.setPhase(phaseSpawn)
		for _, pk := range p.spawnPackets(pk.ChunkRadius) {
			if err := p.write(pk); err != nil {
				return err
			}
		}
		return p.s.Flush()
	case phaseSpawn, phasePlaying:
		// The world is empty whatever the distance: confirm, send nothing
		// more.
		return p.write(&packet.ChunkRadiusUpdated{ChunkRadius: chunkRadius(pk.ChunkRadius)})
	}
	return nil
}

// handleInitialised puts the player in the world: the others hear of it and
// the player is greeted.
func (p *player) handleInitialised(pk *packet.SetLocalPlayerAsInitialised) error {
	if p.phase != phaseSpawn {
		return nil
	}
	if pk.EntityRuntimeID != uint64(p.entityID) {
		return fmt.Errorf("initialised entity %d, want %d (from StartGame)", pk.EntityRuntimeID, p.entityID)
	}
	p.setPhase(phasePlaying)
	p.stopTimer()
	others := p.lobby.spawned(p)
	p.s.Log().Info().Str("player", p.name).Int32("protocol", p.s.Protocol()).Int("others", len(others)).
		Msg("player joined the lobby")
	p.lobby.broadcast(others, systemText("§e"+p.name+" joined the lobby"))
	greeting := strings.ReplaceAll(p.lobby.greeting, session.PlayerPlaceholder, p.name)
	if err := p.write(systemText(greeting)); err != nil {
		return err
	}
	return p.s.Flush()
}

// handleText relays a chat message, or runs it as a command if it starts
// with '/'.
func (p *player) handleText(pk *packet.Text) error {
	if p.phase != phasePlaying || pk.TextType != packet.TextTypeChat {
		return nil
	}
	msg := strings.TrimSpace(pk.Message)
	if strings.HasPrefix(msg, "/") {
		return p.command(msg)
	}
	if msg == "" {
		return nil
	}
	if len([]rune(msg)) > maxChatLength {
		return p.write(systemText(chatLongMessage))
	}
	if !p.allowChat(time.Now()) {
		if p.throttled {
			return nil
		}
		p.throttled = true
		return p.write(systemText(chatSlowMessage))
	}
	p.throttled = false
	chat := &packet.Text{TextType: packet.TextTypeChat, SourceName: p.name, Message: sanitize(msg)}
	// The sender sees its message too, as on any server.
	p.lobby.broadcast(append(p.lobby.others(p), p), chat)
	return nil
}

// allowChat takes a token from the player's chat bucket at now.
func (p *player) allowChat(now time.Time) bool {
	if p.chatAt.IsZero() {
		p.chatTokens = chatBurst
	} else {
		p.chatTokens = min(chatBurst, p.chatTokens+now.Sub(p.chatAt).Seconds()/chatInterval.Seconds())
	}
	p.chatAt = now
	if p.chatTokens < 1 {
		return false
	}
	p.chatTokens--
	return true
}

// command runs a chat command: /list or /leave.
func (p *player) command(line string) error {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "/"), " ")
	switch strings.ToLower(name) {
	case "list":
		names := p.lobby.Players()
		return p.write(systemText(listMessage(names)))
	case "leave":
		p.leaving("/leave")
		return p.s.DisconnectWith(session.DisconnectReasonDisconnected, leaveMessage)
	}
	return p.write(systemText("§cUnknown command. Try /list or /leave."))
}

// listMessage answers /list.
func listMessage(names []string) string {
	switch len(names) {
	case 0:
		return "Nobody is in the lobby."
	case 1:
		return "1 player in the lobby: " + names[0]
	}
	return fmt.Sprintf("%d players in the lobby: %s", len(names), strings.Join(names, ", "))
}

// HandleClose takes the player out of the lobby and tells the others. The
// log says why the player went: a reason of this side's (/leave, the join
// deadline, shutdown), a disconnect by the server, or the error that ended
// the session (the client closed the connection, say); and, for a player
// who never spawned, the phase of the join they were in.
func (p *player) HandleClose(_ *session.Session, err error) {
	p.stopTimer()
	spawned := p.spawned.Load()
	announce := p.lobby.remove(p)
	if e := p.s.Log().Info(); e.Enabled() {
		why := "disconnected by the server"
		if w := p.why.Load(); w != nil {
			why = *w
		} else if err != nil {
			why = err.Error()
		}
		e.Str("player", p.name).Str("why", why)
		if spawned {
			e.Msg("player left the lobby")
		} else {
			e.Stringer("phase", phase(p.phaseNow.Load())).Msg("player left while joining the lobby")
		}
	}
	if announce {
		p.lobby.broadcast(p.lobby.others(p), systemText("§e"+p.name+" left the lobby"))
	}
}

// systemText is a plain chat line from the server.
func systemText(msg string) *packet.Text {
	return &packet.Text{TextType: packet.TextTypeRaw, Message: msg}
}

// sanitize replaces control characters (a line break, say) in a chat
// message with spaces, so one player cannot forge lines for another.
func sanitize(msg string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
}
