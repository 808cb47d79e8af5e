package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/basaltmc/basalt/server/console"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	mcpacket "github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// DefaultKickMessage is what a kicked player sees when the operator gave
// no reason.
const DefaultKickMessage = "Kicked by an operator."

// Kick disconnects the players online whose name (in any case) or XUID is
// player, with reason (DefaultKickMessage if empty), and reports how many.
// It returns an error if none is online.
func (srv *Server) Kick(player, reason string) (int, error) {
	if reason == "" {
		reason = DefaultKickMessage
	}
	n := 0
	for _, s := range srv.Sessions() {
		id, ok := s.Identity()
		if !ok || !(strings.EqualFold(id.DisplayName, player) || (id.XUID != "" && id.XUID == player)) {
			continue
		}
		if s.DisconnectWith(session.DisconnectReasonKicked, reason) == nil {
			n++
			srv.log.Info().Str("player", id.DisplayName).Str("xuid", id.XUID).Str("reason", reason).Msg("kicked")
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no player %q online", player)
	}
	return n, nil
}

// Transfer sends the players online whose name (in any case) or XUID is
// player to the server at address, host:port, with a Transfer packet
// (session.Session.Transfer), and reports how many. It returns an error
// for a malformed address, and if none is online.
func (srv *Server) Transfer(player, address string) (int, error) {
	n := 0
	for _, s := range srv.Sessions() {
		id, ok := s.Identity()
		if !ok || !(strings.EqualFold(id.DisplayName, player) || (id.XUID != "" && id.XUID == player)) {
			continue
		}
		err := s.Transfer(address)
		if errors.Is(err, net.ErrClosed) {
			continue // leaving already
		}
		if err != nil {
			return n, err
		}
		n++
		srv.log.Info().Str("player", id.DisplayName).Str("xuid", id.XUID).Str("to", address).Msg("transferred")
	}
	if n == 0 {
		return 0, fmt.Errorf("no player %q online", player)
	}
	return n, nil
}

// Say sends message to every player online as a line of chat from the
// server, "[Server] message", laid out for each player's protocol, and
// reports how many it was sent to. A player still loading the world may
// not show it. It is safe for concurrent use.
func (srv *Server) Say(message string) (int, error) {
	message = strings.TrimSpace(message)
	if message == "" {
		return 0, errors.New("no message to say")
	}
	srv.mu.Lock()
	var players []*session.Session
	for s, e := range srv.sessions {
		if e.player {
			players = append(players, s)
		}
	}
	srv.mu.Unlock()
	var codec packets.Codec // each session's own protocol
	n := 0
	for _, s := range players {
		if codec.Write(s, &mcpacket.Text{TextType: mcpacket.TextTypeRaw, Message: "[Server] " + message}) == nil {
			n++
		}
	}
	srv.log.Info().Str("text", message).Int("players", n).Msg("said")
	return n, nil
}

// Players returns the identities of the players online (sessions holding
// a slot), sorted by name.
func (srv *Server) Players() []session.Identity {
	srv.mu.Lock()
	var ids []session.Identity
	for s, e := range srv.sessions {
		if id, ok := s.Identity(); ok && e.player {
			ids = append(ids, id)
		}
	}
	srv.mu.Unlock()
	slices.SortFunc(ids, func(a, b session.Identity) int {
		return strings.Compare(strings.ToLower(a.DisplayName), strings.ToLower(b.DisplayName))
	})
	return ids
}

// PlayerLimit returns the number of players the server admits now:
// Config.Status.MaxPlayers until UpdateStatus or the StatusProvider change it.
func (srv *Server) PlayerLimit() int { return srv.playerLimit() }

// RunConsole runs the operator commands it reads from r, one a line (see
// package console; help lists them), until r ends or stop is. Each answer
// goes to the server's log, so it lands wherever the log does. stop is
// what the stop command calls: main passes the cancel of the context Run
// waits on, so that stop shuts down as Ctrl-C does. It returns nil at the
// end of r, and the error that ended reading otherwise.
func (srv *Server) RunConsole(r io.Reader, stop func()) error {
	return console.Run(r, srv, srv.conf.Log.With().Str("src", "console").Logger(), stop)
}
