package nethernet

import (
	"context"
	"io"
	"log"
	"log/slog"
	"sync"
	"time"

	"github.com/pion/logging"
	"github.com/rs/zerolog"
)

// maxLibraryLines is how many lines a second go-nethernet may add to the
// log; it logs once per failed negotiation, which a peer triggers at will.
const maxLibraryLines = 10

// newSlog returns the logger go-nethernet gets: its lines go to log at
// debug level (a failed negotiation is the peer's business, and the
// Listener's summaries count them), at most maxLibraryLines a second.
func newSlog(log zerolog.Logger) *slog.Logger {
	return slog.New(&slogHandler{log: log, lim: &lineLimiter{}})
}

// slogHandler forwards slog records to zerolog at debug level.
type slogHandler struct {
	log   zerolog.Logger
	lim   *lineLimiter
	attrs []slog.Attr
}

func (h *slogHandler) Enabled(context.Context, slog.Level) bool {
	return h.log.Debug().Enabled()
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	if !h.lim.allow(time.Now()) {
		return nil
	}
	e := h.log.Debug().Str("lib", "go-nethernet").Str("level", r.Level.String())
	for _, a := range h.attrs {
		e = e.Str(a.Key, a.Value.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		e = e.Str(a.Key, a.Value.String())
		return true
	})
	e.Msg(r.Message)
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &n
}

func (h *slogHandler) WithGroup(string) slog.Handler { return h }

// lineLimiter allows a bounded number of lines a second.
type lineLimiter struct {
	mu     sync.Mutex
	window time.Time
	n      int
}

func (l *lineLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.n = now, 0
	}
	l.n++
	return l.n <= maxLibraryLines
}

// pionLogger discards pion's logging: it reports, per datagram, what a
// peer can make it report, and the Listener counts what matters.
type pionLogger struct{}

func (pionLogger) NewLogger(string) logging.LeveledLogger { return pionNop{} }

type pionNop struct{}

func (pionNop) Trace(string)          {}
func (pionNop) Tracef(string, ...any) {}
func (pionNop) Debug(string)          {}
func (pionNop) Debugf(string, ...any) {}
func (pionNop) Info(string)           {}
func (pionNop) Infof(string, ...any)  {}
func (pionNop) Warn(string)           {}
func (pionNop) Warnf(string, ...any)  {}
func (pionNop) Error(string)          {}
func (pionNop) Errorf(string, ...any) {}

// httpErrorLog discards net/http's per-connection errors (TLS handshakes
// that fail, headers that time out): a peer triggers them at will.
func httpErrorLog() *log.Logger {
	return log.New(io.Discard, "", 0)
}

// summaryInterval is how often the Listener logs what it refused, if it
// refused anything.
const summaryInterval = 30 * time.Second

// summarise logs, every summaryInterval, the offers refused since the
// last summary, until the Listener closes.
func (l *Listener) summarise() {
	t := time.NewTicker(summaryInterval)
	defer t.Stop()
	var last Stats
	for {
		select {
		case <-l.closed:
			return
		case <-t.C:
		}
		st := l.Stats()
		d := Stats{
			TooLarge:    st.TooLarge - last.TooLarge,
			Busy:        st.Busy - last.Busy,
			RateLimited: st.RateLimited - last.RateLimited,
			Malformed:   st.Malformed - last.Malformed,
			Failed:      st.Failed - last.Failed,
		}
		last = st
		if d.TooLarge+d.Busy+d.RateLimited+d.Malformed+d.Failed == 0 {
			continue
		}
		l.log.Warn().Uint64("too_large", d.TooLarge).Uint64("busy", d.Busy).
			Uint64("rate_limited", d.RateLimited).Uint64("malformed", d.Malformed).
			Uint64("failed", d.Failed).Stringer("over", summaryInterval).
			Msg("NetherNet offers refused or failed")
	}
}
