// Package simnet is an in-memory UDP network for tests. Its sockets are
// net.PacketConn values addressed by netip.AddrPort, and every wait in it
// is a channel receive or a time.Timer, so whole connections run under
// testing/synctest on virtual time: a test of ten seconds of keepalive
// takes milliseconds, and delivery times are exact.
//
//	synctest.Test(t, func(t *testing.T) {
//		n := simnet.New(simnet.Config{Seed: 1})
//		n.SetConditions(simnet.Conditions{Delay: 20 * time.Millisecond, Loss: 0.1})
//		lc := raknet.ListenConfig{ListenPacket: n.ListenPacket}
//		l, _ := lc.Listen("127.0.0.1:19132")
//		d := raknet.Dialer{ListenPacket: n.ListenPacket}
//		c, _ := d.DialContext(ctx, "127.0.0.1:19132")
//		...
//		fmt.Println(n.Stats().Lost)
//	})
//
// Each link, a (from, to) pair of addresses, has Conditions: loss,
// delay and jitter (which reorders), duplication, a bandwidth with a
// bounded drop-tail queue, and a Drop callback. Randomness comes from a
// PCG generator per link seeded from Config.Seed, so a seed replays the
// same losses for the same sequence of writes on a link.
//
// Writes never block. A datagram is delivered by a timer of the network
// at its arrival time into the receiving socket's buffer, which is
// bounded in bytes like the kernel's. The network starts no goroutine of
// its own: once every socket is closed nothing of it is left but timers.
package simnet
