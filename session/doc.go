// Package session runs one Bedrock session per transport connection: it
// decodes the 0xfe batches a client sends, hands each game packet to a
// pluggable Handler and batches the packets the handler writes back.
//
// A batch is 0xfe, then (once NetworkSettings has been sent) a compression
// id (0x00 raw DEFLATE, 0x01 Snappy, 0xff none), then varuint32-length-
// prefixed packets whose varuint32 header is id | sender<<10 | target<<12.
// Incoming batches are capped in decompressed size and packet count, and a
// batch that breaks any rule ends its session without touching others.
// Until the player has logged in (the handler calls SetIdentity) the caps
// are tighter: 4 MiB per batch rather than 16 MiB, decompression of little
// more than that in all, and 10 s to log in; a client that breaks one is
// told why with a Disconnect.
// Outgoing packets are buffered and sent as one batch per FlushInterval, or
// at once by Flush.
//
// The session depends only on the small Conn interface, which raknet.Conn
// satisfies, so another transport can carry it. With a zero Config a session
// runs GateHandler: the client negotiates network settings, logs in, and is
// disconnected with a greeting that names it.
//
// A custom handler embeds NopHandler and overrides what it needs. A handler
// that returns an error or panics ends its own session only:
//
//	type greeter struct {
//		session.GateHandler // network settings and login
//	}
//
//	func (g greeter) HandlePacket(s *session.Session, p session.Packet) error {
//		if p.ID == session.IDLogin {
//			id, err := session.ParseLogin(p.Payload)
//			if err != nil {
//				return err
//			}
//			s.SetIdentity(id)
//			return s.Disconnect("Welcome, " + id.DisplayName + "!")
//		}
//		return g.GateHandler.HandlePacket(s, p)
//	}
//
//	func serve(ctx context.Context, conn session.Conn, log *zerolog.Logger) error {
//		s := session.New(conn, session.Config{Handler: greeter{}, Log: log})
//		return s.Run(ctx) // returns when the session ends
//	}
package session
