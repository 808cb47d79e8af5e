package raknet

import "sync/atomic"

// counters are everything a Listener counts: its own refusals and
// answers, what its endpoint's sockets carried and dropped, and what its
// PROXY gates refused. Each count is one atomic add on the path it
// measures, taking no lock, so the readers of every socket and every
// connection count into one set. A dialer's endpoint has a set of its own
// that nobody reads. With several sockets their readers share the set's
// cache lines; BenchmarkCountersPong isolates that cost and
// BenchmarkListenerPongsSockets shows it against a pong's, which is why
// the set is not split per reader.
type counters struct {
	// The listener's answers and refusals (see ListenerStats).
	pings, handshakes, accepted, refused, dropped, queryAnswered atomic.Uint64
	cookieFailures, rateLimited, poolFull, alreadyConnected      atomic.Uint64
	perIPLimited, amplification, budgetRefusals                  atomic.Uint64
	// The endpoint's: datagrams dropped for their size, and what the
	// sockets carried (UDP payload bytes).
	oversize                                     atomic.Uint64
	datagramsIn, bytesIn, datagramsOut, bytesOut atomic.Uint64
	// The PROXY gates': headers from untrusted sources, header-less
	// datagrams from a trusted proxy with no flow, LOCAL headers.
	proxyUntrusted, proxyNoFlow, proxyLocal atomic.Uint64
}

// in counts a datagram of n bytes read.
func (n *counters) in(size int) {
	n.datagramsIn.Add(1)
	n.bytesIn.Add(uint64(size))
}

// out counts a datagram of n bytes written.
func (n *counters) out(size int) {
	n.datagramsOut.Add(1)
	n.bytesOut.Add(uint64(size))
}

// snapshot returns the counters as ListenerStats, whose gauges
// (Connections, Handshaking, Established) it leaves zero. Each counter is
// read atomically, not all of them at one instant.
func (n *counters) snapshot() ListenerStats {
	return ListenerStats{
		Pings: n.pings.Load(), Handshakes: n.handshakes.Load(), Accepted: n.accepted.Load(),
		Refused: n.refused.Load(), Dropped: n.dropped.Load() + n.oversize.Load(),
		CookieFailures: n.cookieFailures.Load(), RateLimited: n.rateLimited.Load(), PoolFull: n.poolFull.Load(),
		AlreadyConnected: n.alreadyConnected.Load(), PerIPLimited: n.perIPLimited.Load(),
		Amplification: n.amplification.Load(), BudgetRefusals: n.budgetRefusals.Load(),
		Oversize: n.oversize.Load(), QueryAnswered: n.queryAnswered.Load(),
		DatagramsIn: n.datagramsIn.Load(), DatagramsOut: n.datagramsOut.Load(),
		BytesIn: n.bytesIn.Load(), BytesOut: n.bytesOut.Load(),
		ProxyUntrusted: n.proxyUntrusted.Load(), ProxyNoFlow: n.proxyNoFlow.Load(), ProxyLocal: n.proxyLocal.Load(),
	}
}

// refusals returns the total of the refusal counters: what the refusal
// summary in the log reports.
func (n *counters) refusals() uint64 {
	return n.dropped.Load() + n.cookieFailures.Load() + n.rateLimited.Load() + n.poolFull.Load() +
		n.alreadyConnected.Load() + n.perIPLimited.Load() + n.oversize.Load() +
		n.proxyUntrusted.Load() + n.proxyNoFlow.Load()
}
