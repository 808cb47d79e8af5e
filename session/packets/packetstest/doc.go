// Package packetstest runs sessions over memory, for tests: Pipe connects a
// session.Conn to a client End, Network lets gophertunnel's own client
// (minecraft.Dialer.DialContextNetwork) dial one, and Client is a bare
// client that logs in and then sends and reads packets one at a time.
//
//	server, client := packetstest.Pipe()
//	s := session.New(server, session.Config{NewHandler: newHandler})
//	go s.Run(ctx)
//	c, err := packetstest.Login(client, "Steve", 5*time.Second)
//	...
//	err = c.WritePacket(&packet.Text{TextType: packet.TextTypeChat, ...})
package packetstest
