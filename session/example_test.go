package session_test

import (
	"context"
	"time"

	"github.com/basaltmc/basalt/session"
)

// greeter is one player's handler: the session has logged the player in
// before newGreeter is called, so it knows who it greets.
type greeter struct {
	session.NopHandler
	name string
}

// newGreeter refuses players without an Xbox account and greets the
// others by name.
func newGreeter(s *session.Session) (session.Handler, error) {
	id, _ := s.Identity()
	if id.XUID == "" {
		return nil, session.Kick("Sign in to Xbox Live to play here.")
	}
	return &greeter{name: id.DisplayName}, nil
}

// HandlePacket greets the player at the first packet it sends after
// logging in.
func (g *greeter) HandlePacket(s *session.Session, p session.Packet) error {
	return s.Disconnect("Welcome, " + g.name + "!")
}

// This example runs a session with a custom handler over a transport
// connection, such as a raknet.Conn accepted by a listener, with
// encryption on.
func Example() {
	var conn session.Conn // from the transport, e.g. raknet.Listener.Accept
	if conn == nil {
		return
	}
	s := session.New(conn, session.Config{NewHandler: newGreeter, Encryption: true})
	time.AfterFunc(time.Minute, func() {
		_ = s.Disconnect("Time is up.") // does not block
	})
	_ = s.Run(context.Background()) // returns when the session ends
}
