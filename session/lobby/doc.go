// Package lobby is Basalt's second built-in handler: an empty world where
// players wait together. A player spawns as a spectator floating above the
// origin of an empty, always-noon overworld, is greeted in chat, sees other
// players join and leave, can chat, and has two commands: /list names the
// players in the lobby and /leave disconnects. The lobby keeps each player
// until they leave, their connection ends or Shutdown.
//
// A Lobby holds what players share; its NewHandler is a
// session.Config.NewHandler that makes each session's handler:
//
//	l := lobby.New(lobby.Config{Greeting: "Welcome, {player}!"})
//	s := session.New(conn, session.Config{NewHandler: l.NewHandler})
//	err := s.Run(ctx)
//	...
//	l.Shutdown("Server closed.")
//
// The session has logged the player in (and buffered PlayStatus
// LoginSuccess) before NewHandler runs. The lobby then spawns the player
// with session/join (see its package doc for the sequence and the source of
// each step), with the lobby's world: a spectator at (0.5, 65.62, 0.5) in
// the overworld, the list and leave commands (AvailableCommands) and the
// abilities to fly, pass through blocks and take no damage
// (UpdateAbilities) sent before the chunks, at most 4 chunks of view
// distance. On SetLocalPlayerAsInitialised the player gets the greeting and
// the others "<name> joined the lobby".
//
// A join that has not reached SetLocalPlayerAsInitialised within
// Config.JoinTimeout is ended. Only the packets the lobby reads are
// decoded (packets.RawHandler lets the rest, PlayerAuthInput every tick
// among them, by as bytes).
package lobby
