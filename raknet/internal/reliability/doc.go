// Package reliability is RakNet's reliability layer as a pure,
// single-threaded state machine: no sockets, goroutines, locks or wall
// clock. A Layer is fed received datagrams, application messages and the
// current time; it yields datagrams to send, delivered messages and the
// time it next needs attention.
//
//	l := reliability.New(reliability.Config{
//		MaxDatagram: mtu - 28, // required: the MTU less the IP and UDP headers
//		Budget:      account,  // optional: charged for what the peer makes us hold
//	}, now)
//	defer l.Close() // gives the budget back
//	_, _ = l.Send(msg, wire.ReliableOrdered, 0)
//	_ = l.HandleDatagram(now, datagram) // may deliver messages
//	for msg, owned, ok := l.Next(); ok; msg, owned, ok = l.Next() {
//		if !queue(msg, owned) { // not kept for the reader
//			l.Release(len(msg))
//		}
//	}
//	l.Consumed(now, len(msg)) // the reader took one; may deliver more
//	for d := l.AppendDatagram(buf[:0], now); d != nil; d = l.AppendDatagram(buf[:0], now) {
//		conn.WriteTo(d, addr)
//	}
//	if d := l.NextDeadline(now); !d.IsZero() { // zero: nothing due
//		timer.Reset(d.Sub(now))
//	}
//
// Example runs two layers so over a perfect link.
//
// Every sequence number is compared with wrap-aware u24 arithmetic and
// every structure fed by the peer has a hard bound, the messages kept for
// the reader included: RakNet has no flow control but the ACKs a
// receiver withholds (see admission.go). A Budget shared by many
// connections bounds their sum (see budget.go). What a peer's ACKs and
// NACKs cost is bounded too: records must be sorted, disjoint and within
// the datagrams sent, and NACKs resend at most maxNACKedPerSecond
// datagrams a second.
package reliability
