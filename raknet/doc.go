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
package raknet
