package console

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
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
const consoleHelp = `commands:
  help                                  this list
  list                                  the players online
  kick <player> [reason]                disconnect a player (name or XUID)
  ban <player|xuid|ip|cidr> [for] [reason]
                                        ban, for a time such as 30m, 12h or 7d
                                        if given, and disconnect who it names
  unban <player|xuid|ip|cidr>           lift the bans naming it
  allowlist on|off                      enforce the allowlist or stop
  allowlist add|remove <player|xuid>    change the allowlist
  allowlist list                        show the allowlist
  reload                                reread the allowlist and ban files
  stop                                  shut down, as Ctrl-C does`

// Server is what the console's commands act on; *server.Server is one.
// Its methods are called from the goroutine running Run.
type Server interface {
	// Players returns the identities of the players online, sorted by
	// name.
	Players() []session.Identity
	// PlayerLimit returns the number of players the server admits now.
	PlayerLimit() int
	// Kick disconnects the players online whose name or XUID is player,
	// and reports how many.
	Kick(player, reason string) (int, error)
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
	f := strings.Fields(line)
	cmd, args := strings.ToLower(f[0]), f[1:]
	rest := func(i int) string {
		if i >= len(args) {
			return ""
		}
		return strings.Join(args[i:], " ")
	}
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
			return "", false, errors.New("usage: kick <player> [reason]")
		}
		n, err := srv.Kick(args[0], rest(1))
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("kicked %d player(s) named %s", n, args[0]), false, nil
	case "ban":
		if len(args) == 0 {
			return "", false, errors.New("usage: ban <player|xuid|ip|cidr> [for] [reason]")
		}
		b := banTarget(args[0])
		i := 1
		if len(args) > 1 {
			if d, ok := parseBanDuration(args[1]); ok {
				b.Expires = time.Now().Add(d).UTC().Truncate(time.Second)
				i = 2
			}
		}
		b.Reason = rest(i)
		if err := srv.Ban(b); err != nil {
			return "", false, err
		}
		until := "for good"
		if !b.Expires.IsZero() {
			until = "until " + b.Expires.Format(time.RFC3339)
		}
		return fmt.Sprintf("banned %s %s", args[0], until), false, nil
	case "unban", "pardon":
		if len(args) != 1 {
			return "", false, errors.New("usage: unban <player|xuid|ip|cidr>")
		}
		n, err := srv.Unban(args[0])
		if err != nil {
			return "", false, err
		}
		if n == 0 {
			return "", false, fmt.Errorf("no ban names %s", args[0])
		}
		return fmt.Sprintf("lifted %d ban(s) of %s", n, args[0]), false, nil
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
func allowlistCommand(srv Server, args []string) (string, bool, error) {
	usage := errors.New("usage: allowlist on|off|list|add <player|xuid>|remove <player|xuid>")
	if len(args) == 0 {
		return "", false, usage
	}
	switch strings.ToLower(args[0]) {
	case "on", "off":
		srv.SetAllowlist(strings.EqualFold(args[0], "on"))
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
		if len(args) != 2 {
			return "", false, usage
		}
		if err := srv.AllowlistAdd(args[1]); err != nil {
			return "", false, err
		}
		return "added " + args[1] + " to the allowlist", false, nil
	case "remove":
		if len(args) != 2 {
			return "", false, usage
		}
		removed, err := srv.AllowlistRemove(args[1])
		if err != nil {
			return "", false, err
		}
		if !removed {
			return "", false, fmt.Errorf("%s is not on the allowlist", args[1])
		}
		return "removed " + args[1] + " from the allowlist", false, nil
	}
	return "", false, usage
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

// parseBanDuration parses a ban's length: a Go duration ("30m", "12h") or
// a number of days ("7d"), positive.
func parseBanDuration(s string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}
