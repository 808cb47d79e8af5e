package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Bounds of the metrics HTTP server: a scrape is one small request, and
// an operator's endpoint owes a slow or idle client little.
const (
	metricsReadTimeout = 10 * time.Second
	metricsIdleTimeout = time.Minute
	// metricsShutdownTimeout bounds how long Close waits for scrapes in
	// progress (a CPU profile may take 30 s; it is cut short).
	metricsShutdownTimeout = 2 * time.Second
	metricsMaxHeaderBytes  = 8 << 10
)

// metricsServer serves /metrics, and /debug/pprof/ if asked, over HTTP.
type metricsServer struct {
	ln   net.Listener
	http *http.Server
	done chan struct{} // closed when Serve has returned
}

// listenMetrics starts the metrics HTTP server on Config.MetricsAddress,
// if one is set. It runs with srv.mu held, from Listen.
func (srv *Server) listenMetrics() error {
	addr := srv.conf.MetricsAddress
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return srv.conf.locate(&listenError{key: "metrics.address", addr: addr, err: err})
	}
	reg := srv.registry()
	log := srv.log.With().Str("src", "metrics").Logger()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: promLogger{log}, Registry: reg,
	}))
	srv.healthRoutes(mux)
	srv.statusRoutes(mux)
	if srv.conf.MetricsPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	m := &metricsServer{
		ln: ln,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: metricsReadTimeout,
			ReadTimeout:       metricsReadTimeout,
			IdleTimeout:       metricsIdleTimeout,
			MaxHeaderBytes:    metricsMaxHeaderBytes,
			ErrorLog:          stdLogger(log),
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics server stopped")
		}
	}()
	srv.metrics = m
	log.Info().Str("addr", ln.Addr().String()).Bool("pprof", srv.conf.MetricsPprof).Msg("serving metrics")
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

// stopMetrics stops the metrics HTTP server, if it runs, and waits for it:
// scrapes in progress get metricsShutdownTimeout to finish.
func (srv *Server) stopMetrics() {
	srv.mu.Lock()
	m := srv.metrics
	srv.mu.Unlock()
	m.stop()
}

// stop stops m, if not nil, and waits for it.
func (m *metricsServer) stop() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
	defer cancel()
	if err := m.http.Shutdown(ctx); err != nil {
		_ = m.http.Close()
	}
	<-m.done
}

// MetricsAddr returns the address the metrics HTTP server listens on, nil
// if it does not (Config.MetricsAddress empty, or before Listen).
func (srv *Server) MetricsAddr() net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.metrics == nil {
		return nil
	}
	return srv.metrics.ln.Addr()
}

// promLogger writes promhttp's errors (a metric that failed to gather, a
// client gone mid-scrape) at warn level.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Warn().Msg(fmt.Sprint(v...)) }

// stdLogger is a log.Logger writing net/http's errors (a malformed
// request, an accept error) at debug level: a client can cause them.
func stdLogger(l zerolog.Logger) *log.Logger {
	return log.New(debugWriter{l}, "", 0)
}

type debugWriter struct{ log zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	if e := w.log.Debug(); e.Enabled() {
		e.Msg(string(trimNewline(p)))
	}
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	if n := len(p); n > 0 && p[n-1] == '\n' {
		return p[:n-1]
	}
	return p
}
