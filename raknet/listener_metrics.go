package raknet

// add adds the counters of s to st: everything that only grows, not the
// estimates (RTT, Loss, Window, InFlight, Buffered).
func (st *Stats) add(s *Stats) {
	st.DatagramsSent += s.DatagramsSent
	st.DatagramsReceived += s.DatagramsReceived
	st.BytesSent += s.BytesSent
	st.BytesReceived += s.BytesReceived
	st.MessagesSent += s.MessagesSent
	st.MessagesReceived += s.MessagesReceived
	st.Resends += s.Resends
	st.DatagramsLost += s.DatagramsLost
	st.Dropped += s.Dropped
	st.Deferred += s.Deferred
	st.AcksSent += s.AcksSent
	st.NacksSent += s.NacksSent
	st.NacksReceived += s.NacksReceived
}

// ConnStats calls f with the Stats of each open connection, those in their
// handshake included, and returns the counters of every connection that
// has closed, summed (its estimates, RTT, Loss, Window, InFlight and
// Buffered, are zero). The listener's lock is held once, to take a
// snapshot of its connections; f runs without it, and each call to
// Conn.Stats takes only that connection's lock. It is meant for a
// metrics scrape, not for a per-datagram path, and is safe for concurrent
// use.
//
// A connection is counted by f or in the result, never both, so the
// result plus what f saw gives totals that do not go backwards from one
// call to the next (but for a connection replaced by a new one from the
// same address while it was closing, missing from both for an instant).
func (l *Listener) ConnStats(f func(Stats)) (closed Stats) {
	l.mu.RLock()
	closed = l.retired
	conns := make([]*Conn, 0, len(l.conns))
	for _, p := range l.conns {
		conns = append(conns, p.c)
	}
	l.mu.RUnlock()
	for _, c := range conns {
		f(c.Stats())
	}
	return closed
}
