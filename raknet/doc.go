// Package raknet implements the RakNet transport as Minecraft Bedrock speaks
// it: unconnected ping/pong discovery, MTU negotiation, the connected
// handshake and the reliability layer (frames, ACK/NACK, resends, ordering
// channels, sequencing, fragmentation, keepalive and disconnect).
//
// The API is shaped like package net. A server:
//
//	l, err := raknet.Listen("0.0.0.0:19132")
//	if err != nil { ... }
//	l.PongData([]byte("MCPE;..."))
//	for {
//		c, err := l.AcceptConn()
//		if err != nil { return }
//		go handle(c)
//	}
//
// A client:
//
//	pong, err := raknet.Ping(ctx, "example.com:19132")
//	c, err := raknet.Dial(ctx, "example.com:19132")
//	_, err = c.Write(batch)     // ReliableOrdered on channel 0
//	p, err := c.ReadPacket()    // one message
//	err = c.Close()             // flushes, then tells the peer
//
// Errors are *net.OpError values. Closed listeners and connections wrap
// net.ErrClosed; a connection the peer closed also wraps ErrPeerClosed,
// one whose peer went silent ErrPeerTimeout, and deadlines
// os.ErrDeadlineExceeded.
//
// raknet knows nothing about Minecraft beyond the pong bytes it is handed.
//
// # On the internet
//
// The RakNet listener treats every datagram as hostile. What it does, so a
// flood of forged traffic cannot lock players out, reflect replies at a
// victim, or make the server hold unbounded memory:
//
//   - Cookies. OpenConnectionReply1 carries a stateless SipHash-2-4
//     cookie over the client's address, port and RakNet version (the key
//     rotates every 10 s; the current and previous one are accepted).
//     OpenConnectionRequest2 must echo it: a forged one is dropped without a
//     reply and counted, never logged per address and never held against the
//     address (its owner may be the one forged). Clients of RakNet protocol 10
//     (jsp-raknet and rust-raknet, the backends of PrismarineJS
//     bedrock-protocol) cannot read a cookie: they get none and join through
//     a small pool of its own (16 handshakes, 3 s each), which a flood can
//     fill without touching anything else.
//   - Handshakes take no player's place. Connections in their handshake
//     live in their own bounded pool (1024, 5 s) apart from established ones;
//     `raknet.max_connections` and `server.max_players` count established
//     connections only. A connection is established only by ConnectionRequest,
//     its answer and NewIncomingConnection, in that order; no game data is
//     held before. Until then it sends at most three times the bytes it
//     received (QUIC's anti-amplification rule).
//   - No eviction. A request for the address of an established connection
//     from another client GUID gets AlreadyConnected; the connection stays. A
//     client restarted on the same port gets in once its old connection timed
//     out (`raknet.timeout`).
//   - Rate limits. Offline replies (pongs, handshake replies, refusals) are
//     limited per source prefix (IPv4 /24, IPv6 /64: 64 a second, bursts of
//     128, enough for LAN scans and server lists) and to 1 MiB/s in all. A
//     proven IP address may start 10 handshakes a second and hold 16
//     established connections (households and LAN parties share an address).
//     Probes below the minimum MTU and datagrams over the largest MTU get
//     nothing.
//   - Counted, not logged. Every refusal is counted by kind in
//     `raknet.ListenerStats`; traffic from unproven addresses is logged as one
//     summary line every 10 s at most.
//
// # Behind a tunnel or filter
//
// Tunnels and DDoS filters (playit.gg, frp, TCPShield-style) forward the
// players' datagrams from their own address, so without help every player
// would seem to be the proxy: one IP for the per-IP limits, the cookies and
// the logs. Most can put a PROXY protocol header naming the player in front
// of each datagram: v2 (binary), or v1 (text, `PROXY TCP4 <player> <server>
// <player port> <server port>\r\n`, as nginx sends it). Set `network.proxy_protocol = true` and list the
// proxies' addresses in `network.trusted_proxies`; then:
//
//   - The player a header names is who the server sees everywhere: per-IP
//     limits, cookies, logs, `RemoteAddr`, the address in the handshake.
//     Replies go back to the proxy's address and port.
//   - A header from an address not in `trusted_proxies` is refused unread and
//     counted (`ListenerStats.ProxyUntrusted`). A datagram without a header
//     from such an address is a player of its own, so LAN players still join
//     directly.
//   - Some proxies put the header on every datagram, others (frp) only on a
//     flow's first. The header's player is remembered for the proxy's address
//     and port (at most 8192 flows, each forgotten after `raknet.timeout`
//     unused), and later datagrams from there without a header are that
//     player's. A trusted proxy's datagram without a header and without such a
//     flow is dropped and counted (`ProxyNoFlow`); LOCAL (v2) and UNKNOWN (v1)
//     headers, the proxy's own traffic, are dropped (`ProxyLocal`).
//   - Only the proxies should be able to send from the trusted addresses
//     (firewall the server's port to them): whoever can may claim to be any
//     player.
package raknet
