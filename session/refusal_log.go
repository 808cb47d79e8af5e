package session

import (
	"sync"
	"time"
)

// Refused protocols are logged at info, each with the client's protocol
// and address (the session logger's raddr), but at most
// refusalLogBurst lines per refusalLogInterval in the process, as the
// listener summarises its refusals: a client that reconnects in a loop, or
// many that are outdated at once, cannot flood the log. The next line that
// gets through says how many were left out.
const (
	refusalLogBurst    = 5
	refusalLogInterval = 10 * time.Second
)

// logLimiter lets through at most burst lines per interval and counts the
// rest. It is safe for concurrent use.
type logLimiter struct {
	burst    int
	interval time.Duration

	mu         sync.Mutex
	start      time.Time // of the current interval
	n          int       // lines let through in it
	suppressed uint64    // lines left out since the last one let through
}

// allow reports whether a line may be written at now and, if so, how many
// were left out before it.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.interval || now.Before(l.start) {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// protocolRefusals limits the log lines of refused protocols, process-wide.
var protocolRefusals = logLimiter{burst: refusalLogBurst, interval: refusalLogInterval}
