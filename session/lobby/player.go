package lobby

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

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

// wanted reports whether a spawned player's handler decodes packets with
// id: chat and commands (join.Adapt decodes the join's whatever it says).
// Every other packet a client sends (PlayerAuthInput every tick,
// ClientCacheStatus, ...) is let by raw without being decoded.
func wanted(id uint32) bool {
	return id == packet.IDText || id == packet.IDCommandRequest
}

// player is one session's handler. Its fields other than spawned are
// immutable or owned by the session's goroutine; other players' goroutines
// only write packets to s.
type player struct {
	packets.NopTypedHandler
	lobby    *Lobby
	s        *session.Session
	name     string
	entityID int64
	// operator: the player may use /transfer.
	operator bool
	spawned  atomic.Bool // in the world; written under lobby.mu

	// join spawns the player; set before the handler sees a packet.
	join *join.Join
	// why is the reason this side ended the session, for the log: /leave,
	// the join deadline, shutdown. Nil when the session ended otherwise.
	why atomic.Pointer[string]
	// timedOut is the join deadline that ended the session, 0 if none.
	timedOut atomic.Int64
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
	_ join.Handler       = (*player)(nil)
	_ packets.RawHandler = (*player)(nil)
)

// leaving records why this side ends the session, for the log; the first
// reason stays.
func (p *player) leaving(why string) {
	p.why.CompareAndSwap(nil, &why)
}

// write encodes pk for the player's session.
func (p *player) write(pk packet.Packet) error {
	return p.lobby.codec.Write(p.s, pk)
}

// start begins the join and arms its deadline.
func (p *player) start() error {
	j, err := join.Start(p.s, p.lobby.codec, p.gameData())
	if err != nil {
		return err
	}
	p.join = j
	if d := p.lobby.joinTimeout; d > 0 {
		p.timerMu.Lock()
		p.joinTimer = time.AfterFunc(d, func() {
			// The leave line says it, with the phase and the timeout:
			// one line per event.
			p.timedOut.CompareAndSwap(0, int64(d))
			p.leaving("timed out while joining")
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
	return !wanted(pk.ID), nil
}

// HandlePacket runs chat and commands: join.Adapt hands the handler a
// player's packets once it is in the world.
func (p *player) HandlePacket(_ *session.Session, pk packet.Packet) error {
	switch pk := pk.(type) {
	case *packet.Text:
		return p.handleText(pk)
	case *packet.CommandRequest:
		return p.command(pk.CommandLine)
	}
	return nil
}

// HandleSpawn welcomes a player who is in the world: the others hear of it
// and the player is greeted.
func (p *player) HandleSpawn(*session.Session) error {
	p.stopTimer()
	others := p.lobby.spawned(p)
	// At debug: the server's "player joined" is the join's info line.
	p.s.Log().Debug().Int32("protocol", p.s.Protocol()).Int("others", len(others)).
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
	if pk.TextType != packet.TextTypeChat {
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

// command runs a chat command: /list, /leave, or an operator's /transfer.
func (p *player) command(line string) error {
	name, arg, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "/"), " ")
	switch strings.ToLower(name) {
	case "list":
		names := p.lobby.Players()
		return p.write(systemText(listMessage(names)))
	case "leave":
		p.leaving("/leave")
		return p.s.DisconnectWith(session.DisconnectReasonDisconnected, leaveMessage)
	case "transfer":
		if p.operator {
			return p.transfer(strings.TrimSpace(arg))
		}
	}
	return p.write(systemText("§cUnknown command. Try /list or /leave."))
}

// transfer sends the player to the server at addr, host:port.
func (p *player) transfer(addr string) error {
	if addr == "" {
		return p.write(systemText("§cUsage: /transfer HOST:PORT"))
	}
	if err := p.s.Transfer(addr); err != nil {
		return p.write(systemText("§c" + err.Error()))
	}
	// Before HandleClose, which runs on this goroutine after the
	// session's loop has ended.
	p.leaving("transferred to " + addr)
	p.s.Log().Info().Str("to", addr).Msg("player transferred")
	return nil
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
		e.Str("reason", why) // the server's lines' name for it
		if spawned {
			e.Msg("player left the lobby")
		} else {
			e.Stringer("phase", p.join.Phase())
			if d := time.Duration(p.timedOut.Load()); d > 0 {
				e.Stringer("timeout", d)
			}
			e.Msg("player left while joining the lobby")
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
