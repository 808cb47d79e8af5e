package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// transportMetrics describes the per-transport and NetherNet metrics.
type transportMetrics struct {
	sessions, players                  *prometheus.Desc
	offers, answered, accepted, failed *prometheus.Desc
	refused, negotiating, open         *prometheus.Desc
	unproven, conns                    *prometheus.Desc
}

func newTransportMetrics() transportMetrics {
	return transportMetrics{
		sessions:    metricDesc("transport_sessions", "Sessions running, by the transport that carries them.", "transport"),
		players:     metricDesc("transport_players", "Players online, by the transport that carries them.", "transport"),
		offers:      metricDesc("nethernet_offers_total", "NetherNet offers received by the signalling endpoint."),
		answered:    metricDesc("nethernet_answered_total", "NetherNet offers answered."),
		accepted:    metricDesc("nethernet_connections_accepted_total", "NetherNet connections established and handed to the server."),
		failed:      metricDesc("nethernet_negotiations_failed_total", "Answered NetherNet peers whose connection did not complete in time."),
		refused:     metricDesc("nethernet_refused_total", "NetherNet offers refused, by reason.", "reason"),
		negotiating: metricDesc("nethernet_negotiating", "NetherNet negotiations in progress: offers being answered and peers still connecting."),
		open:        metricDesc("nethernet_connections", "NetherNet connections open."),
		unproven:    metricDesc("nethernet_unproven_total", "Answered NetherNet negotiations torn down because the client sent no valid ICE check in time."),
		conns:       metricDesc("nethernet_signalling_connections_closed_total", "Signalling TCP connections closed by the server before their request: refused at once, or evicted for a new one while still sending.", "why"),
	}
}

func (m transportMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.sessions, m.players, m.offers, m.answered, m.accepted,
		m.failed, m.refused, m.negotiating, m.open, m.unproven, m.conns} {
		ch <- d
	}
}

// collect sends the sessions and players per transport and the NetherNet
// listener's counters.
func (m transportMetrics) collect(ch chan<- prometheus.Metric, srv *Server) {
	sessions := map[string]int{"raknet": 0, "nethernet": 0}
	players := map[string]int{"raknet": 0, "nethernet": 0}
	srv.mu.Lock()
	for s, e := range srv.sessions {
		name := s.Transport().Name
		sessions[name]++
		if e.player {
			players[name]++
		}
	}
	nn := srv.ls.nn
	srv.mu.Unlock()
	for name, n := range sessions {
		ch <- prometheus.MustNewConstMetric(m.sessions, prometheus.GaugeValue, float64(n), name)
		ch <- prometheus.MustNewConstMetric(m.players, prometheus.GaugeValue, float64(players[name]), name)
	}
	if nn == nil {
		return
	}
	st := nn.Stats()
	count := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	count(m.offers, st.Offers)
	count(m.answered, st.Answered)
	count(m.accepted, st.Accepted)
	count(m.failed, st.Failed)
	count(m.refused, st.TooLarge, "too_large")
	count(m.refused, st.Busy, "busy")
	count(m.refused, st.RateLimited, "rate_limited")
	count(m.refused, st.Malformed, "malformed")
	count(m.refused, st.SourceBusy, "source_busy")
	count(m.refused, st.Unauthenticated, "unauthenticated")
	count(m.refused, st.NotLAN, "not_lan")
	count(m.refused, st.ICEQueueFull, "ice_queue_full")
	count(m.unproven, st.Unproven)
	count(m.conns, st.ConnsRefused, "refused")
	count(m.conns, st.ConnsEvicted, "evicted")
	ch <- prometheus.MustNewConstMetric(m.negotiating, prometheus.GaugeValue, float64(st.Negotiating))
	ch <- prometheus.MustNewConstMetric(m.open, prometheus.GaugeValue, float64(st.Open))
}

// metricDesc builds the description of a metric named basalt_<name>.
func metricDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("basalt_"+name, help, labels, nil)
}
