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
// Everything a peer can make the Listener hold is bounded: the offer's
// size, negotiations in flight (HTTP and half-open peer connections
// together), negotiations per IP per second and each negotiation's time.
// Refusals are counted (Stats) and logged as periodic summaries.
package nethernet
