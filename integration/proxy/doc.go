// Package proxy is a lossy UDP proxy for end-to-end tests. It sits between
// a client and a server on loopback and, per datagram and per Direction,
// can drop, duplicate or delay what it forwards. Delays are scheduled on a
// per-connection queue ordered by release time, so delays with jitter
// reorder datagrams the way a real network does.
//
// Each client address gets its own upstream socket, so the server sees every
// client as a distinct peer. A test wires it up like this:
//
//	seed, err := proxy.Seed() // BASALT_PROXY_SEED replays a failure
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Logf("seed %d", seed)
//	drop, dup, delay := proxy.RandomLoss(seed, 0.05, 0.01,
//		5*time.Millisecond, 2*time.Millisecond)
//	p, err := proxy.New(proxy.Opts{
//		RemoteAddr:      server.Addr().String(),
//		DropPacket:      drop,
//		DuplicatePacket: dup,
//		DelayPacket:     delay,
//	})
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer p.Close()
//	// Dial p.LocalAddr() instead of the server.
//
// The package is modelled on quic-go's integrationtests/tools/proxy and is
// meant for tests only: it keeps every connection until Close.
package proxy
