package raknet

import (
	"net/netip"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// handle takes one datagram from the socket's reader.
func (l *Listener) handle(b []byte, from netip.AddrPort, now time.Time) {
	// Replies go to via, where the datagram came from; behind a proxy,
	// from becomes the client it speaks for (ListenConfig.ProxyProtocol).
	via := from
	if l.proxy != nil {
		if b, from = l.unproxy(b, via, now); b == nil {
			return
		}
	}
	k := key(from)
	if l.cfg.Query != nil && isQuery(b) {
		l.handleQuery(b, from, via, k, now)
		return
	}
	if b[0]&wire.FlagValid != 0 {
		l.mu.RLock()
		c := l.conns[k]
		l.mu.RUnlock()
		if c != nil && (l.proxy == nil || c.wap == via) {
			c.handle(b, now)
			return
		}
		// A proxied peer's stale data is not acknowledged: the ACK would
		// go to the client's address, not the proxy's.
		if via != from || !l.ep.ackStale(b, from, now) {
			l.dropped.Add(1)
		}
		return
	}
	switch b[0] {
	case wire.IDUnconnectedPing, wire.IDUnconnectedPingOpenConnections, wire.IDOpenConnectionRequest1, wire.IDOpenConnectionRequest2:
	default:
		l.dropped.Add(1)
		return
	}
	// Every offline request costs its source prefix a token before it is
	// even decoded: a flood from one network is cut off cheaply.
	if l.prefixes != nil && !l.prefixes.Allow(k.Addr(), now, 1) {
		l.rateLimited.Add(1)
		return
	}
	var err error
	switch b[0] {
	case wire.IDOpenConnectionRequest1:
		l.out, err = l.resp.reply1(l.out[:0], b, from, now)
	case wire.IDOpenConnectionRequest2:
		l.out = l.out[:0]
		err = l.handleRequest2(b, from, via, k, now)
	default:
		l.out, err = l.resp.pong(l.out[:0], b, *l.pong.Load(), !l.full())
		if err == nil && len(l.out) > 0 {
			l.pings.Add(1)
		}
	}
	if err != nil {
		l.dropped.Add(1)
	} else if len(l.out) > 0 {
		if l.replyBytes == nil || l.replyBytes.Allow(now, len(l.out)) {
			_ = l.ep.write(l.out, via)
		} else {
			l.rateLimited.Add(1)
		}
	}
	if now.Sub(l.refusalLogAt) >= refusalLogInterval {
		l.logRefusals(now)
	}
}

// refusals returns the total of the refusal counters.
func (l *Listener) refusals() uint64 {
	return l.dropped.Load() + l.cookieFailures.Load() + l.rateLimited.Load() + l.poolFull.Load() +
		l.alreadyConnected.Load() + l.perIPLimited.Load() + l.ep.oversize.Load() + l.proxy.refusals()
}

// logRefusals writes one line with the refusals since the last one, if
// there were any: the listener's only log of traffic from peers that have
// not proven their address.
func (l *Listener) logRefusals(now time.Time) {
	l.refusalLogAt = now
	total := l.refusals()
	if total == l.refusalsLogged {
		return
	}
	n := total - l.refusalsLogged
	l.refusalsLogged = total
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

// handleRequest2 carries out the responder's decision on an
// OpenConnectionRequest2 from a peer whose datagrams come from via; the
// reply, if any, is left in l.out.
func (l *Listener) handleRequest2(b []byte, from, via, k netip.AddrPort, now time.Time) error {
	m, proven, bad, err := l.resp.check2(b, from, now)
	switch {
	case err != nil:
		return err
	case bad:
		// Forged, or older than two cookie periods: dropped unanswered and
		// counted, never logged or held against the address (its owner
		// may be the victim of whoever forged it).
		l.cookieFailures.Add(1)
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	var st r2State
	old := l.conns[k]
	if old != nil {
		select {
		case <-old.closed:
		default:
			st.live = &peerView{guid: old.guid, reply2: old.reply2, established: old.isEstablished()}
		}
	}
	st.full = l.full()
	st.pendingFull = l.pending.Load() >= int64(l.cfg.MaxHandshakes)
	st.unprovenFull = l.unproven.Load() >= maxUnproven
	if proven && st.live == nil && l.ipFull(k.Addr()) {
		l.mu.Unlock()
		l.perIPLimited.Add(1)
		reply := wire.Notice{ID: wire.IDNoFreeIncomingConnections, ServerGUID: l.cfg.GUID}
		l.out = reply.Append(l.out[:0])
		return nil
	}
	d := l.resp.request2(l.out[:0], &m, proven, from, st)
	if proven && (d.action == r2Accept || d.action == r2Replace) && l.ipRate != nil && !l.ipRate.Allow(k.Addr(), now, 1) {
		l.mu.Unlock()
		l.perIPLimited.Add(1)
		return nil
	}
	switch d.action {
	case r2Resend:
		// A retried request: answer it the same way.
		l.mu.Unlock()
		l.out = append(l.out[:0], d.reply...)
		return nil
	case r2Full:
		l.mu.Unlock()
		l.refused.Add(1)
		if !st.full {
			l.poolFull.Add(1)
		}
		l.out = d.reply
		return nil
	case r2AlreadyConnected:
		l.mu.Unlock()
		l.alreadyConnected.Add(1)
		l.out = d.reply
		return nil
	case r2Drop:
		l.mu.Unlock()
		l.poolFull.Add(1)
		return nil
	case r2Replace:
		// Another client process on the same address: the old one is
		// gone. It is not told, since whoever listens there now is the new
		// client.
		l.mu.Unlock()
		old.closeNow(closedBy(ErrPeerClosed), false)
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil
		}
		// A connection closed just now may not have removed itself yet.
		if l.conns[k] == old {
			delete(l.conns, k)
		}
	}
	l.ep.forget(k)
	cfg := l.connCfg
	if !proven {
		cfg.handshakeTimeout = unprovenTimeout
	}
	if l.budget != nil {
		cfg.account = &account{a: l.budget.Open(), refused: &l.budgetRefusals}
	}
	c := newConn(l.ep, from, d.mtu, cfg, false, now)
	c.wap = via
	c.guid = d.guid
	c.onEstablished = l.established
	c.onClose = l.removeConn
	c.reply2 = slices.Clone(d.reply)
	// Until it is established the connection sends at most ampFactor
	// times what it received: the request, and for a proven one the probe
	// its cookie answered.
	c.amp, c.ampIn, c.ampOut = true, len(b), len(d.reply)
	if proven {
		c.ampIn += probeCredit
	} else {
		// RakNet's own ten system addresses keep the answer to an
		// unproven client's ConnectionRequest within the 3× rule.
		c.unproven, c.ctl.systemAddrs = true, 10
	}
	c.start(now)
	// The connection exists before the reply leaves, so the client's next
	// datagram always finds it.
	l.conns[k] = c
	if proven {
		l.pending.Add(1)
	} else {
		l.unproven.Add(1)
	}
	l.mu.Unlock()
	l.handshakes.Add(1)
	l.out = d.reply
	return nil
}

// establishedClass is the budget class a connection takes once
// established.
func (l *Listener) establishedClass() guard.Class {
	if l.cfg.PreLoginShare {
		return guard.ClassPreLogin
	}
	return guard.ClassLoggedIn
}

// ipFull reports whether ip has as many established connections as it may.
func (l *Listener) ipFull(ip netip.Addr) bool {
	if l.cfg.MaxConnectionsPerIP < 0 {
		return false
	}
	l.ipMu.Lock()
	defer l.ipMu.Unlock()
	return l.perIP[ip] >= l.cfg.MaxConnectionsPerIP
}
