package monitor

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
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Bounds of the HTTP server: a scrape is one small request, and an
// operator's endpoint owes a slow or idle client little.
const (
	readTimeout = 10 * time.Second
	idleTimeout = time.Minute
	// shutdownTimeout bounds how long Close waits for scrapes in progress
	// (a CPU profile may take 30 s; it is cut short).
	shutdownTimeout = 2 * time.Second
	maxHeaderBytes  = 8 << 10
)

// Config is what Listen serves.
type Config struct {
	// Address is the TCP address, "host:port", to listen on.
	Address string
	// Pprof also serves net/http/pprof at /debug/pprof/.
	Pprof bool
	// Registry is what /metrics reports.
	Registry *prometheus.Registry
	// Source answers /status and /readyz.
	Source Source
	// Log is where the server's lifecycle and errors go.
	Log zerolog.Logger
}

// Server is the HTTP server Listen started. Its methods are safe for
// concurrent use.
type Server struct {
	ln   net.Listener
	http *http.Server
	done chan struct{} // closed when Serve has returned
}

// Listen starts serving /metrics, /status, /healthz, /readyz and, with
// Pprof, /debug/pprof/ on c.Address. The error of a listener that cannot
// be opened is returned as net.Listen gave it.
func Listen(c Config) (*Server, error) {
	ln, err := net.Listen("tcp", c.Address)
	if err != nil {
		return nil, err
	}
	log := c.Log
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.Registry, promhttp.HandlerOpts{
		ErrorLog: promLogger{log}, Registry: c.Registry,
	}))
	healthRoutes(mux, c.Source)
	statusRoutes(mux, c.Source)
	if c.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	m := &Server{
		ln: ln,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readTimeout,
			ReadTimeout:       readTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
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
	log.Info().Str("addr", ln.Addr().String()).Bool("pprof", c.Pprof).Msg("serving metrics")
	return m, nil
}

// Addr returns the address m listens on.
func (m *Server) Addr() net.Addr { return m.ln.Addr() }

// Close stops m, if not nil, and waits for it: scrapes in progress get a
// little time to finish.
func (m *Server) Close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := m.http.Shutdown(ctx); err != nil {
		_ = m.http.Close()
	}
	<-m.done
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
