package server_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/lobby"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// counter is one player's handler: the built-in lobby's handler for that
// player (it spawns them and runs the chat), plus what this player said,
// kept in the handler itself: no map, no lock. The session has run the
// login (network settings, protocol check, Login, encryption) and the
// server has given the player a slot before newCounter is called.
type counter struct {
	session.Handler // the lobby's handler for this player
	codec           packets.Codec
	name            string
	said            int
}

func newCounter(lby *lobby.Lobby) func(*session.Session) (session.Handler, error) {
	return func(s *session.Session) (session.Handler, error) {
		id, _ := s.Identity()
		if id.DisplayName == "Herobrine" {
			return nil, session.Kick("Not you again.") // ends this session only
		}
		h, err := lby.NewHandler(s)
		if err != nil {
			return nil, err
		}
		return &counter{Handler: h, name: id.DisplayName}, nil
	}
}

func (c *counter) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID == packet.IDText {
		if pk, err := c.codec.Decode(p); err == nil && pk.(*packet.Text).TextType == packet.TextTypeChat {
			c.said++
			msg := fmt.Sprintf("%s, that was message %d.", c.name, c.said)
			if err := c.codec.Write(s, &packet.Text{TextType: packet.TextTypeRaw, Message: msg}); err != nil {
				return err
			}
		}
	}
	return c.Handler.HandlePacket(s, p) // the lobby relays the chat
}

// This example runs a server from config.toml with a custom handler until
// Ctrl-C.
func Example_customHandler() {
	uc, err := server.LoadConfig("config.toml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conf, err := uc.Config(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lby := lobby.New(lobby.Config{Greeting: "Welcome, {player}! Say something."})
	conf.NewHandler = newCounter(lby)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := conf.New().Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// This example starts a server on a random loopback port and reads the
// MOTD it advertises.
func ExampleServer_Status() {
	srv := server.Config{AuthenticationDisabled: true, AddressV4: "127.0.0.1:0", Name: "My server", MaxPlayers: 10}.New()
	if err := srv.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	st := srv.Status()
	fmt.Println(st.ServerName, st.Players, st.MaxPlayers, st.Extra)
	// Output: My server 0 10 [0]
}
