// Package session runs one Bedrock session per transport connection: it
// runs the pre-game protocol itself, then hands each game packet of the
// logged-in player to a Handler and batches the packets the handler writes
// back.
//
// A batch is 0xfe, then (once NetworkSettings has been sent) a compression
// id (0x00 raw DEFLATE, 0x01 Snappy, 0xff none), then varuint32-length-
// prefixed packets whose varuint32 header is id | sender<<10 | target<<12.
// With encryption, everything after the 0xfe is AES-256-CTR encrypted with
// an 8-byte checksum appended. Incoming batches are capped in decompressed
// size and packet count, and a batch that breaks any rule ends its session
// without touching others. Until the player has logged in the caps are
// tighter: 4 MiB per batch rather than 16 MiB, decompression of little more
// than that in all, and 10 s to log in; a client that breaks one is told
// why with a Disconnect. Outgoing packets are buffered and sent as one
// batch per FlushInterval, or at once by Flush.
//
// The pre-game protocol, as the session speaks it (→ from the client, ←
// from the server):
//
//	→ RequestNetworkSettings(protocol)    uncompressed
//	← NetworkSettings(threshold, DEFLATE) uncompressed; compression on after
//	  or PlayStatus(LoginFailedClient|LoginFailedServer), and the end
//	→ Login(protocol, chain, client data) checked again; parsed; verified by
//	                                      Config.VerifyLogin if set
//	  with Config.Encryption:
//	← ServerToClientHandshake(JWT)        the last unencrypted batch
//	→ ClientToServerHandshake             encrypted, as everything after
//	← PlayStatus(LoginSuccess)            then Config.NewHandler is called
//
// A Login that cannot be read gets Disconnect(InvalidPlayer, "Invalid
// login."). Without Config.VerifyLogin the session runs in offline mode:
// Login chains are parsed but not verified against Xbox Live, so anyone can
// claim any name or XUID. Package auth's Verifier is a VerifyLogin that
// checks them (online mode); one it refuses gets Disconnect(NotAuthenticated,
// NotSignedInMessage).
//
// A client's own Disconnect, in any phase, ends its session at once: the
// player left, so nothing more is sent, and Run and HandleClose get a
// *LeaveError with the client's reason. A packet a handler cannot read (a
// newer client's, say) is not a reason to end a session: the handler
// skips it with Session.Skip, which counts it in Stats.PacketsSkipped and
// logs it at debug level, as package packets' Adapter does. Transfer sends
// a player to another server.
//
// The session depends only on the small Conn interface, which raknet.Conn
// satisfies, so another transport can carry it. With a zero Config a session
// runs the gate (Gate): the client logs in and is disconnected with a
// greeting that names it.
//
// Config.NewHandler makes each player's Handler once it has logged in; a
// handler embeds NopHandler and overrides what it needs. NewHandler or a
// handler that returns an error or panics ends its own session only, and a
// *DisconnectError (Kick) is shown to the player first:
//
//	type greeter struct {
//		session.NopHandler
//		name string
//	}
//
//	func newGreeter(s *session.Session) (session.Handler, error) {
//		id, _ := s.Identity()
//		if !id.Verified { // unverified, an XUID is only a claim
//			return nil, session.Kick("Sign in to Xbox Live to play here.")
//		}
//		return &greeter{name: id.DisplayName}, nil
//	}
//
//	func (g *greeter) HandlePacket(s *session.Session, p session.Packet) error {
//		return s.Disconnect("Welcome, " + g.name + "!")
//	}
//
//	// v is a started *auth.Verifier of package session/auth.
//	func serve(ctx context.Context, conn session.Conn, v *auth.Verifier, log *zerolog.Logger) error {
//		s := session.New(conn, session.Config{NewHandler: newGreeter, VerifyLogin: v.VerifyLogin,
//			Encryption: true, Log: log})
//		return s.Run(ctx) // returns when the session ends
//	}
//
// # Encryption
//
// With `network.encryption` (on by default) every session runs Bedrock's
// encryption handshake after its Login, as vanilla servers do: the server
// signs a ServerToClientHandshake with a P-384 key made at start (one per
// server), both sides derive an AES-256 key by ECDH with the key the client's
// Login carries, and every batch after it is encrypted (AES-256-CTR) with a
// SHA-256 checksum; a batch whose checksum is wrong ends that session.
// Encryption keeps the traffic private and tamper-evident on the way, and in
// online mode it proves the client holds the key its verified Login names.
// In Go, `server.Config`'s zero value encrypts too; `EncryptionDisabled: true`
// turns it off.
package session
