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
package monitor
