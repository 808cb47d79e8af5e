// Package raknet implements the RakNet transport as Minecraft Bedrock speaks
// it: unconnected ping/pong discovery, MTU negotiation, the connected
// handshake and the reliability layer (frames, ACK/NACK, resends, ordering
// channels, sequencing, fragmentation, keepalive and disconnect).
//
// The API is shaped like package net:
//
//	l, err := raknet.Listen("0.0.0.0:19132")
//	if err != nil { ... }
//	l.PongData([]byte("MCPE;..."))
//	for {
//		c, err := l.Accept()
//		if err != nil { return }
//		go handle(c.(*raknet.Conn))
//	}
//
// raknet knows nothing about Minecraft beyond the pong bytes it is handed.
package raknet
