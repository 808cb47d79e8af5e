package server_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/config"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/go-gl/mathgl/mgl32"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// counter is one player's handler: it answers each chat message with how
// many this player has sent, kept in the handler itself: no map, no lock.
// The session has run the login (network settings, protocol check, Login,
// encryption) and the server has given the player a slot before
// newCounter is called; session/join then spawns the player and hands
// the counter the player's packets from the spawn on, decoded once, for
// the player's protocol.
type counter struct {
	packets.NopTypedHandler
	join *join.Join
	name string
	said int
}

// newCounter is the server's NewHandler: it spawns each player in an
// empty world, where it flies, with a counter of its own.
var newCounter = (&join.World{
	GameData: join.GameData{
		WorldName:      "Counter",
		PlayerGameMode: packet.GameTypeSpectator, // flies: there is no ground
		PlayerPosition: mgl32.Vec3{0, 70, 0},
	},
	NewPlayer: func(s *session.Session, j *join.Join) (join.Handler, error) {
		id, _ := s.Identity()
		if id.DisplayName == "Herobrine" {
			return nil, session.Kick("Not you again.") // ends this session only
		}
		return &counter{join: j, name: id.DisplayName}, nil
	},
}).NewHandler

// HandleSpawn is called once, when the player is in the world.
func (c *counter) HandleSpawn(*session.Session) error {
	return c.say("Welcome, " + c.name + "! Say something.")
}

func (c *counter) HandlePacket(_ *session.Session, pk packet.Packet) error {
	if t, ok := pk.(*packet.Text); ok && t.TextType == packet.TextTypeChat {
		c.said++
		return c.say(fmt.Sprintf("%s, that was message %d.", c.name, c.said))
	}
	return nil
}

func (c *counter) say(msg string) error {
	return c.join.Write(&packet.Text{TextType: packet.TextTypeRaw, Message: msg})
}

// This example runs a server from config.toml, logging as its [log] table
// says, with a custom handler until Ctrl-C or SIGTERM.
func Example_customHandler() {
	if err := run("config.toml"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1) // so a process manager's Restart=on-failure acts
	}
}

// run serves with the configuration in path until Ctrl-C or SIGTERM. It
// returns an error when the configuration is bad or the server cannot
// listen (a port taken).
func run(path string) error {
	uc, err := config.Load(path)
	if err != nil {
		return err
	}
	log, logFile, err := uc.Logger() // [log]: level, format, file
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer logFile.Close()
	conf, err := uc.Config(log) // the server logs "listening", joins, leaves
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// This handler takes the place of the built-in ones that
	// server.handler and server.greeting configure.
	conf.NewHandler = newCounter
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return conf.New().Run(ctx)
}

// This example starts a server on a random loopback port and reads the
// MOTD it advertises.
func ExampleServer_Status() {
	srv := server.Config{AuthenticationDisabled: true, Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}, Status: server.StatusConfig{Name: "My server", MaxPlayers: 10}}.New()
	if err := srv.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	st := srv.Status()
	fmt.Println(st.ServerName, st.Players, st.MaxPlayers, st.Extra)
	// Output: My server 0 10 [0]
}
