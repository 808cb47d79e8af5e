// Package query answers the GameSpy4 "Query" protocol as PocketMine-MP
// does on a Bedrock server's game port: a client asks for a challenge
// token (handshake), then with it for a basic stat (name, map, player
// counts, address) or a full stat (key/value pairs and the player list).
// The requests begin fe fd, which no RakNet datagram does, so the game
// listener hands them here (raknet.ListenConfig.Query).
//
// The package is pure: Request.Decode and the Append functions are the
// wire codec, Tokens makes stateless challenge tokens, and Responder puts
// them together behind a function the server provides for its live status:
//
//	r := &query.Responder{
//		Tokens: query.NewTokens(secret, 0),
//		Status: func() query.Status { return query.Status{HostName: "Basalt", MaxPlayers: 20} },
//	}
//	lc := raknet.ListenConfig{Query: r.Answer}
//
// Nothing is kept per client: a token is a MAC of the client's address and
// the time, and a stat reply goes only to a sender that echoed one.
//
// # Query
//
// With `network.query` on (the default) the game ports also answer the
// GameSpy4 "Query" protocol the way PocketMine-MP does, so server lists and
// tools read the name, map, version, player counts and player names. A
// client first asks for a challenge token (`fe fd 09`), then for a basic or
// full stat with it (`fe fd 00`). The token is a SipHash MAC of the client's
// address and port and the time (it lives 30 to 60 s), so the server keeps
// nothing per client, and a stat goes only to an address that received its
// token: a forged source can be sent at most the handshake reply, 16 bytes
// for 7. Queries pay the same per-prefix rate and reply-byte limits as pings
// and are counted in `raknet.ListenerStats` (`QueryAnswered`, refusals in
// `Dropped` and `RateLimited`). No RakNet datagram begins `fe`: that byte
// sets both the ACK and the NACK flag. Try it with
// `go run ./scripts/ping -query 127.0.0.1:19132`.
//
// Servers behind one load balancer should share `network.cookie_secret_file`:
// each then accepts the RakNet cookies and query tokens the others issued.
package query
