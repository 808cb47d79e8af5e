package raknet

import "sync"

// datagramBuffers holds the buffers datagrams are built in. Connections
// borrow one per datagram and return it once it is written, so an idle
// connection holds no MTU-sized buffer.
var datagramBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, MaxMTU)
	return &b
}}

// outDatagram is a datagram built under a connection's lock, to be
// written copies times once the lock is released.
type outDatagram struct {
	b      *[]byte
	copies int
}

// outbox holds the datagrams one pass over a connection built. Outboxes
// are pooled: a pass takes one only when it builds a datagram.
type outbox struct {
	d []outDatagram
}

var outboxes = sync.Pool{New: func() any { return &outbox{d: make([]outDatagram, 0, 8)} }}

// add queues datagram b to be written copies times.
func (o *outbox) add(b *[]byte, copies int) {
	o.d = append(o.d, outDatagram{b, copies})
}

// send writes every datagram of out to the peer, without c.mu, and
// returns out and its buffers to their pools.
func (c *Conn) send(out *outbox) {
	batched := c.ep.writeOut(out, c.wap)
	for i, d := range out.d {
		for range d.copies {
			if batched {
				break
			}
			if err := c.ep.write(*d.b, c.wap); err != nil && c.ep.logWriteError() {
				c.cfg.log.Debug().Err(err).Msg("write datagram")
			}
		}
		datagramBuffers.Put(d.b)
		out.d[i] = outDatagram{}
	}
	out.d = out.d[:0]
	outboxes.Put(out)
}
