// Package nethernet serves Bedrock players over NetherNet, the WebRTC
// transport current clients join through, beside the server's own RakNet.
//
// A Listener answers HTTP signalling on TCP (the port the player typed,
// 19132 by default): GET /v1/join with the server's status as JSON, and
// POST /v1/join/{networkId} with an SDP offer, which gets an SDP answer
// signed with the server's persistent P-384 identity (see LoadIdentityKey).
// The peer connection (ICE, DTLS, SCTP data channels) is go-nethernet's,
// over pion; ICE runs on one UDP socket the Listener is given or opens, so
// it can share the RakNet port (see Demux). Accepted connections are
// session.Conns whose Transport says they frame and encrypt themselves and
// which key the client proved.
//
// Every offer, whether HTTP or a LAN signal carried it, takes one
// admission path before any WebRTC state is made for it: its shape, its
// identity token in online mode, offers and negotiations per source and
// per prefix, a global cap and the answering turns. An answered client
// must prove its address with a valid ICE check within DefaultProofWindow,
// or its peer connection is torn down; signalling connections are capped,
// slow ones closed first. Refusals are counted (Stats) and logged as
// periodic summaries.
//
// # NetherNet
//
// Bedrock is moving off RakNet: 1.26.50 and later clients try NetherNet
// (WebRTC) first when a player types an address, and 1.26.60 and later join
// over NetherNet only. Basalt serves both at once (`network.nethernet`, on
// by default), behind the same sessions, handlers, player slots and
// metrics: a player is a player whichever transport carried them.
//
//	| client | typed address | LAN list |
//	|---|---|---|
//	| up to 1.26.45 | RakNet, as before | RakNet pong on 19132/19133 |
//	| 1.26.50 – 1.26.5x | asks `GET /v1/join` (https, then http, on the typed port); Basalt answers, so it joins over NetherNet; with NetherNet off or the TCP port closed it falls back to RakNet | RakNet pong, and NetherNet discovery on UDP 7551 under the same GUID |
//	| 1.26.60 and later | NetherNet only: without `network.nethernet`, or with TCP closed, it cannot join | NetherNet discovery on UDP 7551 (whether it still lists RakNet servers is unknown) |
//
// How a join goes: the client asks `GET /v1/join` on TCP at the port it was
// given and shows the JSON answer (`name`, `protocol`, `version`, `level`,
// `players`, `maxPlayers`, `gameType`, live like the MOTD); it then posts its
// WebRTC offer to `POST /v1/join/{networkId}` and gets Basalt's answer, signed
// with the server's identity key; ICE, DTLS and the SCTP data channels follow
// over UDP. Batches travel without RakNet's 0xfe header and without Bedrock
// encryption (DTLS protects them), and the Login's identity key must be the
// key the client proved in its offer, or the player is refused as not
// authenticated: a captured Login cannot be replayed. In online mode offers
// without an identity (offline tools; the game always sends one) are
// refused; with `server.online_mode = false` they are let in, unbound to any key,
// as RakNet players are.
//
//   - Firewall: one number. Open the game port, 19132, on TCP and UDP
//     (and UDP 19133 for IPv6 RakNet clients). The signalling is HTTP on TCP
//     19132; ICE runs on the RakNet socket itself, UDP 19132: STUN, DTLS and
//     RakNet datagrams are told apart by their first bytes (STUN 0–3 with the
//     magic cookie and a length that fits, DTLS 20–63, RakNet 0x01, 0x02,
//     0x05, 0x07 or 0x80 and up), so no other port is needed. LAN discovery
//     adds UDP 7551 (`network.lan_discovery`). `network.nethernet_ice_port`
//     moves ICE to a UDP port of its own, if you prefer to keep it apart. Every
//     port, and the commands to open them: the README's Ports and
//     firewall.
//   - The trust prompt. Over plain HTTP (the default) the client cannot
//     tell the server is who it says, so the first join asks the player to
//     trust the server's key. The key is kept in `network.nethernet_identity_file`
//     (`nethernet_identity`, mode 0600, beside the GUID file) so the player is
//     asked once per server, not once per start; keep the file, and back it up
//     with the GUID. Deleting it makes a new key, and the prompt comes back.
//   - TLS. With `network.nethernet_tls_cert` and `network.nethernet_tls_key`
//     (PEM, e.g. from Let's Encrypt for the name players type) signalling is
//     HTTPS, which clients try first; a certificate they trust for that name
//     spares them the prompt. Plain HTTP is then not served.
//   - Candidates follow the bind address. Bound to `127.0.0.1` the server
//     offers loopback candidates only; bound to `0.0.0.0` it offers the host's
//     addresses. Behind NAT, Docker or a tunnel set `network.public_address`:
//     its IP is offered as an extra candidate. pion rewrites addresses, not
//     ports, so forward the same UDP port number you listen on.
//   - Admission: one path for every offer. An offer, whether it came over
//     HTTP or as a LAN signal, passes the same checks before any WebRTC state
//     is made for it: at most 16 offers a second and 16 negotiations in
//     progress per source (an IPv4 address, an IPv6 /64) and four times as
//     many per prefix (an IPv4 /24, an IPv6 /48), so a household or a school
//     behind one address joins together and IPv6's free addresses buy an
//     attacker nothing; at most 256 negotiations in all; offers over 16 KiB,
//     or that are not an SDP offer go-nethernet could answer, are refused
//     (413, 400). In online mode the offer's token is checked, as a Login's
//     is, before anything else: a failing one is refused with NetherNet's
//     identity error code (HTTP 400, "Negotiation failed with error code:
//     37"), and logged at info. A negotiation's slot is freed the moment it
//     ends, joined or failed.
//   - No state held for an unproven address. An answered client must send
//     its first ICE check (a STUN binding request whose MESSAGE-INTEGRITY
//     verifies with the answer's password) within 2 s, one round trip for an
//     honest client; otherwise its peer connection is torn down. When the 256
//     are taken, the oldest answered negotiation whose client has not done so
//     gives up its place to the new offer. A flood of offers that never
//     complete costs an answer each (about a millisecond) and a short-lived
//     peer connection, not a player's place.
//   - Slow connections. The signalling endpoint holds at most 256 TCP
//     connections, 8 per source; a request's header must arrive within 3 s
//     and the whole request within 5 s. When the endpoint is full, the oldest
//     connection still sending its request is closed for the new one: an
//     honest client sends its request whole, at once, and is served beside
//     a thousand slow ones.
//   - The LAN is the LAN. LAN discovery and LAN signals are heard only
//     from loopback, private and link-local addresses, and discovery binds
//     the address the game binds (0.0.0.0 when the game binds a wildcard).
//     The advertisement is the version 7 layout 1.26.6x clients read.
//   - Trusted proxies (`network.trusted_proxies`) are never limited per
//     source themselves. Refusals are counted by reason
//     (`basalt_nethernet_refused_total`, `basalt_nethernet_unproven_total`,
//     `basalt_nethernet_signalling_connections_closed_total`) and logged as a
//     summary every 30 s.
package nethernet
