package console

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basaltmc/basalt/server/access"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// maxConsoleLine caps a console line; longer ones end the console.
const maxConsoleLine = 64 << 10

// consoleHelp is the answer to help.
const consoleHelp = `commands (quote a name with spaces: kick "Major Nelson" griefing):
  help                                  this list
  list                                  the players online
  say <message>                         a line of chat to every player
  kick <player> [reason]                disconnect a player (name or XUID)
  transfer <player> <host:port>         send a player to another server
  ban <player|xuid|ip|cidr> [<length>|forever [reason]]
                                        ban for a length such as 30m, 12h, 7d
                                        or 2w, or forever (the default), and
                                        disconnect who it names
  unban <player|xuid|ip|cidr>           lift the bans naming it
  allowlist on|off                      enforce the allowlist or stop
  allowlist add|remove <player|xuid>    change the allowlist
  allowlist list                        show the allowlist
  reload                                reread the allowlist and ban files
  stop                                  shut down, as Ctrl-C does`

// The usage lines a command's error repeats.
const (
	sayUsage       = "usage: say <message>"
	kickUsage      = "usage: kick <player> [reason]"
	transferUsage  = "usage: transfer <player> <host:port>"
	banUsage       = "usage: ban <player|xuid|ip|cidr> [<length>|forever [reason]], a length such as 30m, 12h, 7d or 2w"
	unbanUsage     = "usage: unban <player|xuid|ip|cidr>"
	allowlistUsage = "usage: allowlist on|off|list|add <player|xuid>|remove <player|xuid>"
)

// Server is what the console's commands act on; *server.Server is one.
// Its methods are called from the goroutine running Run.
type Server interface {
	// Players returns the identities of the players online, sorted by
	// name.
	Players() []session.Identity
	// PlayerLimit returns the number of players the server admits now.
	PlayerLimit() int
	// Say sends message to every player online as a line of chat, and
	// reports how many it was sent to.
	Say(message string) (int, error)
	// Kick disconnects the players online whose name or XUID is player,
	// and reports how many.
	Kick(player, reason string) (int, error)
	// Transfer sends the players online whose name or XUID is player to
	// the server at address, host:port, and reports how many.
	Transfer(player, address string) (int, error)
	// Ban adds b to the ban list and disconnects who it names.
	Ban(b access.Ban) error
	// Unban lifts the bans naming who and reports how many.
	Unban(who string) (int, error)
	// Allowlist reports whether the allowlist is enforced, and its
	// entries.
	Allowlist() (enabled bool, entries []access.AllowlistEntry)
	// SetAllowlist turns the allowlist on or off.
	SetAllowlist(on bool)
	// AllowlistAdd adds a player to the allowlist.
	AllowlistAdd(who string) error
	// AllowlistRemove removes a player from the allowlist.
	AllowlistRemove(who string) (bool, error)
	// Reload reads the allowlist and ban files again.
	Reload() error
}

// Input reports whether f is worth reading commands from: a
// terminal, a pipe or a file, but not /dev/null (a service's usual stdin)
// nor a closed descriptor.
func Input(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// Run runs the operator commands it reads from r, one a line (see
// consoleHelp; help lists them), on srv, until r ends or stop is. Each
// answer goes to log, so it lands wherever the server's log does. stop is what
// the stop command calls: main passes the cancel of the context Run
// waits on, so that stop shuts down as Ctrl-C does. It returns nil at the
// end of r, and the error that ended reading otherwise.
func Run(r io.Reader, srv Server, log zerolog.Logger, stop func()) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxConsoleLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		reply, quit, err := execCommand(srv, line)
		switch {
		case err != nil:
			log.Warn().Str("command", line).Msg(err.Error())
		case reply != "":
			for l := range strings.Lines(reply) {
				log.Info().Msg(strings.TrimSuffix(l, "\n"))
			}
		}
		if quit {
			if stop != nil {
				stop()
			}
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// execCommand runs one console line and returns its answer, and whether
// it was stop.
func execCommand(srv Server, line string) (reply string, stop bool, err error) {
	if word, msg, _ := strings.Cut(strings.Replace(line, "\t", " ", 1), " "); strings.EqualFold(word, "say") {
		// The message as typed: quotes are part of it, not arguments.
		msg = strings.TrimSpace(msg)
		if msg == "" {
			return "", false, errors.New(sayUsage)
		}
		n, err := srv.Say(msg)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("said to %d player(s): %s", n, msg), false, nil
	}
	f, err := splitLine(line)
	if err != nil {
		return "", false, err
	}
	cmd, args := strings.ToLower(f[0].text), f[1:]
	switch cmd {
	case "help", "?":
		return consoleHelp, false, nil
	case "list":
		ids := srv.Players()
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = id.DisplayName
		}
		reply = fmt.Sprintf("%d of %d players online", len(ids), srv.PlayerLimit())
		if len(names) > 0 {
			reply += ": " + strings.Join(names, ", ")
		}
		return reply, false, nil
	case "kick":
		if len(args) == 0 {
			return "", false, errors.New(kickUsage)
		}
		if err := unquotedName(srv, "kick", args); err != nil {
			return "", false, err
		}
		who := args[0].text
		n, err := srv.Kick(who, joinTexts(args[1:]))
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("kicked %d player(s) named %s", n, who), false, nil
	case "transfer":
		if len(args) != 2 {
			return "", false, errors.New(transferUsage)
		}
		who, addr := args[0].text, args[1].text
		n, err := srv.Transfer(who, addr)
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("transferred %d player(s) named %s to %s", n, who, addr), false, nil
	case "ban":
		if len(args) == 0 {
			return "", false, errors.New(banUsage)
		}
		if err := unquotedName(srv, "ban", args); err != nil {
			return "", false, err
		}
		b := banTarget(args[0].text)
		if len(args) > 1 {
			d, err := parseBanLength(args[1].text)
			if err != nil {
				return "", false, fmt.Errorf("%w; %s", err, banUsage)
			}
			if d > 0 {
				b.Expires = time.Now().Add(d).UTC().Truncate(time.Second)
			}
			b.Reason = joinTexts(args[2:])
		}
		if err := srv.Ban(b); err != nil {
			return "", false, err
		}
		until := "for good"
		if !b.Expires.IsZero() {
			until = "until " + b.Expires.Format(time.RFC3339)
		}
		return fmt.Sprintf("banned %s %s", args[0].text, until), false, nil
	case "unban", "pardon":
		who, ok := onlyName(args)
		if !ok {
			return "", false, errors.New(unbanUsage)
		}
		n, err := srv.Unban(who)
		if err != nil {
			return "", false, err
		}
		if n == 0 {
			return "", false, fmt.Errorf("no ban names %s", who)
		}
		return fmt.Sprintf("lifted %d ban(s) of %s", n, who), false, nil
	case "allowlist", "whitelist":
		return allowlistCommand(srv, args)
	case "reload":
		if err := srv.Reload(); err != nil {
			return "", false, err
		}
		return "", false, nil // Reload logs it
	case "stop":
		return "stopping the server", true, nil
	}
	return "", false, fmt.Errorf("unknown command %q; type help for the list of commands", cmd)
}

// allowlistCommand runs allowlist on|off|add|remove|list.
func allowlistCommand(srv Server, args []field) (string, bool, error) {
	usage := errors.New(allowlistUsage)
	if len(args) == 0 {
		return "", false, usage
	}
	switch strings.ToLower(args[0].text) {
	case "on", "off":
		if len(args) != 1 {
			return "", false, usage
		}
		srv.SetAllowlist(strings.EqualFold(args[0].text, "on"))
		return "", false, nil // SetAllowlist logs it
	case "list":
		on, l := srv.Allowlist()
		names := make([]string, len(l))
		for i, e := range l {
			names[i] = e.Name
			if e.XUID != "" {
				names[i] = strings.TrimSpace(e.Name + " (" + e.XUID + ")")
			}
		}
		return fmt.Sprintf("allowlist %s, %d entries: %s", onOff(on), len(l), strings.Join(names, ", ")), false, nil
	case "add":
		who, ok := onlyName(args[1:])
		if !ok {
			return "", false, usage
		}
		if err := srv.AllowlistAdd(who); err != nil {
			return "", false, err
		}
		return "added " + who + " to the allowlist", false, nil
	case "remove":
		who, ok := onlyName(args[1:])
		if !ok {
			return "", false, usage
		}
		removed, err := srv.AllowlistRemove(who)
		if err != nil {
			return "", false, err
		}
		if !removed {
			return "", false, fmt.Errorf("%s is not on the allowlist", who)
		}
		return "removed " + who + " from the allowlist", false, nil
	}
	return "", false, usage
}

// field is one word of a console line, or one quoted string.
type field struct {
	text   string
	quoted bool
}

// splitLine splits a console line into words at spaces and tabs. A word
// in double or single quotes may hold spaces (gamertags do); the quotes
// are not part of it. A quote left open is an error, not a guess at where
// the name ends.
func splitLine(line string) ([]field, error) {
	var f []field
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			break
		}
		if q := line[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(line[1:], q)
			if end < 0 {
				return nil, fmt.Errorf("no closing %c in %s", q, line)
			}
			f = append(f, field{text: line[1 : 1+end], quoted: true})
			line = line[2+end:]
			continue
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		f = append(f, field{text: line[:end]})
		line = line[end:]
	}
	if len(f) == 0 {
		return nil, errors.New("empty command")
	}
	return f, nil
}

// joinTexts joins the words of f with single spaces: a reason.
func joinTexts(f []field) string {
	s := make([]string, len(f))
	for i, w := range f {
		s[i] = w.text
	}
	return strings.Join(s, " ")
}

// onlyName returns the one name a command takes as its last argument: a
// quoted one, or the unquoted words left, joined by single spaces (no
// other argument follows, so they can only be one name).
func onlyName(args []field) (string, bool) {
	if len(args) == 0 || len(args) > 1 && slices.ContainsFunc(args, func(w field) bool { return w.quoted }) {
		return "", false
	}
	name := joinTexts(args)
	return name, name != ""
}

// unquotedName refuses a kick or ban whose unquoted first words are the
// name of a player online with spaces in it ("kick Major Nelson" with
// "Major Nelson" online): the command would otherwise act on "Major" with
// the reason "Nelson". The operator quotes the name, or the first word
// alone, to say which they meant.
func unquotedName(srv Server, cmd string, args []field) error {
	if args[0].quoted || len(args) < 2 {
		return nil
	}
	for _, id := range srv.Players() {
		n := id.DisplayName
		if !strings.Contains(n, " ") {
			continue
		}
		for k := 2; k <= len(args); k++ {
			if slices.ContainsFunc(args[:k], func(w field) bool { return w.quoted }) {
				break
			}
			if strings.EqualFold(joinTexts(args[:k]), n) {
				return fmt.Errorf("%q is online: quote a name with spaces, as in %s \"%s\" (or %s \"%s\" for the other)",
					n, cmd, n, cmd, args[0].text)
			}
		}
	}
	return nil
}

// banTarget returns the ban of target: an IP or CIDR prefix, an XUID if
// it is a decimal number, a name otherwise.
func banTarget(target string) access.Ban {
	if (access.Ban{IP: target}).Validate() == nil {
		return access.Ban{IP: target}
	}
	if access.IsXUID(target) {
		return access.Ban{XUID: target}
	}
	return access.Ban{Name: target}
}

// maxBanLength is the longest ban length the console takes; longer is
// forever.
const maxBanLength = 100 * 365 * 24 * time.Hour

// banUnits are the units a ban length may be given in besides Go's own
// ("1h30m"): a number and one of these, such as "7d", "7days" or "2w".
var banUnits = map[string]time.Duration{
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// parseBanLength parses a ban's length: "forever" (0), a Go duration
// ("30m", "1h30m") or a whole number of minutes, hours, days or weeks
// ("12h", "7d", "7days", "2w"), positive and at most maxBanLength.
// Anything else is an error: a word meant as the reason is not taken for a
// permanent ban.
func parseBanLength(s string) (time.Duration, error) {
	if strings.EqualFold(s, "forever") {
		return 0, nil
	}
	bad := fmt.Errorf("%q is not a ban length: give one such as 30m, 12h, 7d or 2w, or forever, before the reason", s)
	digits := strings.TrimLeft(s, "0123456789")
	if unit, ok := banUnits[strings.ToLower(digits)]; ok && len(digits) < len(s) {
		n, err := strconv.Atoi(s[:len(s)-len(digits)])
		if err != nil || n <= 0 || time.Duration(n) > maxBanLength/unit {
			return 0, bad
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxBanLength {
		return 0, bad
	}
	return d, nil
}
