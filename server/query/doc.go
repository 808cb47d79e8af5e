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
package query
