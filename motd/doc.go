// Package motd encodes and parses the semicolon-separated status string a
// Bedrock server returns in its unconnected pong, e.g.
//
//	MCPE;Dedicated Server;527;1.19.1;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;
//
// A server fills a Status once and re-encodes it whenever the player count
// changes, handing the bytes to the listener's PongData:
//
//	s := motd.Status{
//		Edition:         motd.EditionBedrock,
//		ServerName:      "Basalt",
//		Protocol:        2193,
//		Version:         "1.26.50",
//		MaxPlayers:      20,
//		ServerGUID:      uint64(guid),
//		LevelName:       "Bedrock level",
//		GameMode:        "Survival",
//		GameModeNumeric: 1,
//		PortV4:          19132,
//		PortV6:          19133,
//		Extra:           []string{"0"},
//	}
//	s.Players = online
//	b, err := s.Encode() // MCPE;Basalt;2193;1.26.50;3;20;…;19132;19133;0;
//
// Encode never lets a name break the wire: ';' and '\' are replaced, control
// characters dropped, and names truncated so the string stays within the
// 400-byte limit stock RakNet puts on a pong. Validate reports the same
// problems as errors instead. Parse is tolerant of older and newer servers:
// missing trailing fields, extra fields (kept in Status.Extra) and a missing
// final ';' are all accepted.
package motd
