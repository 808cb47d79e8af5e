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

// Stats returns the server's counters. It is safe to call at any time; each
// counter is read on its own, so they are not one snapshot.
func (srv *Server) Stats() Stats {
	c := &srv.stats
	return Stats{
		PreLoginTooLarge:    c.preLoginTooLarge.Load(),
		TooLarge:            c.tooLarge.Load(),
		DecompressionBudget: c.budget.Load(),
		LoginTimeouts:       c.loginTimeouts.Load(),
		BadChecksums:        c.badChecksums.Load(),
		NotSignedIn:         c.notSignedIn.Load(),
		AuthUnavailable:     c.authUnavailable.Load(),
		NotAllowlisted:      c.notAllowlisted.Load(),
		Banned:              c.banned.Load(),
	}
}
