// Package reliability is RakNet's reliability layer as a pure,
// single-threaded state machine: no sockets, goroutines, locks or wall
// clock. A Layer is fed received datagrams, application messages and the
// current time; it yields datagrams to send, delivered messages and the
// time it next needs attention.
//
//	l := reliability.New(cfg, now)
//	_ = l.Send(now, msg, wire.ReliableOrdered, 0)
//	for d := l.AppendDatagram(buf[:0], now); d != nil; d = l.AppendDatagram(buf[:0], now) {
//		conn.WriteTo(d, addr)
//	}
//	timer.Reset(l.NextDeadline(now).Sub(now))
//
// Every sequence number is compared with wrap-aware u24 arithmetic and
// every structure fed by the peer has a hard bound.
package reliability
