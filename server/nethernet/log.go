package nethernet

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/netip"
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

func (l *lineLimiter) allow(now time.Time) bool { return l.allowN(now, maxLibraryLines) }

// allowN reports whether one more line fits in n a second.
func (l *lineLimiter) allowN(now time.Time, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.n = now, 0
	}
	l.n++
	return l.n <= n
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

// maxRefusalLines is how many refusals a second are logged one by one at
// info; past it they are left to the summaries and counters.
const maxRefusalLines = 5

// refusalLog logs, at info, an offer refused because its identity did
// not verify: an operator asking why a friend cannot join finds the
// reason. The client's address proved itself over TCP, or is on the LAN.
func (l *Listener) refusalLog(src netip.Addr, err error) {
	if !l.rlog.allowN(time.Now(), maxRefusalLines) {
		return
	}
	l.log.Info().Str("raddr", src.String()).Err(err).Msg("NetherNet offer refused: its sign-in did not verify")
}

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
		d := func(now, then uint64) uint64 { return now - then }
		e := l.log.Warn()
		var n uint64
		for _, f := range []struct {
			key       string
			now, then uint64
		}{
			{"too_large", st.TooLarge, last.TooLarge},
			{"busy", st.Busy, last.Busy},
			{"rate_limited", st.RateLimited, last.RateLimited},
			{"source_busy", st.SourceBusy, last.SourceBusy},
			{"malformed", st.Malformed, last.Malformed},
			{"unauthenticated", st.Unauthenticated, last.Unauthenticated},
			{"unproven", st.Unproven, last.Unproven},
			{"not_lan", st.NotLAN, last.NotLAN},
			{"conns_refused", st.ConnsRefused, last.ConnsRefused},
			{"conns_evicted", st.ConnsEvicted, last.ConnsEvicted},
			{"failed", st.Failed, last.Failed},
		} {
			v := d(f.now, f.then)
			n += v
			e = e.Uint64(f.key, v)
		}
		last = st
		if n == 0 {
			e.Discard()
			continue
		}
		e.Stringer("over", summaryInterval).Msg("NetherNet offers refused or failed")
	}
}
