package server_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/session"
)

// greeter lets the default gate negotiate network settings and check the
// protocol, then greets each player by name.
type greeter struct {
	session.GateHandler
}

func (g greeter) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID != session.IDLogin {
		return g.GateHandler.HandlePacket(s, p)
	}
	id, err := session.ParseLogin(p.Payload)
	if err != nil {
		return err // ends this session only
	}
	s.SetIdentity(id)
	s.Log().Info().Msg("greeting")
	return s.Disconnect("Hello, " + id.DisplayName + "! Come back soon.")
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
	conf.Handler = greeter{}
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
