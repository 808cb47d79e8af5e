package raknet

import "net/netip"

// writeOut writes the datagrams of out to ap, each its copies times, in
// one system call where batched I/O allows: a pass that built more than
// one datagram (a reply and the ACK leaving with it) queues them on a
// socket and sends them with one sendmmsg, and any pass while a socket's
// reader is collecting its batch joins that batch, which the reader sends
// when it is done (a write from a connection's own goroutine then shares
// the reader's system call). It reports false, having written nothing,
// when they are better written one by one: no batched I/O, a single
// datagram with no batch to join, no room, or a closing endpoint.
func (e *endpoint) writeOut(out *outbox, ap netip.AddrPort) bool {
	n := 0
	for _, d := range out.d {
		n += d.copies
	}
	tag := peerTag(ap)
	s := e.socks[tag%uint64(len(e.socks))]
	for _, t := range e.socks {
		cur := t.cur.Load()
		if cur == tag {
			s = t
			break
		}
		if cur != 0 && s.cur.Load() == 0 {
			s = t
		}
	}
	if s.bio == nil || e.closing.Load() || (n == 1 && s.cur.Load() == 0) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 1 && !s.collecting {
		return false
	}
	if s.bio.room() < n {
		return false
	}
	// Every datagram goes to ap and is no larger than the MTU (a write
	// slot), and there is room for all: if the first is taken, so are
	// the rest.
	for i, d := range out.d {
		for range d.copies {
			if !s.bio.add(*d.b, ap) && i == 0 {
				return false
			}
			e.n.out(len(*d.b))
		}
	}
	if !s.collecting {
		s.bio.flush(&s.mu)
	}
	return true
}
