package server

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

// Reasons a login is refused, as the log line and
// basalt_logins_refused_total name them.
const (
	refusedBanned          = "banned"
	refusedNotAllowlisted  = "not_allowlisted"
	refusedNotSignedIn     = "not_signed_in"
	refusedAuthUnavailable = "auth_unavailable"
	// refusedHandler is a player Config.NewHandler refused; it is not
	// counted in basalt_logins_refused_total.
	refusedHandler = "handler"
)

// logRefusal writes the info line of a login refused for reason: who (the
// name and XUID the Login gave, and whether online mode verified them; the
// session's logger adds the address), why (reason, the message the player
// was shown, and for a failed verification the cause) and what the
// operator can do about it.
//
// By the Login the client has proven its address (the RakNet handshake's
// cookie, NetherNet's ICE check), so the line may name it; but anyone can
// log in again and again, so at most lifecycleBurst lines are written per
// lifecycleEvery, apart from the joins and leaves so that a flood cannot
// hide them, and the next line written says how many were left out
// (suppressed). The metric counts every refusal.
func (srv *Server) logRefusal(s *session.Session, id session.Identity, named bool, reason string, err error) {
	e := srv.refusalEvent(s)
	if e == nil {
		return
	}
	if !named { // before the Login completes the session's logger has no player
		e.Str("player", id.DisplayName)
	}
	e.Str("xuid", id.XUID).Bool("verified", id.Verified).Str("reason", reason)
	if de, ok := errors.AsType[*session.DisconnectError](err); ok {
		e.Str("shown", de.Message) // not "message", the line's own
	}
	if reason == refusedNotSignedIn || reason == refusedAuthUnavailable {
		e.Err(err) // what verification found wrong
	}
	e.Str("fix", refusalFix(reason, id)).Msg("login refused")
}

// refusalFix says what an operator can do about a refusal for reason.
func refusalFix(reason string, id session.Identity) string {
	name := id.DisplayName
	if strings.ContainsAny(name, " \t") {
		name = strconv.Quote(name)
	}
	switch reason {
	case refusedBanned:
		return "if the ban is a mistake, unban " + name + " (or the XUID or address the ban names) on the console"
	case refusedNotAllowlisted:
		return "to admit them, allowlist add " + name + " on the console"
	case refusedNotSignedIn:
		return "the player must sign in to Xbox Live; server.online_mode = false admits clients that are not, on a test server only"
	case refusedAuthUnavailable:
		return "the server has not fetched the authentication service's keys yet: check that it can reach " +
			"server.auth_discovery_url (a warning at start says why it cannot)"
	}
	return ""
}

// accessReason returns the refusal reason of an error of the access
// lists.
func accessReason(err error) string {
	if de, ok := err.(*session.DisconnectError); ok && de.Message == NotAllowlistedMessage {
		return refusedNotAllowlisted
	}
	return refusedBanned
}

// refusalEvent returns an info event on s's logger for a "login refused"
// line, with the count of those left out before it, or nil when this one
// is left out.
func (srv *Server) refusalEvent(s *session.Session) *zerolog.Event {
	l := s.Log().Sample(srv.refusals)
	e := l.Info()
	if !e.Enabled() {
		return nil
	}
	if n := srv.refusals.dropped.Swap(0); n > 0 {
		e.Uint64("suppressed", n)
	}
	return e
}

// countingSampler is a zerolog.BurstSampler that counts the events it
// drops. It is safe for concurrent use.
type countingSampler struct {
	zerolog.BurstSampler
	dropped atomic.Uint64
}

// Sample reports whether an event at lvl is written, counting it if not.
func (c *countingSampler) Sample(lvl zerolog.Level) bool {
	if c.BurstSampler.Sample(lvl) {
		return true
	}
	c.dropped.Add(1)
	return false
}
