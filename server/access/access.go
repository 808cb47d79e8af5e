package access

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
	// Name bans the player with this name, in any case. In online mode
	// a ban with a name and no XUID takes the XUID of the first verified
	// player it refuses, so a new name does not undo it.
	Name string `json:"name,omitempty"`
	// IP bans an address ("203.0.113.7") or a prefix ("203.0.113.0/24").
	// An IPv4-mapped one ("::ffff:203.0.113.0/120") bans the IPv4
	// addresses it maps.
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
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			// An IPv4-mapped prefix (::ffff:203.0.113.0/120) is the
			// IPv4 one (203.0.113.0/24): clients' addresses are
			// matched unmapped.
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
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
	if !ok || !ip.IsValid() {
		return false
	}
	ip = ip.Unmap()
	// A prefix shorter than /96 that holds IPv4-mapped addresses
	// (::ffff:0:0/95) holds an IPv4 client in its mapped form.
	return p.Contains(ip) || (ip.Is4() && p.Contains(netip.AddrFrom16(ip.As16())))
}

// matchesName reports whether the ban names id, by name only: a ban that
// may learn the player's XUID.
func (b Ban) matchesName(id session.Identity) bool {
	return b.XUID == "" && b.Name != "" && strings.EqualFold(b.Name, id.DisplayName)
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

// Validate checks that the ban names exactly one target that parses.
func (b Ban) Validate() error {
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

// Config is what a server's access lists start from.
type Config struct {
	// Allowlist admits only the players the allowlist lists (see
	// AllowlistEntry); false (the zero value) admits everyone not banned.
	// Lists.SetEnabled changes it while the server runs.
	Allowlist bool
	// AllowlistFile is the allowlist's file, in BDS's allowlist.json
	// format, read at Load (created holding [] if missing), reloaded
	// when it changes and written when the list is changed through
	// Lists; "" keeps the list in memory.
	AllowlistFile string
	// AllowlistEntries is the allowlist when AllowlistFile is "".
	AllowlistEntries []AllowlistEntry
	// BansFile is the ban list's file, a JSON array of Ban, handled as
	// AllowlistFile is; "" keeps the list in memory.
	BansFile string
	// Bans is the ban list when BansFile is "".
	Bans []Ban
	// PollInterval is how often AllowlistFile and BansFile are checked
	// for changes; 0 means DefaultPollInterval, negative never.
	PollInterval time.Duration
}

// Lists is a server's allowlist and ban list. Its methods are safe for
// concurrent use.
type Lists struct {
	// enabled is whether the allowlist is enforced; atomic, so Query's
	// reader never waits for mu.
	enabled atomic.Bool

	// learnedC receives a value when check learned an XUID (see
	// Learned).
	learnedC chan struct{}

	mu     sync.Mutex
	allow  []AllowlistEntry
	bans   []Ban
	allowF listFile
	bansF  listFile
}

// New returns the lists c configures. It reads no file: call
// LoadAllowlist and LoadBans.
func New(c Config) *Lists {
	l := &Lists{
		allow:    slices.Clone(c.AllowlistEntries),
		bans:     slices.Clone(c.Bans),
		learnedC: make(chan struct{}, 1),
	}
	l.enabled.Store(c.Allowlist)
	l.allowF.path, l.bansF.path = c.AllowlistFile, c.BansFile
	return l
}

// Admit returns nil if the player id, connecting from ip, may join, and
// otherwise the *session.DisconnectError that refuses it. A name-only
// allowlist entry that admits a verified player, or a name-only ban that
// refuses one, records the player's XUID, as BDS does for the allowlist:
// a later owner of the name is not admitted in the player's place, and a
// banned player who takes a new name stays banned. Admit writes no file:
// it signals Learned, and SaveLearned writes what was learned.
func (a *Lists) Admit(id session.Identity, ip netip.Addr) error {
	err, learned := a.check(id, ip, time.Now(), true)
	if learned {
		select {
		case a.learnedC <- struct{}{}:
		default: // a signal is already waiting
		}
	}
	return err
}

// Check returns the refusal of player id connecting from ip at now, nil
// if it may play. It changes nothing.
func (a *Lists) Check(id session.Identity, ip netip.Addr, now time.Time) error {
	err, _ := a.check(id, ip, now, false)
	return err
}

// check returns the refusal of player id connecting from ip at now, nil
// if it may play. With learn, a name-only entry of either list that
// matches a verified player records its XUID, and learned reports it.
func (a *Lists) check(id session.Identity, ip netip.Addr, now time.Time, learn bool) (err error, learned bool) {
	learn = learn && id.Verified && IsXUID(id.XUID)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, b := range a.bans {
		if b.matches(id, ip, now) {
			if learn && b.matchesName(id) {
				a.bans[i].XUID = id.XUID
				learned = a.bansF.learn(b.Name, id.XUID)
			}
			return &session.DisconnectError{Reason: session.DisconnectReasonNotAllowed, Message: b.message()}, learned
		}
	}
	if !a.enabled.Load() {
		return nil, false
	}
	for i, e := range a.allow {
		if e.matches(id) {
			if learn && e.XUID == "" {
				a.allow[i].XUID = id.XUID
				learned = a.allowF.learn(e.Name, id.XUID)
			}
			return nil, learned
		}
	}
	return &session.DisconnectError{Reason: session.DisconnectReasonNotAllowed, Message: NotAllowlistedMessage}, false
}

// Allowlist reports whether the allowlist is enforced, and its entries.
func (a *Lists) Allowlist() (enabled bool, entries []AllowlistEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.enabled.Load(), slices.Clone(a.allow)
}

// Enabled reports whether the allowlist is enforced. It never waits for
// a lock.
func (a *Lists) Enabled() bool { return a.enabled.Load() }

// SetEnabled turns the allowlist on or off.
func (a *Lists) SetEnabled(on bool) { a.enabled.Store(on) }

// AllowlistAdd adds a player to the allowlist, by XUID if who is a
// decimal number and by name otherwise, and saves the file. Adding a
// player already listed changes nothing.
func (a *Lists) AllowlistAdd(who string) error {
	e, err := allowlistEntry(who)
	if err != nil {
		return err
	}
	return a.updateAllowlist(func(l []AllowlistEntry) ([]AllowlistEntry, bool) {
		if slices.ContainsFunc(l, func(x AllowlistEntry) bool { return sameEntry(x, e) }) {
			return l, false
		}
		return append(l, e), true
	})
}

// AllowlistRemove removes the entries naming who (name in any case, or
// XUID) from the allowlist and saves the file. It reports whether any
// entry was removed.
func (a *Lists) AllowlistRemove(who string) (bool, error) {
	removed := false
	err := a.updateAllowlist(func(l []AllowlistEntry) ([]AllowlistEntry, bool) {
		n := len(l)
		l = slices.DeleteFunc(l, func(e AllowlistEntry) bool {
			return (e.XUID != "" && e.XUID == who) || (e.Name != "" && strings.EqualFold(e.Name, who))
		})
		removed = len(l) != n
		return l, removed
	})
	return removed, err
}

// Bans returns the bans in force and expired ones not yet removed.
func (a *Lists) Bans() []Ban {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bans)
}

// Ban adds b, which must be valid, to the ban list and saves the file.
func (a *Lists) Ban(b Ban) error {
	return a.updateBans(func(l []Ban) ([]Ban, bool) { return append(l, b), true })
}

// Unban removes every ban whose XUID, name (in any case) or IP is who,
// saves the file and reports how many it removed.
func (a *Lists) Unban(who string) (int, error) {
	removed := 0
	err := a.updateBans(func(l []Ban) ([]Ban, bool) {
		n := len(l)
		l = slices.DeleteFunc(l, func(b Ban) bool {
			return (b.XUID != "" && b.XUID == who) || (b.Name != "" && strings.EqualFold(b.Name, who)) ||
				(b.IP != "" && b.IP == who)
		})
		removed = n - len(l)
		return l, removed > 0
	})
	return removed, err
}

// allowlistEntry returns the entry for who: an XUID if it is a decimal
// number, a name otherwise.
func allowlistEntry(who string) (AllowlistEntry, error) {
	switch {
	case who == "":
		return AllowlistEntry{}, fmt.Errorf("no player named")
	case IsXUID(who):
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

// IsXUID reports whether s is a decimal number of XUID length.
func IsXUID(s string) bool {
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
