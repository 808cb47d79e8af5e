package server_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
)

// greeter is one player's handler. The session has run the login (network
// settings, protocol check, Login, encryption) before newGreeter is called,
// and the server has given the player a slot.
type greeter struct {
	session.NopHandler
	name string
}

func newGreeter(s *session.Session) (session.Handler, error) {
	id, _ := s.Identity()
	if id.DisplayName == "Herobrine" {
		return nil, session.Kick("Not you again.") // ends this session only
	}
	s.Log().Info().Msg("greeting")
	return &greeter{name: id.DisplayName}, nil
}

func (g *greeter) HandlePacket(s *session.Session, p session.Packet) error {
	return s.Disconnect("Hello, " + g.name + "! Come back soon.")
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
	conf.NewHandler = newGreeter
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
	srv := server.Config{AddressV4: "127.0.0.1:0", Name: "My server", MaxPlayers: 10}.New()
	if err := srv.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	st := srv.Status()
	fmt.Println(st.ServerName, st.Players, st.MaxPlayers, st.Extra)
	// Output: My server 0 10 [0]
}
