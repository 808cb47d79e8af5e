package server

import (
	"errors"
	"strings"
	"time"

	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
)

// Disconnect messages of players the allowlist or a ban keeps out (see
// package access).
const (
	NotAllowlistedMessage = access.NotAllowlistedMessage
	BannedMessage         = access.BannedMessage
)

// DefaultAccessPollInterval is how often the allowlist and ban files are
// checked for changes.
const DefaultAccessPollInterval = access.DefaultPollInterval

// AllowlistEntry is one entry of the allowlist (see access.AllowlistEntry).
type AllowlistEntry = access.AllowlistEntry

// Ban is one entry of the ban list (see access.Ban).
type Ban = access.Ban

// Allowlist reports whether the allowlist is enforced, and its entries.
func (srv *Server) Allowlist() (enabled bool, entries []AllowlistEntry) {
	return srv.access.Allowlist()
}

// AllowlistEnabled reports whether the allowlist is enforced: Query's
// whitelist field and the status say so.
func (srv *Server) AllowlistEnabled() bool {
	return srv.access.Enabled()
}

// SetAllowlist turns the allowlist on or off. Turned on, it disconnects
// the players online it does not list.
func (srv *Server) SetAllowlist(on bool) {
	srv.access.SetEnabled(on)
	srv.log.Info().Bool("allowlist", on).Msg("allowlist turned " + onOff(on))
	srv.enforceAccess()
}

// AllowlistAdd adds a player to the allowlist, by XUID if who is a
// decimal number and by name otherwise, and saves the file. Adding a
// player already listed changes nothing.
func (srv *Server) AllowlistAdd(who string) error {
	return srv.access.AllowlistAdd(who)
}

// AllowlistRemove removes the entries naming who (name in any case, or
// XUID) from the allowlist, saves the file and, with the allowlist on,
// disconnects the players it no longer lists. It reports whether any
// entry was removed.
func (srv *Server) AllowlistRemove(who string) (bool, error) {
	removed, err := srv.access.AllowlistRemove(who)
	if removed {
		srv.enforceAccess()
	}
	return removed, err
}

// Bans returns the bans in force and expired ones not yet removed.
func (srv *Server) Bans() []Ban {
	return srv.access.Bans()
}

// Ban adds b to the ban list, saves the file and disconnects the players
// online it applies to, with its reason. A ban by name also bans the XUID
// of a verified player online under that name, so a new name does not
// undo it.
func (srv *Server) Ban(b Ban) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if b.Created.IsZero() {
		b.Created = time.Now().UTC().Truncate(time.Second)
	}
	if b.Name != "" && b.XUID == "" {
		for _, s := range srv.Sessions() {
			if id, ok := s.Identity(); ok && id.Verified && strings.EqualFold(id.DisplayName, b.Name) {
				b.XUID = id.XUID
			}
		}
	}
	err := srv.access.Ban(b)
	e := srv.log.Info().Str("xuid", b.XUID).Str("name", b.Name).Str("ip", b.IP).Str("reason", b.Reason)
	if b.Expires.IsZero() {
		e = e.Str("expires", "never") // not the zero time, 0001-01-01
	} else {
		e = e.Time("expires", b.Expires)
	}
	e.Msg("banned")
	srv.enforceAccess()
	return err
}

// Unban removes every ban whose XUID, name (in any case) or IP is who,
// saves the file and reports how many it removed.
func (srv *Server) Unban(who string) (int, error) {
	return srv.access.Unban(who)
}

// enforceAccess disconnects every session whose player the ban list or
// the allowlist no longer admits, with the reason.
func (srv *Server) enforceAccess() {
	now := time.Now()
	for _, s := range srv.Sessions() {
		id, ok := s.Identity()
		if !ok {
			continue
		}
		err := srv.access.Check(id, addrPort(s.RemoteAddr()).Addr(), now)
		de, ok := err.(*session.DisconnectError)
		if !ok {
			continue
		}
		if s.DisconnectWith(de.Reason, de.Message) == nil {
			srv.log.Info().Str("player", id.DisplayName).Str("xuid", id.XUID).Str("shown", de.Message).
				Msg("disconnected a player the ban list or allowlist no longer admits")
		}
	}
}

// Reload reads the allowlist and ban files again and disconnects the
// players online they no longer admit. A file that does not parse keeps
// its list as it was, and the error says why. The server reloads on its
// own when a file changes; main reloads on SIGHUP too.
func (srv *Server) Reload() error {
	err := srv.loadAccess()
	if err != nil {
		srv.log.Error().Err(err).Msg("reload: keeping the lists in force")
	} else {
		srv.log.Info().Msg("reloaded the allowlist and ban list")
	}
	srv.enforceAccess()
	return err
}

// watchAccess reloads a list whose file changed, every interval (never
// if interval is negative), and writes the XUIDs logins learned, until
// done is closed; then it writes those learned last.
func (srv *Server) watchAccess(interval time.Duration, done <-chan struct{}) {
	defer srv.loops.Done()
	var tick <-chan time.Time
	if interval >= 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-done:
			if err := srv.access.SaveLearned(); err != nil {
				srv.log.Error().Err(srv.conf.locate(err)).Msg("the access lists learned an XUID the file could not take")
			}
			return
		case <-srv.access.Learned():
			srv.saveLearned()
			continue
		case <-tick:
		}
		a := srv.access
		allow, bans := a.Changed()
		if !allow && !bans {
			continue
		}
		var err error
		if allow {
			err = allowlistError(a.LoadAllowlist())
		}
		if bans {
			err = errors.Join(err, bansError(a.LoadBans()))
		}
		err = srv.conf.locate(err)
		if err != nil {
			// Stamp the bad version, so it is reported once, not every
			// interval.
			a.Stamp()
			srv.log.Error().Err(err).Msg("a changed access file does not parse; keeping the lists in force")
			continue
		}
		srv.log.Info().Bool("allowlist", allow).Bool("bans", bans).Msg("reloaded changed access files")
		srv.enforceAccess()
	}
}

// saveLearned writes the XUIDs logins learned to the access files. A file
// it reread, changed by hand since the last poll, may ban a player online.
func (srv *Server) saveLearned() {
	if err := srv.access.SaveLearned(); err != nil {
		srv.log.Error().Err(srv.conf.locate(err)).Msg("the access lists learned an XUID the file could not take")
		return
	}
	srv.enforceAccess()
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// initAccess sets up the access lists from the configuration. It runs in
// New.
func (srv *Server) initAccess() {
	srv.access = access.New(srv.conf.Access)
}

// loadAccess reads the allowlist and ban files, if configured. It runs in
// Listen: a file that does not parse stops the server from starting, as
// it could otherwise open a private server to everyone.
func (srv *Server) loadAccess() error {
	return srv.conf.locate(errors.Join(allowlistError(srv.access.LoadAllowlist()), bansError(srv.access.LoadBans())))
}

// allowlistError names server.allowlist_file and the fix in an error of
// loadAllow; nil stays nil.
func allowlistError(err error) error {
	if err == nil {
		return nil
	}
	return FileError("server.allowlist_file", err,
		`fix the file: a JSON list such as [{"name": "Steve", "xuid": "2535…"}], each entry naming a player, or delete it to start an empty one`)
}

// bansError names server.bans_file and the fix in an error of loadBans;
// nil stays nil.
func bansError(err error) error {
	if err == nil {
		return nil
	}
	return FileError("server.bans_file", err,
		`fix the file: a JSON list such as [{"xuid": "2535…", "reason": "griefing"}], each entry naming an XUID, a name or an IP, or delete it to start an empty one`)
}
