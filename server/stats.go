package server

import (
	"errors"
	"sync/atomic"

	"github.com/basaltmc/basalt/session"
)

// Stats are a Server's counts of the sessions it ended because their client
// broke a limit, by kind. Each of those clients was sent a Disconnect saying
// why. None of them blocks an address or logs more than a debug line.
type Stats struct {
	// PreLoginTooLarge counts sessions that sent, before logging in, a
	// batch decompressing beyond session.DefaultMaxPreLoginSize: a
	// decompression bomb, or a Login with an outsize skin.
	PreLoginTooLarge uint64
	// TooLarge counts logged-in sessions that sent a batch decompressing
	// beyond session.DefaultMaxDecompressedSize.
	TooLarge uint64
	// DecompressionBudget counts sessions that sent compressed batches
	// faster than their decompression budget allows.
	DecompressionBudget uint64
	// LoginTimeouts counts sessions whose player had not logged in within
	// Config.LoginTimeout.
	LoginTimeouts uint64
	// BadChecksums counts encrypted sessions that sent a batch whose
	// checksum was wrong (session.ErrChecksum): a corrupt or forged
	// stream. These are not told why.
	BadChecksums uint64
	// NotSignedIn counts Logins refused in online mode because they did
	// not prove an Xbox Live identity (auth.NotSignedInMessage).
	NotSignedIn uint64
	// AuthUnavailable counts Logins refused in online mode because the
	// keys of the authentication service were not there yet
	// (auth.UnavailableMessage).
	AuthUnavailable uint64
	// NotAllowlisted counts Logins the allowlist refused.
	NotAllowlisted uint64
	// Banned counts Logins a ban refused.
	Banned uint64
}

// counters are a Server's Stats as they are kept, each updated on its own.
type counters struct {
	preLoginTooLarge, tooLarge, budget, loginTimeouts, badChecksums atomic.Uint64
	notSignedIn, authUnavailable, notAllowlisted, banned            atomic.Uint64
	// sessions are the figures of the sessions that closed, for metrics.
	sessions sessionCounts
}

// countRefusal counts a Login the access lists refused with err.
func (c *counters) countRefusal(err error) {
	if de, ok := err.(*session.DisconnectError); ok {
		if de.Message == NotAllowlistedMessage {
			c.notAllowlisted.Add(1)
		} else {
			c.banned.Add(1)
		}
	}
}

// count records why a session ended, if its client broke a limit: err is
// what Run returned, loggedIn whether its player had logged in.
func (c *counters) count(err error, loggedIn bool) {
	switch {
	case err == nil:
	case errors.Is(err, session.ErrLoginTimeout):
		c.loginTimeouts.Add(1)
	case errors.Is(err, session.ErrChecksum):
		c.badChecksums.Add(1)
	case errors.Is(err, session.ErrDecompressionBudget):
		c.budget.Add(1)
	case errors.Is(err, session.ErrTooLarge) && loggedIn:
		c.tooLarge.Add(1)
	case errors.Is(err, session.ErrTooLarge):
		c.preLoginTooLarge.Add(1)
	}
}

// sessionCounts are the figures the server keeps about sessions for its
// metrics: counted when a session ends, or (handler errors) when a handler
// returns one, which ends its session; never per packet.
type sessionCounts struct {
	ended, handlerErrors, handlerPanics atomic.Uint64
	// totals sums the Stats of the sessions removed from the registry;
	// guarded by Server.mu, so a scrape counts each session once, live or
	// ended.
	totals session.Stats
}

// count records a session that ended with err, as Run returned it.
func (c *sessionCounts) count(err error) {
	c.ended.Add(1)
	if errors.Is(err, session.ErrHandlerPanic) {
		c.handlerPanics.Add(1)
	}
}

// add adds an ended session's Stats to the totals. Server.mu is held.
func (c *sessionCounts) add(st session.Stats) { addSessionStats(&c.totals, st) }

func addSessionStats(t *session.Stats, st session.Stats) {
	t.BatchesIn += st.BatchesIn
	t.BatchesOut += st.BatchesOut
	t.PacketsIn += st.PacketsIn
	t.PacketsOut += st.PacketsOut
	t.BytesIn += st.BytesIn
	t.BytesOut += st.BytesOut
	t.WireBytesIn += st.WireBytesIn
	t.PacketsSkipped += st.PacketsSkipped
}
