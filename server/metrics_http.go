package server

import (
	"net"

	"github.com/basaltmc/basalt/server/monitor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// listenMetrics starts the metrics HTTP server (package monitor) on
// Config.Metrics.Address, if one is set. It runs with srv.mu held, from
// Listen.
func (srv *Server) listenMetrics() error {
	addr := srv.conf.Metrics.Address
	if addr == "" {
		return nil
	}
	m, err := monitor.Listen(monitor.Config{
		Address:  addr,
		Pprof:    srv.conf.Metrics.Pprof,
		Registry: srv.registry(),
		Source:   srv,
		Log:      srv.log.With().Str("src", "metrics").Logger(),
	})
	if err != nil {
		return srv.conf.locate(&listenError{key: "metrics.address", addr: addr, err: err})
	}
	srv.metrics = m
	return nil
}

// registry returns a registry of the server's metrics and the Go and
// process collectors.
func (srv *Server) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		srv.Collector(),
		buildInfoCollector(ReadBuildInfo()),
	)
	return reg
}

// stopMetrics stops the metrics HTTP server, if it runs, and waits for it.
func (srv *Server) stopMetrics() {
	srv.mu.Lock()
	m := srv.metrics
	srv.mu.Unlock()
	m.Close()
}

// MetricsAddr returns the address the metrics HTTP server listens on, nil
// if it does not (Config.Metrics.Address empty, or before Listen).
func (srv *Server) MetricsAddr() net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.metrics == nil {
		return nil
	}
	return srv.metrics.Addr()
}
