package raknet

import (
	"net/netip"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// reader is the scratch state of one socket's reader: the read loop makes
// one per socket (Listener.newReader), and only that socket's reader uses
// it, so none of it needs a lock however many sockets the listener reads.
// What the readers share lives in the Listener and is safe for concurrent
// use: its connection table under its lock, its counters and limiters
// atomic.
type reader struct {
	l *Listener
	// out is the buffer replies are built in.
	out []byte
	// proxy is this reader's PROXY gate: the listener's trusted proxies,
	// and the flows of those whose datagrams arrive on this reader's
	// socket (the kernel hands each flow, a source address and port, to
	// one socket). Nil without ProxyProtocol.
	proxy *proxyGate
	// logAt is when this reader last checked whether the refusals are
	// due a summary (see Listener.logRefusals).
	logAt time.Time
}

// newReader returns the handler of one socket's reader, with scratch state
// of its own.
func (l *Listener) newReader() handler {
	r := &reader{l: l, out: make([]byte, 0, 1500)}
	if l.proxy != nil {
		// The readers share the flow bound: each socket sees the flows
		// the kernel hands it.
		n := len(l.ep.socks)
		r.proxy = l.proxy.withFlows((maxProxyFlows + n - 1) / n)
	}
	return r.handle
}

// handle takes one datagram from the socket's reader.
func (r *reader) handle(b []byte, from netip.AddrPort, now time.Time) {
	l := r.l
	if l.cfg.Foreign != nil && IsForeign(b) {
		l.cfg.Foreign(b, from)
		return
	}
	// Replies go to via, where the datagram came from; behind a proxy,
	// from becomes the client it speaks for (ListenConfig.ProxyProtocol).
	via := from
	if r.proxy != nil {
		if b, from = r.unproxy(b, via, now); b == nil {
			return
		}
	}
	k := key(from)
	if l.cfg.Query != nil && isQuery(b) {
		r.handleQuery(b, from, via, k, now)
		return
	}
	if b[0]&wire.FlagValid != 0 {
		l.mu.RLock()
		p := l.conns[k]
		l.mu.RUnlock()
		if p != nil && (r.proxy == nil || p.c.wap == via) {
			p.c.handle(b, now)
			return
		}
		// A proxied peer's stale data is not acknowledged: the ACK would
		// go to the client's address, not the proxy's.
		if via != from || !l.ep.ackStale(b, from, now) {
			l.n.dropped.Add(1)
		}
		return
	}
	switch b[0] {
	case wire.IDUnconnectedPing, wire.IDUnconnectedPingOpenConnections, wire.IDOpenConnectionRequest1, wire.IDOpenConnectionRequest2:
	default:
		l.n.dropped.Add(1)
		return
	}
	// Every offline request costs its source prefix a token before it is
	// even decoded: a flood from one network is cut off cheaply.
	if l.prefixes != nil && !l.trusted.contains(k.Addr()) && !l.prefixes.Allow(k.Addr(), now, 1) {
		l.n.rateLimited.Add(1)
		return
	}
	var err error
	switch b[0] {
	case wire.IDOpenConnectionRequest1:
		r.out, err = l.resp.reply1(r.out[:0], b, from, now)
	case wire.IDOpenConnectionRequest2:
		r.out = r.out[:0]
		err = r.handleRequest2(b, from, via, k, now)
	default:
		r.out, err = l.resp.pong(r.out[:0], b, *l.pong.Load(), !l.full())
		if err == nil && len(r.out) > 0 {
			l.n.pings.Add(1)
		}
	}
	if err != nil {
		l.n.dropped.Add(1)
	} else if len(r.out) > 0 {
		if l.replyBytes == nil || l.replyBytes.Allow(now, len(r.out)) {
			_ = l.ep.write(r.out, via)
		} else {
			l.n.rateLimited.Add(1)
		}
	}
	r.maybeLogRefusals(now)
}

// maybeLogRefusals summarises the refusals in the log if this reader has
// not looked for refusalLogInterval.
func (r *reader) maybeLogRefusals(now time.Time) {
	if now.Sub(r.logAt) >= refusalLogInterval {
		r.logAt = now
		r.l.logRefusals(now)
	}
}

// logRefusals writes one line with the refusals since the last one, if
// there were any and the last was refusalLogInterval ago: the listener's
// only log of traffic from peers that have not proven their address. Of
// readers that call it at once, one claims the interval; the others write
// nothing.
func (l *Listener) logRefusals(now time.Time) {
	at := l.refusalLogAt.Load()
	if now.UnixNano()-at < int64(refusalLogInterval) || !l.refusalLogAt.CompareAndSwap(at, now.UnixNano()) {
		return
	}
	total := l.n.refusals()
	logged := l.refusalsLogged.Swap(total)
	if total <= logged {
		return
	}
	n := total - logged
	if e := l.log.Info(); e.Enabled() {
		st := l.Stats()
		e.Uint64("refused", n).Uint64("dropped", st.Dropped).Uint64("cookie_failures", st.CookieFailures).
			Uint64("rate_limited", st.RateLimited).Uint64("pool_full", st.PoolFull).
			Uint64("already_connected", st.AlreadyConnected).Uint64("per_ip_limited", st.PerIPLimited).
			Uint64("oversize", st.Oversize).Msg("refused offline traffic (totals since start)")
	}
}

// orDefaultInt returns v, or def when v is 0.
func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// full reports whether established connections are at MaxConnections.
func (l *Listener) full() bool {
	return l.cfg.MaxConnections > 0 && l.nEstablished.Load() >= int64(l.cfg.MaxConnections)
}

// handleRequest2 answers an OpenConnectionRequest2 from a peer whose
// datagrams come from via: it takes a snapshot of what the listener knows
// of the peer, has the responder decide, and carries the decision out. The
// reply, if any, is left in r.out.
func (r *reader) handleRequest2(b []byte, from, via, k netip.AddrPort, now time.Time) error {
	l := r.l
	m, proven, bad, err := l.resp.check2(b, from, now)
	switch {
	case err != nil:
		return err
	case bad:
		// Forged, or older than two cookie periods: dropped unanswered and
		// counted, never logged or held against the address (its owner
		// may be the victim of whoever forged it).
		l.n.cookieFailures.Add(1)
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	old := l.conns[k]
	st := l.request2State(old, k, now)
	d := l.resp.request2(r.out[:0], &m, proven, from, st)
	r.out = d.reply
	switch d.action {
	case r2Accept:
	case r2Replace:
		if !l.replace(k, old) {
			r.out = r.out[:0]
			return nil
		}
	default:
		l.mu.Unlock()
		d.count(l.n, &st)
		return nil
	}
	// The connection exists before the reply leaves, so the client's next
	// datagram always finds it.
	l.conns[k] = l.newHandshake(&d, len(b), from, via, now)
	if proven {
		l.pending.Add(1)
	} else {
		l.unproven.Add(1)
	}
	l.mu.Unlock()
	l.n.handshakes.Add(1)
	return nil
}

// request2State returns what the listener knows when an
// OpenConnectionRequest2 arrives from k, where old is its record of the
// connection from k, if any. l.mu is held.
func (l *Listener) request2State(old *peer, k netip.AddrPort, now time.Time) r2State {
	st := r2State{
		full:         l.full(),
		pendingFull:  l.pending.Load() >= int64(l.cfg.MaxHandshakes),
		unprovenFull: l.unproven.Load() >= maxUnproven,
	}
	if old != nil {
		select {
		case <-old.c.closed:
		default:
			st.live = &peerView{guid: old.c.guid, reply2: old.reply2, established: old.c.isEstablished()}
		}
	}
	if l.trusted.contains(k.Addr()) {
		return st // a trusted proxy's own address: no per-IP limit
	}
	if st.live == nil {
		st.ipFull = l.ipFull(k.Addr())
	}
	if l.ipRate != nil {
		st.ipRate = func() bool { return l.ipRate.Allow(k.Addr(), now, 1) }
	}
	return st
}

// replace closes old, a connection in its handshake from k that another
// client process on the same address replaces (a client restarted at
// once), and makes room for the new one. old is not told, since whoever
// listens there now is the new client. replace is called with l.mu held,
// releases it while old closes, and reports with l.mu held again whether
// the new connection may go in; if not, l.mu is released.
func (l *Listener) replace(k netip.AddrPort, old *peer) bool {
	l.mu.Unlock()
	old.c.closeNow(closedBy(ErrPeerClosed), false)
	l.mu.Lock()
	// A connection closed just now may not have removed itself yet;
	// another reader may have let a new one in (two proxies naming one
	// client), and it stays.
	switch cur := l.conns[k]; {
	case l.closed || (cur != nil && cur != old):
		l.mu.Unlock()
		return false
	case cur == old:
		delete(l.conns, k)
	}
	return true
}

// newHandshake starts the connection an accepted OpenConnectionRequest2 of
// n bytes creates, whose Reply2 is d.reply, and returns the listener's
// record of it.
func (l *Listener) newHandshake(d *r2Decision, n int, from, via netip.AddrPort, now time.Time) *peer {
	l.ep.forget(key(from))
	cfg := l.connCfg
	if !d.proven {
		cfg.handshakeTimeout = unprovenTimeout
	}
	if l.budget != nil {
		cfg.account = &account{a: l.budget.Open(), refused: &l.n.budgetRefusals}
	}
	c := newConn(l.ep, from, d.mtu, cfg, false, now)
	p := &peer{l: l, c: c, reply2: slices.Clone(d.reply), unproven: !d.proven}
	c.wap = via
	c.guid = d.guid
	c.owner = p
	// Until it is established the connection sends at most ampFactor
	// times what it received: the request, and for a proven one the probe
	// its cookie answered.
	p.amp = ampBudget{in: n, out: len(d.reply)}
	if d.proven {
		p.amp.in += probeCredit
	} else {
		// RakNet's own ten system addresses keep the answer to an
		// unproven client's ConnectionRequest within the 3× rule.
		c.ctl.systemAddrs = 10
	}
	c.amp = &p.amp
	c.start(now)
	return p
}

// establishedClass is the budget class a connection takes once
// established.
func (l *Listener) establishedClass() guard.Class {
	if l.cfg.PreLoginShare {
		return guard.ClassPreLogin
	}
	return guard.ClassLoggedIn
}

// ipFull reports whether ip has as many established connections as it
// may. l.mu is held.
func (l *Listener) ipFull(ip netip.Addr) bool {
	return l.cfg.MaxConnectionsPerIP >= 0 && l.perIP[ip] >= l.cfg.MaxConnectionsPerIP
}
