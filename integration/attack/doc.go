// Package attack reproduces, over loopback, the attacks a RakNet listener
// on the internet sees: floods of offline messages from thousands of
// spoofed 127.x.y.z sources (pings, OpenConnectionRequest1 and 2,
// ConnectionRequest reflection, junk), connected clients that make the
// server hold memory (split messages never finished, ordered messages far
// ahead of a gap) or work (ACKs of 4,096 records), and one address taking
// every slot from many ports.
//
// It is test support: only integration tests and scripts/flood import it.
// Every tool is bounded in count and in time and stops by itself, and
// every target and source must be a loopback address: Spoofer, Dial and
// Grab refuse anything outside 127.0.0.0/8.
//
// A Spoofer sends from many source addresses through one socket bound to
// the wildcard address, so it also receives every reply the server sends
// to any of them and can measure amplification exactly:
//
//	s := attack.Spoofer{
//		Target:   server,
//		Sources:  attack.Sources(1000, 4),
//		Shape:    attack.Seq(attack.OCR2(attack.NoCookie), attack.ConnectionRequest()),
//		Rate:     10000,
//		Count:    2000,
//		Duration: 2 * time.Second,
//		Linger:   3 * time.Second,
//	}
//	r, err := s.Run(ctx)
//	// r.Amplification(), r.After.Datagrams, r.MaxPrefixBytesPerSecond ...
//
// A Client completes the handshake itself over its own socket, so every
// frame it sends afterwards is under the caller's control:
//
//	c, err := attack.Dial(ctx, attack.ClientConfig{Local: ip, Server: server})
//	sent, err := c.OpenSplits(ctx, 100, 63)
package attack
