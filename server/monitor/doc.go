// Package monitor is the HTTP side of a server, for an operator's tools:
// Prometheus metrics at /metrics, what the server advertises at /status,
// liveness at /healthz, readiness at /readyz (503 while draining, so a
// balancer sends new players elsewhere) and, if asked, Go's profiler at
// /debug/pprof/. The server hands it a registry and a Source to ask.
//
//	m, err := monitor.Listen(monitor.Config{Address: "127.0.0.1:9100", Registry: reg, Source: srv})
//	if err != nil {
//		return err
//	}
//	defer m.Close()
//
// # Metrics
//
// With `metrics.address` set, the server serves Prometheus metrics over HTTP at
// `/metrics` (and, with `metrics.pprof` on, Go's profiler at
// `/debug/pprof/`), and health for orchestrators: `/healthz` answers 200 while
// the process serves, `/readyz` 200 while the server listens and 503 while it
// drains or closes (see Several instances behind a load
// balancer (go doc ./server)). Nothing listens when it is empty, the default. Every figure
// is read at scrape time from counters the server keeps anyway, so serving
// metrics costs the traffic nothing. `/status` on the same address answers
// JSON: name, level, version, protocol, players, max_players, online_mode,
// online_mode_ready (the authentication service's keys fetched) and allowlist.
// Besides the Go runtime (`go_…`) and process (`process_…`) collectors, the
// server reports:
//
//	| metric | type | what it counts |
//	|---|---|---|
//	| `basalt_raknet_pings_answered_total` | counter | unconnected pings answered |
//	| `basalt_raknet_queries_answered_total` | counter | Query protocol requests answered |
//	| `basalt_raknet_handshakes_total` | counter | handshakes that created a connection |
//	| `basalt_raknet_connections_accepted_total` | counter | connections established and handed to the server |
//	| `basalt_raknet_connections_refused_total` | counter | connections refused: server full, accept queue full, an IP's or the memory budget's limit |
//	| `basalt_raknet_refused_total` | counter | traffic refused, by `reason`: `malformed`, `oversize`, `cookie`, `rate_limited`, `pool_full`, `already_connected`, `per_ip`, `amplification`, `budget`, `proxy_untrusted`, `proxy_no_flow`, `proxy_local` |
//	| `basalt_raknet_datagrams_received_total`, `basalt_raknet_datagrams_sent_total` | counter | UDP datagrams the socket read and wrote |
//	| `basalt_raknet_received_bytes_total`, `basalt_raknet_sent_bytes_total` | counter | UDP payload bytes the socket read and wrote |
//	| `basalt_raknet_connections` | gauge | connections open, handshakes included |
//	| `basalt_raknet_connections_handshaking`, `basalt_raknet_connections_established` | gauge | connections in and past their handshake |
//	| `basalt_raknet_resent_frames_total` | counter | frames sent again |
//	| `basalt_raknet_lost_datagrams_total` | counter | data datagrams NACKed or timed out |
//	| `basalt_raknet_nacks_sent_total`, `basalt_raknet_nacks_received_total` | counter | NACK datagrams sent, and received and acted on |
//	| `basalt_raknet_deferred_datagrams_total` | counter | datagrams refused unacknowledged for a full read queue or memory budget (asked for again) |
//	| `basalt_raknet_connection_dropped_total` | counter | malformed datagrams and control messages of connections |
//	| `basalt_raknet_rtt_seconds` | histogram | smoothed RTT of the connections open now |
//	| `basalt_raknet_congestion_window_bytes` | histogram | congestion window of the connections open now |
//	| `basalt_sessions` | gauge | sessions running, players or not |
//	| `basalt_players`, `basalt_players_max` | gauge | players online, and the limit |
//	| `basalt_sessions_ended_total` | counter | sessions that ended |
//	| `basalt_sessions_refused_total` | counter | sessions ended for breaking a limit, by `reason`: `pre_login_too_large`, `too_large`, `decompression_budget`, `login_timeout`, `bad_checksum` |
//	| `basalt_logins_refused_total` | counter | logins refused, by `reason`: `not_signed_in` (online mode, no proven Xbox Live identity), `auth_unavailable` (the authentication service's keys not fetched yet), `not_allowlisted`, `banned` |
//	| `basalt_session_handler_errors_total`, `basalt_session_handler_panics_total` | counter | handler errors and panics, each ending its session |
//	| `basalt_session_batches_received_total`, `basalt_session_batches_sent_total` | counter | batches sessions read (that decoded) and wrote |
//	| `basalt_session_packets_received_total`, `basalt_session_packets_sent_total` | counter | packets in those batches |
//	| `basalt_session_received_bytes_total` | counter | bytes of the batches read, decrypted and decompressed: what clients made the server handle |
//	| `basalt_session_received_wire_bytes_total` | counter | bytes of the batches read, as read |
//	| `basalt_session_sent_bytes_total` | counter | bytes of the batches written, compressed and encrypted |
//	| `basalt_session_packets_skipped_total` | counter | packets handlers skipped because they could not read them: an ID the packet library does not know, a layout it cannot decode (a newer client's, say); the player stays |
//	| `basalt_transport_sessions`, `basalt_transport_players` | gauge | sessions and players by `transport`: `raknet`, `nethernet` |
//	| `basalt_nethernet_offers_total`, `basalt_nethernet_answered_total` | counter | NetherNet offers received, and answered (with NetherNet on) |
//	| `basalt_nethernet_connections_accepted_total` | counter | NetherNet connections established |
//	| `basalt_nethernet_negotiations_failed_total` | counter | answered peers whose connection did not complete in time |
//	| `basalt_nethernet_refused_total` | counter | offers refused, by `reason`: `too_large`, `busy`, `rate_limited`, `malformed`; and STUN/DTLS datagrams dropped for a full ICE queue, `ice_queue_full` |
//	| `basalt_nethernet_negotiating`, `basalt_nethernet_connections` | gauge | negotiations in progress (offers and peers still connecting), and connections open |
//	| `basalt_build_info` | gauge | 1, with labels `version`, `revision` and `goversion`: which Basalt runs (as `basalt -version` prints it) |
//
// Every `basalt_raknet_…` metric has a `listener` label, the listener's
// address. The reliability and session counters add up the connections (or
// sessions) open now and those that closed, so they never go backwards. `server.Server.Collector`
// returns the collector for a program that registers it on a registry of
// its own.
package monitor
