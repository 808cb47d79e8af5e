package raknet

import (
	"net/netip"
	"sync/atomic"
	"time"
)

// proxyLimitLog explains per-IP refusals of a balancer's own address. A
// balancer that sends no PROXY header (or one whose headers are not
// taken) hides its players behind its address, so the per-IP limits
// refuse the players after the first few with nothing else saying why.
// When the address refused is one of ListenConfig.TrustedProxies (kept
// for this even without ProxyProtocol), the listener says so, at most
// once per refusalLogInterval, with the count since start.
type proxyLimitLog struct {
	trusted []netip.Prefix
	refused atomic.Uint64
	at      atomic.Int64 // when last logged, Unix nanoseconds
}

// newProxyLimitLog returns the log for the given trusted proxies, nil if
// there are none; prefixes that are not valid are left out.
func newProxyLimitLog(trusted []netip.Prefix) *proxyLimitLog {
	var ps []netip.Prefix
	for _, p := range trusted {
		if !p.IsValid() {
			continue
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		ps = append(ps, p.Masked())
	}
	if len(ps) == 0 {
		return nil
	}
	return &proxyLimitLog{trusted: ps}
}

// perIPRefused is called when a per-IP limit (established connections or
// handshake rate) refused a connection from a; it logs the summary line
// if a is a trusted proxy's and none was written in the last
// refusalLogInterval.
func (l *Listener) perIPRefused(a netip.Addr, now time.Time) {
	p := l.proxyLimits
	if p == nil || !p.isTrusted(a) {
		return
	}
	n := p.refused.Add(1)
	at := p.at.Load()
	if at != 0 && now.UnixNano()-at < int64(refusalLogInterval) || !p.at.CompareAndSwap(at, now.UnixNano()) {
		return
	}
	l.log.Warn().Str("proxy", a.Unmap().String()).Uint64("refused", n).Bool("proxy_protocol", l.proxy != nil).
		Int("max_connections_per_ip", l.cfg.MaxConnectionsPerIP).
		Msg("the per-IP limit refused connections from a trusted proxy's own address (totals since start): " +
			"players behind a balancer that sends no PROXY header share its address; have it send headers " +
			"and turn on network.proxy_protocol, or raise raknet.max_connections_per_ip (0: no limit)")
}

// isTrusted reports whether a is a trusted proxy's.
func (p *proxyLimitLog) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, t := range p.trusted {
		if t.Contains(a) {
			return true
		}
	}
	return false
}
