package raknet

import (
	"net/netip"
	"time"
)

// Query datagrams begin with these two bytes (the GameSpy4 magic). As the
// first byte of a RakNet datagram 0xFE sets the valid bit and both the ACK
// and the NACK bit, and a datagram with both is neither data, ACK nor
// NACK: every decoder refuses it (wire.DatagramHeader.Decode,
// wire.Ack.Decode; TestQueryMagicIsNoRakNet), so handing these to
// ListenConfig.Query takes nothing from RakNet.
const queryMagic0, queryMagic1 = 0xfe, 0xfd

// maxKeptOut bounds the reply buffer a reader keeps between
// datagrams once a query reply has grown it.
const maxKeptOut = 64 << 10

// isQuery reports whether b begins with the query magic.
func isQuery(b []byte) bool {
	return len(b) >= 2 && b[0] == queryMagic0 && b[1] == queryMagic1
}

// handleQuery hands a query datagram from a peer, whose datagrams come
// from via, to ListenConfig.Query after the same per-prefix rate limit as
// a ping, and sends its reply within the offline reply bytes. It runs on
// the socket's reader and allocates nothing on its own.
func (r *reader) handleQuery(b []byte, from, via, k netip.AddrPort, now time.Time) {
	l := r.l
	if l.prefixes != nil && !l.prefixes.Allow(k.Addr(), now, 1) {
		l.n.rateLimited.Add(1)
	} else {
		out, err := l.cfg.Query(r.out[:0], b, from, now)
		switch {
		case err != nil:
			l.n.dropped.Add(1)
		case len(out) == 0:
		case l.replyBytes != nil && !l.replyBytes.Allow(now, len(out)):
			l.n.rateLimited.Add(1)
		default:
			// Counted first, so a peer that has the reply sees it counted.
			l.n.queryAnswered.Add(1)
			_ = l.ep.write(out, via)
		}
		if cap(out) <= maxKeptOut {
			r.out = out[:0]
		}
	}
	r.maybeLogRefusals(now)
}
