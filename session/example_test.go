package session_test

import (
	"context"

	"github.com/basaltmc/basalt/session"
)

// greeter lets GateHandler negotiate network settings, then greets the
// player by name instead of the gate's message.
type greeter struct {
	session.GateHandler
}

func (g greeter) HandlePacket(s *session.Session, p session.Packet) error {
	if p.ID == session.IDLogin {
		id, err := session.ParseLogin(p.Payload)
		if err != nil {
			return err
		}
		s.SetIdentity(id)
		return s.Disconnect("Welcome, " + id.DisplayName + "!")
	}
	return g.GateHandler.HandlePacket(s, p)
}

// This example runs a session with a custom handler over a transport
// connection, such as a raknet.Conn accepted by a listener.
func Example() {
	var conn session.Conn // from the transport, e.g. raknet.Listener.Accept
	if conn == nil {
		return
	}
	s := session.New(conn, session.Config{Handler: greeter{}})
	_ = s.Run(context.Background()) // returns when the session ends
}
