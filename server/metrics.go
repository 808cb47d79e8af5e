package server

import (
	"errors"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/prometheus/client_golang/prometheus"
)

// Histogram buckets of the per-connection figures a scrape reads: RTTs
// from a LAN's fraction of a millisecond to a lost link's seconds, and
// congestion windows from two datagrams to raknet's largest (2000
// datagrams of 1400 bytes).
var (
	rttBuckets    = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	windowBuckets = prometheus.ExponentialBuckets(2048, 2, 12)
)

// countErrors wraps newHandler to count in n the errors it, and each
// handler it makes, return: each ends its session. A
// *session.DisconnectError (a kick, a full server) is deliberate and not
// counted.
// The result is safe for concurrent use if newHandler is.
func countErrors(newHandler func(*session.Session) (session.Handler, error), n *atomic.Uint64) func(*session.Session) (session.Handler, error) {
	return func(s *session.Session) (session.Handler, error) {
		h, err := newHandler(s)
		if err != nil || h == nil {
			return h, countError(err, n)
		}
		return errorCounter{h: h, n: n}, nil
	}
}

// countError counts err in n unless it is nil or a disconnect, and
// returns it.
func countError(err error, n *atomic.Uint64) error {
	if _, kick := errors.AsType[*session.DisconnectError](err); err != nil && !kick {
		n.Add(1)
	}
	return err
}

// errorCounter is a handler whose errors are counted: per packet it adds
// one call and a nil check.
type errorCounter struct {
	h session.Handler
	n *atomic.Uint64
}

var _ session.Handler = errorCounter{}

// HandlePacket calls h.HandlePacket.
func (c errorCounter) HandlePacket(s *session.Session, p session.Packet) error {
	return countError(c.h.HandlePacket(s, p), c.n)
}

// HandleClose calls h.HandleClose.
func (c errorCounter) HandleClose(s *session.Session, err error) { c.h.HandleClose(s, err) }

// collector is a prometheus.Collector of one Server's figures. Everything
// it reports is read at scrape time from counters the server, its
// listeners and their connections keep anyway: Collect takes the server's
// lock once and each listener's once, and adds nothing to the path of a
// datagram or a packet.
type collector struct {
	srv *Server

	pings, queries, handshakes, accepted, connRefused, refused *prometheus.Desc
	datagramsIn, datagramsOut, bytesIn, bytesOut               *prometheus.Desc
	conns, handshaking, established                            *prometheus.Desc
	resends, lost, nacksSent, nacksReceived, deferred, dropped *prometheus.Desc
	rtt, window                                                *prometheus.Desc

	sessions, players, maxPlayers, ended, sessionRefused *prometheus.Desc
	loginsRefused                                        *prometheus.Desc
	handlerErrors, handlerPanics                         *prometheus.Desc
	batchesIn, batchesOut, packetsIn, packetsOut         *prometheus.Desc
	sessionBytesIn, sessionBytesOut, sessionWireBytesIn  *prometheus.Desc
	packetsSkipped                                       *prometheus.Desc

	transport transportMetrics
}

// Collector returns a prometheus.Collector of the server's metrics (see
// README.md, "Metrics"), for a program that registers them on a registry
// of its own; Config.Metrics.Address serves them without one. It may be
// called at any time, and the collector is safe for concurrent use.
func (srv *Server) Collector() prometheus.Collector {
	l := "listener"
	return &collector{
		srv:         srv,
		transport:   newTransportMetrics(),
		pings:       metricDesc("raknet_pings_answered_total", "Unconnected pings answered with a pong.", l),
		queries:     metricDesc("raknet_queries_answered_total", "Query protocol (GameSpy4) requests answered.", l),
		handshakes:  metricDesc("raknet_handshakes_total", "OpenConnectionRequest2 that created a connection.", l),
		accepted:    metricDesc("raknet_connections_accepted_total", "Connections established and handed to the server.", l),
		connRefused: metricDesc("raknet_connections_refused_total", "Connections refused: server full, accept queue full, or over their IP's or the memory budget's limit.", l),
		refused: metricDesc("raknet_refused_total",
			"Datagrams and requests refused unanswered or answered with a refusal, by reason.", l, "reason"),
		datagramsIn:   metricDesc("raknet_datagrams_received_total", "UDP datagrams the listener's socket read.", l),
		datagramsOut:  metricDesc("raknet_datagrams_sent_total", "UDP datagrams the listener's socket wrote.", l),
		bytesIn:       metricDesc("raknet_received_bytes_total", "UDP payload bytes the listener's socket read.", l),
		bytesOut:      metricDesc("raknet_sent_bytes_total", "UDP payload bytes the listener's socket wrote.", l),
		conns:         metricDesc("raknet_connections", "RakNet connections open, those in their handshake included.", l),
		handshaking:   metricDesc("raknet_connections_handshaking", "RakNet connections in their handshake.", l),
		established:   metricDesc("raknet_connections_established", "RakNet connections past their handshake.", l),
		resends:       metricDesc("raknet_resent_frames_total", "Frames sent again, over every connection.", l),
		lost:          metricDesc("raknet_lost_datagrams_total", "Data datagrams NACKed or timed out, over every connection.", l),
		nacksSent:     metricDesc("raknet_nacks_sent_total", "NACK datagrams sent, over every connection.", l),
		nacksReceived: metricDesc("raknet_nacks_received_total", "NACK datagrams received and acted on, over every connection.", l),
		deferred:      metricDesc("raknet_deferred_datagrams_total", "Data datagrams refused unacknowledged for a full read queue or memory budget, to be asked for again.", l),
		dropped:       metricDesc("raknet_connection_dropped_total", "Malformed datagrams and control messages connections dropped.", l),
		rtt:           metricDesc("raknet_rtt_seconds", "Smoothed round-trip time of the connections open now with an RTT sample.", l),
		window:        metricDesc("raknet_congestion_window_bytes", "Congestion window of the connections open now with an RTT sample.", l),

		sessions:       metricDesc("sessions", "Sessions running, players or not."),
		players:        metricDesc("players", "Players online: sessions holding a player slot."),
		maxPlayers:     metricDesc("players_max", "The player limit."),
		ended:          metricDesc("sessions_ended_total", "Sessions that ended."),
		sessionRefused: metricDesc("sessions_refused_total", "Sessions ended because their client broke a limit, by reason.", "reason"),
		loginsRefused:  metricDesc("logins_refused_total", "Logins refused by online mode, the allowlist or a ban, by reason.", "reason"),
		handlerErrors:  metricDesc("session_handler_errors_total", "Errors handlers returned, each ending its session."),
		handlerPanics:  metricDesc("session_handler_panics_total", "Handler panics, each ending its session."),

		batchesIn:          metricDesc("session_batches_received_total", "Batches sessions read that decoded."),
		batchesOut:         metricDesc("session_batches_sent_total", "Batches sessions wrote."),
		packetsIn:          metricDesc("session_packets_received_total", "Packets in the batches sessions read."),
		packetsOut:         metricDesc("session_packets_sent_total", "Packets in the batches sessions wrote."),
		sessionBytesIn:     metricDesc("session_received_bytes_total", "Bytes of the batches sessions read, decrypted and decompressed."),
		sessionWireBytesIn: metricDesc("session_received_wire_bytes_total", "Bytes of the batches sessions read, as read (those that did not decode included)."),
		sessionBytesOut:    metricDesc("session_sent_bytes_total", "Bytes of the batches sessions wrote, compressed and encrypted."),
		packetsSkipped:     metricDesc("session_packets_skipped_total", "Packets handlers skipped because they could not read them (an unknown ID, a layout they cannot decode)."),
	}
}

// Describe sends the description of every metric the collector reports.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.pings, c.queries, c.handshakes, c.accepted, c.connRefused, c.refused,
		c.datagramsIn, c.datagramsOut, c.bytesIn, c.bytesOut,
		c.conns, c.handshaking, c.established,
		c.resends, c.lost, c.nacksSent, c.nacksReceived, c.deferred, c.dropped,
		c.rtt, c.window,
		c.sessions, c.players, c.maxPlayers, c.ended, c.sessionRefused, c.loginsRefused,
		c.handlerErrors, c.handlerPanics,
		c.batchesIn, c.batchesOut, c.packetsIn, c.packetsOut,
		c.sessionBytesIn, c.sessionBytesOut, c.sessionWireBytesIn, c.packetsSkipped,
	} {
		ch <- d
	}
	c.transport.describe(ch)
}

// Collect reads the figures and sends them as metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	srv := c.srv
	srv.mu.Lock()
	listeners := srv.listeners()
	sessions := slices.Collect(maps.Keys(srv.sessions))
	players, totals := srv.players, srv.stats.sessions.totals
	srv.mu.Unlock()
	for _, l := range listeners {
		c.collectListener(ch, l)
	}

	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.sessions, len(sessions))
	gauge(c.players, players)
	gauge(c.maxPlayers, srv.conf.Status.MaxPlayers)
	m := &srv.stats.sessions
	count(c.ended, m.ended.Load())
	count(c.handlerErrors, m.handlerErrors.Load())
	count(c.handlerPanics, m.handlerPanics.Load())
	st := srv.Stats()
	count(c.sessionRefused, st.PreLoginTooLarge, "pre_login_too_large")
	count(c.sessionRefused, st.TooLarge, "too_large")
	count(c.sessionRefused, st.DecompressionBudget, "decompression_budget")
	count(c.sessionRefused, st.LoginTimeouts, "login_timeout")
	count(c.sessionRefused, st.BadChecksums, "bad_checksum")
	count(c.loginsRefused, st.NotSignedIn, "not_signed_in")
	count(c.loginsRefused, st.AuthUnavailable, "auth_unavailable")
	count(c.loginsRefused, st.NotAllowlisted, "not_allowlisted")
	count(c.loginsRefused, st.Banned, "banned")

	// Each session is among the live ones or in the totals, never both.
	for _, s := range sessions {
		addSessionStats(&totals, s.Stats())
	}
	count(c.batchesIn, totals.BatchesIn)
	count(c.batchesOut, totals.BatchesOut)
	count(c.packetsIn, totals.PacketsIn)
	count(c.packetsOut, totals.PacketsOut)
	count(c.sessionBytesIn, totals.BytesIn)
	count(c.sessionWireBytesIn, totals.WireBytesIn)
	count(c.sessionBytesOut, totals.BytesOut)
	count(c.packetsSkipped, totals.PacketsSkipped)
	c.transport.collect(ch, srv)
}

// collectListener sends the metrics of one listener and its connections.
func (c *collector) collectListener(ch chan<- prometheus.Metric, l *raknet.Listener) {
	addr := l.Addr().String()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), addr)
	}
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{addr}, labels...)...)
	}
	st := l.Stats()
	count(c.pings, st.Pings)
	count(c.queries, st.QueryAnswered)
	count(c.handshakes, st.Handshakes)
	count(c.accepted, st.Accepted)
	count(c.connRefused, st.Refused)
	for _, r := range []struct {
		reason string
		n      uint64
	}{
		{"malformed", st.Dropped - st.Oversize},
		{"oversize", st.Oversize},
		{"cookie", st.CookieFailures},
		{"rate_limited", st.RateLimited},
		{"pool_full", st.PoolFull},
		{"already_connected", st.AlreadyConnected},
		{"per_ip", st.PerIPLimited},
		{"amplification", st.Amplification},
		{"budget", st.BudgetRefusals},
		{"proxy_untrusted", st.ProxyUntrusted},
		{"proxy_no_flow", st.ProxyNoFlow},
		{"proxy_local", st.ProxyLocal},
	} {
		count(c.refused, r.n, r.reason)
	}
	count(c.datagramsIn, st.DatagramsIn)
	count(c.datagramsOut, st.DatagramsOut)
	count(c.bytesIn, st.BytesIn)
	count(c.bytesOut, st.BytesOut)
	gauge(c.conns, st.Connections)
	gauge(c.handshaking, st.Handshaking)
	gauge(c.established, st.Established)

	rtt, window := newHistogram(rttBuckets), newHistogram(windowBuckets)
	var live raknet.Stats
	closed := l.ConnStats(func(s raknet.Stats) {
		live.Resends += s.Resends
		live.DatagramsLost += s.DatagramsLost
		live.NacksSent += s.NacksSent
		live.NacksReceived += s.NacksReceived
		live.Deferred += s.Deferred
		live.Dropped += s.Dropped
		if s.RTT > 0 {
			rtt.observe(s.RTT.Seconds())
			window.observe(float64(s.Window))
		}
	})
	count(c.resends, closed.Resends+live.Resends)
	count(c.lost, closed.DatagramsLost+live.DatagramsLost)
	count(c.nacksSent, closed.NacksSent+live.NacksSent)
	count(c.nacksReceived, closed.NacksReceived+live.NacksReceived)
	count(c.deferred, closed.Deferred+live.Deferred)
	count(c.dropped, closed.Dropped+live.Dropped)
	ch <- rtt.metric(c.rtt, addr)
	ch <- window.metric(c.window, addr)
}

// histogram gathers observations for a constant histogram built at scrape
// time.
type histogram struct {
	bounds []float64
	counts []uint64 // counts[i] observations ≤ bounds[i] and > bounds[i-1]
	n      uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

// observe adds v.
func (h *histogram) observe(v float64) {
	h.n++
	h.sum += v
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
}

// metric returns the histogram, with cumulative bucket counts, as
// Prometheus wants them.
func (h *histogram) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.n, h.sum, buckets, labels...)
}

// Stats returns the server's counters. It is safe to call at any time; each
// counter is read on its own, so they are not one snapshot.
func (srv *Server) Stats() Stats {
	c := &srv.stats
	return Stats{
		PreLoginTooLarge:    c.preLoginTooLarge.Load(),
		TooLarge:            c.tooLarge.Load(),
		DecompressionBudget: c.budget.Load(),
		LoginTimeouts:       c.loginTimeouts.Load(),
		BadChecksums:        c.badChecksums.Load(),
		NotSignedIn:         c.notSignedIn.Load(),
		AuthUnavailable:     c.authUnavailable.Load(),
		NotAllowlisted:      c.notAllowlisted.Load(),
		Banned:              c.banned.Load(),
	}
}
