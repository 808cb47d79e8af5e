package server

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
)

// Disconnect messages of players the allowlist or a ban keeps out.
const (
	// NotAllowlistedMessage refuses a player the allowlist does not list.
	NotAllowlistedMessage = "You are not on this server's allowlist."
	// BannedMessage begins the message of a banned player; the ban's
	// reason and expiry follow.
	BannedMessage = "You are banned from this server."
)

// AllowlistEntry is one entry of the allowlist, as BDS's allowlist.json
// holds it. An entry with an XUID matches that XUID only; one with a name
// alone matches the name, in any case, and in online mode gets the XUID of
// the first verified player it admits, as BDS does, so that a later owner
// of the name does not inherit the entry. Names and XUIDs prove nothing in
// offline mode.
type AllowlistEntry struct {
	// Name is the player's gamertag.
	Name string `json:"name,omitempty"`
	// XUID is the player's Xbox user id, in decimal.
	XUID string `json:"xuid,omitempty"`
	// IgnoresPlayerLimit is BDS's field, kept so that a file brought
	// from BDS keeps it; Basalt does not act on it.
	IgnoresPlayerLimit bool `json:"ignoresPlayerLimit"`
}

// matches reports whether the entry names the player id.
func (e AllowlistEntry) matches(id session.Identity) bool {
	if e.XUID != "" {
		return id.XUID == e.XUID
	}
	return e.Name != "" && strings.EqualFold(e.Name, id.DisplayName)
}

// Ban is one entry of the ban list: a player by XUID or name, or an
// address by IP or CIDR prefix, with an optional reason and expiry. An IP
// ban applies to the address a client connects from, which behind a
// trusted PROXY protocol proxy is the address the proxy names.
type Ban struct {
	// XUID bans the player with this Xbox user id.
	XUID string `json:"xuid,omitempty"`
	// Name bans the player with this name, in any case.
	Name string `json:"name,omitempty"`
	// IP bans an address ("203.0.113.7") or a prefix ("203.0.113.0/24").
	IP string `json:"ip,omitempty"`
	// Reason is shown to the banned player.
	Reason string `json:"reason,omitempty"`
	// Expires ends the ban; zero means never.
	Expires time.Time `json:"expires,omitzero"`
	// Created is when the ban was made.
	Created time.Time `json:"created,omitzero"`
}

// prefix returns the ban's IP as a prefix, false if it has none that
// parses.
func (b Ban) prefix() (netip.Prefix, bool) {
	if b.IP == "" {
		return netip.Prefix{}, false
	}
	if p, err := netip.ParsePrefix(b.IP); err == nil {
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(b.IP)
	if err != nil {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}

// matches reports whether the ban applies, at now, to player id
// connecting from ip.
func (b Ban) matches(id session.Identity, ip netip.Addr, now time.Time) bool {
	if !b.Expires.IsZero() && !now.Before(b.Expires) {
		return false
	}
	switch {
	case b.XUID != "" && id.XUID == b.XUID:
		return true
	case b.Name != "" && strings.EqualFold(b.Name, id.DisplayName):
		return true
	}
	p, ok := b.prefix()
	return ok && ip.IsValid() && p.Contains(ip.Unmap())
}

// message returns what the banned player is told.
func (b Ban) message() string {
	msg := BannedMessage
	if b.Reason != "" {
		msg += " Reason: " + b.Reason
	}
	if !b.Expires.IsZero() {
		msg += " Until " + b.Expires.UTC().Format("2006-01-02 15:04 MST") + "."
	}
	return msg
}

// validate checks that the ban names exactly one target that parses.
func (b Ban) validate() error {
	n := 0
	for _, s := range []string{b.XUID, b.Name, b.IP} {
		if s != "" {
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("ban names no XUID, name or IP")
	}
	if b.IP != "" {
		if _, ok := b.prefix(); !ok {
			return fmt.Errorf("ban IP %q is neither an address nor a CIDR prefix", b.IP)
		}
	}
	return nil
}

// access is a server's allowlist and ban list. Its methods are safe for
// concurrent use.
type access struct {
	// enabled is whether the allowlist is enforced; atomic, so Query's
	// reader never waits for mu.
	enabled atomic.Bool

	mu     sync.Mutex
	allow  []AllowlistEntry
	bans   []Ban
	allowF accessFile
	bansF  accessFile
}

// admit returns nil if the player id, connecting from ip, may join, and
// otherwise the *session.DisconnectError that refuses it, counting it in
// c.
func (a *access) admit(id session.Identity, ip netip.Addr, c *counters) error {
	err, changed := a.check(id, ip, time.Now(), true)
	if changed {
		a.saveAllow()
	}
	if de, ok := err.(*session.DisconnectError); ok && c != nil {
		if de.Message == NotAllowlistedMessage {
			c.notAllowlisted.Add(1)
		} else {
			c.banned.Add(1)
		}
	}
	return err
}

// check returns the refusal of player id connecting from ip at now, nil
// if it may play. With learn, a name-only allowlist entry that admits a
// verified player records its XUID, and changed reports it.
func (a *access) check(id session.Identity, ip netip.Addr, now time.Time, learn bool) (err error, changed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.bans {
		if b.matches(id, ip, now) {
			return &session.DisconnectError{Reason: session.DisconnectReasonNotAllowed, Message: b.message()}, false
		}
	}
	if !a.enabled.Load() {
		return nil, false
	}
	for i, e := range a.allow {
		if e.matches(id) {
			if learn && e.XUID == "" && id.Verified && id.XUID != "" {
				a.allow[i].XUID = id.XUID
				changed = true
			}
			return nil, changed
		}
	}
	return &session.DisconnectError{Reason: session.DisconnectReasonNotAllowed, Message: NotAllowlistedMessage}, false
}

// Allowlist reports whether the allowlist is enforced, and its entries.
func (srv *Server) Allowlist() (enabled bool, entries []AllowlistEntry) {
	a := &srv.access
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.enabled.Load(), slices.Clone(a.allow)
}

// AllowlistEnabled reports whether the allowlist is enforced: Query's
// whitelist field and the status say so.
func (srv *Server) AllowlistEnabled() bool {
	return srv.access.enabled.Load()
}

// SetAllowlist turns the allowlist on or off. Turned on, it disconnects
// the players online it does not list.
func (srv *Server) SetAllowlist(on bool) {
	srv.access.enabled.Store(on)
	srv.log.Info().Bool("allowlist", on).Msg("allowlist turned " + onOff(on))
	srv.enforceAccess()
}

// AllowlistAdd adds a player to the allowlist, by XUID if who is a
// decimal number and by name otherwise, and saves the file. Adding a
// player already listed changes nothing.
func (srv *Server) AllowlistAdd(who string) error {
	e, err := allowlistEntry(who)
	if err != nil {
		return err
	}
	a := &srv.access
	a.mu.Lock()
	if slices.ContainsFunc(a.allow, func(x AllowlistEntry) bool { return sameEntry(x, e) }) {
		a.mu.Unlock()
		return nil
	}
	a.allow = append(a.allow, e)
	a.mu.Unlock()
	return a.saveAllow()
}

// AllowlistRemove removes the entries naming who (name in any case, or
// XUID) from the allowlist, saves the file and, with the allowlist on,
// disconnects the players it no longer lists. It reports whether any
// entry was removed.
func (srv *Server) AllowlistRemove(who string) (bool, error) {
	a := &srv.access
	a.mu.Lock()
	n := len(a.allow)
	a.allow = slices.DeleteFunc(a.allow, func(e AllowlistEntry) bool {
		return (e.XUID != "" && e.XUID == who) || (e.Name != "" && strings.EqualFold(e.Name, who))
	})
	removed := len(a.allow) != n
	a.mu.Unlock()
	if !removed {
		return false, nil
	}
	err := a.saveAllow()
	srv.enforceAccess()
	return true, err
}

// Bans returns the bans in force and expired ones not yet removed.
func (srv *Server) Bans() []Ban {
	a := &srv.access
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bans)
}

// Ban adds b to the ban list, saves the file and disconnects the players
// online it applies to, with its reason. A ban by name also bans the XUID
// of a verified player online under that name, so a new name does not
// undo it.
func (srv *Server) Ban(b Ban) error {
	if err := b.validate(); err != nil {
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
	a := &srv.access
	a.mu.Lock()
	a.bans = append(a.bans, b)
	a.mu.Unlock()
	srv.log.Info().Str("xuid", b.XUID).Str("name", b.Name).Str("ip", b.IP).Str("reason", b.Reason).
		Time("expires", b.Expires).Msg("banned")
	err := a.saveBans()
	srv.enforceAccess()
	return err
}

// Unban removes every ban whose XUID, name (in any case) or IP is who,
// saves the file and reports how many it removed.
func (srv *Server) Unban(who string) (int, error) {
	a := &srv.access
	a.mu.Lock()
	n := len(a.bans)
	a.bans = slices.DeleteFunc(a.bans, func(b Ban) bool {
		return (b.XUID != "" && b.XUID == who) || (b.Name != "" && strings.EqualFold(b.Name, who)) ||
			(b.IP != "" && b.IP == who)
	})
	removed := n - len(a.bans)
	a.mu.Unlock()
	if removed == 0 {
		return 0, nil
	}
	return removed, a.saveBans()
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
		err, _ := srv.access.check(id, addrPort(s.RemoteAddr()).Addr(), now, false)
		de, ok := err.(*session.DisconnectError)
		if !ok {
			continue
		}
		if s.DisconnectWith(de.Reason, de.Message) == nil {
			srv.log.Info().Str("player", id.DisplayName).Str("xuid", id.XUID).Str("message", de.Message).
				Msg("disconnected a player the ban list or allowlist no longer admits")
		}
	}
}

// allowlistEntry returns the entry for who: an XUID if it is a decimal
// number, a name otherwise.
func allowlistEntry(who string) (AllowlistEntry, error) {
	switch {
	case who == "":
		return AllowlistEntry{}, fmt.Errorf("no player named")
	case isXUID(who):
		return AllowlistEntry{XUID: who}, nil
	case len(who) > 64 || strings.ContainsFunc(who, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return AllowlistEntry{}, fmt.Errorf("%q is not a player name", who)
	}
	return AllowlistEntry{Name: who}, nil
}

// sameEntry reports whether two allowlist entries name the same player.
func sameEntry(a, b AllowlistEntry) bool {
	if a.XUID != "" || b.XUID != "" {
		return a.XUID == b.XUID
	}
	return strings.EqualFold(a.Name, b.Name)
}

// isXUID reports whether s is a decimal number of XUID length.
func isXUID(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
