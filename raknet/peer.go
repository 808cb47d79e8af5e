package raknet

import (
	"net"
	"time"
)

// peer is the listener's record of one of its connections, owned by its
// connection table: what the listener keeps about a connection, apart
// from the connection itself, and the connection's owner.
type peer struct {
	l *Listener
	c *Conn
	// reply2 is the OpenConnectionReply2 sent for the connection, sent
	// again as it is when a retried request arrives; unproven is set for
	// a connection admitted without a cookie. Both are set before the
	// record is shared.
	reply2   []byte
	unproven bool
	// counted is set once the connection counts as established, gone
	// once it counts nowhere; both guarded by l.mu.
	counted, gone bool
	// amp is the connection's anti-amplification budget while in its
	// handshake; the connection uses it under its own lock.
	amp ampBudget
}

// established moves a connection out of its handshake pool and queues it
// for Accept, or refuses it when established connections (in all, or of
// its IP) are at their cap or the accept queue is full. It runs without
// c.mu, once the pass that completed the handshake released it.
func (p *peer) established(c *Conn) {
	l := p.l
	select {
	case <-l.done:
		c.closeNow(net.ErrClosed, true)
		return
	default:
	}
	l.mu.Lock()
	if p.gone {
		// Closed since, by another goroutine: it counts nowhere now.
		l.mu.Unlock()
		return
	}
	l.leavePool(p)
	p.counted = true
	n := l.nEstablished.Add(1)
	ip := c.raddr.Addr()
	l.perIP[ip]++
	refuse := true
	switch {
	case c.cfg.account != nil && !c.cfg.account.a.SetClass(l.establishedClass()):
		// No room for the share an established connection needs.
		l.n.refused.Add(1)
		l.n.budgetRefusals.Add(1)
	case l.cfg.MaxConnections > 0 && n > int64(l.cfg.MaxConnections):
		// Handshakes that completed together overshot the cap.
		l.n.refused.Add(1)
	case l.cfg.MaxConnectionsPerIP >= 0 && l.perIP[ip] > l.cfg.MaxConnectionsPerIP && !l.trusted.contains(ip):
		l.n.refused.Add(1)
		l.n.perIPLimited.Add(1)
	default:
		select {
		case l.accept <- c:
			l.n.accepted.Add(1)
			refuse = false
		default:
			l.n.refused.Add(1)
			c.cfg.log.Debug().Str("raddr", c.raddr.String()).Msg("accept queue full: refusing connection")
		}
	}
	l.mu.Unlock()
	if refuse {
		c.closeNow(net.ErrClosed, true)
		return
	}
	if e := l.log.Debug(); e.Enabled() {
		e.Str("raddr", c.raddr.String()).Int("mtu", c.mtu).Msg("connection established")
	}
}

// leavePool takes a connection out of the count of its handshake pool.
// l.mu is held.
func (l *Listener) leavePool(p *peer) {
	if p.unproven {
		l.unproven.Add(-1)
	} else {
		l.pending.Add(-1)
	}
}

// closed forgets a closed connection. It runs without c.mu, by the
// goroutine that closed c.
func (p *peer) closed(c *Conn) {
	l := p.l
	final := c.Stats()
	l.mu.Lock()
	if l.conns[c.raddr] == p {
		delete(l.conns, c.raddr)
	}
	l.retired.add(&final)
	p.gone = true
	if p.counted {
		l.nEstablished.Add(-1)
		if n := l.perIP[c.raddr.Addr()] - 1; n > 0 {
			l.perIP[c.raddr.Addr()] = n
		} else {
			delete(l.perIP, c.raddr.Addr())
		}
	} else {
		l.leavePool(p)
	}
	closed := l.closed
	l.mu.Unlock()
	if c.lingering && !closed {
		l.ep.linger(c.raddr, time.Now())
	}
}
