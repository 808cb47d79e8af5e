package server

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

	"github.com/basaltmc/basalt/session"
)

// DefaultKickMessage is what a kicked player sees when the operator gave
// no reason.
const DefaultKickMessage = "Kicked by an operator."

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

// Kick disconnects the players online whose name (in any case) or XUID is
// player, with reason (DefaultKickMessage if empty), and reports how many.
// It returns an error if none is online.
func (srv *Server) Kick(player, reason string) (int, error) {
	if reason == "" {
		reason = DefaultKickMessage
	}
	n := 0
	for _, s := range srv.Sessions() {
		id, ok := s.Identity()
		if !ok || !(strings.EqualFold(id.DisplayName, player) || (id.XUID != "" && id.XUID == player)) {
			continue
		}
		if s.DisconnectWith(session.DisconnectReasonKicked, reason) == nil {
			n++
			srv.log.Info().Str("player", id.DisplayName).Str("xuid", id.XUID).Str("reason", reason).Msg("kicked")
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no player %q online", player)
	}
	return n, nil
}

// Players returns the identities of the players online (sessions holding
// a slot), sorted by name.
func (srv *Server) Players() []session.Identity {
	srv.mu.Lock()
	var ids []session.Identity
	for s, e := range srv.sessions {
		if id, ok := s.Identity(); ok && e.player {
			ids = append(ids, id)
		}
	}
	srv.mu.Unlock()
	slices.SortFunc(ids, func(a, b session.Identity) int {
		return strings.Compare(strings.ToLower(a.DisplayName), strings.ToLower(b.DisplayName))
	})
	return ids
}

// ConsoleInput reports whether f is worth reading commands from: a
// terminal, a pipe or a file, but not /dev/null (a service's usual stdin)
// nor a closed descriptor.
func ConsoleInput(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}

// RunConsole runs the operator commands it reads from r, one a line (see
// consoleHelp; help lists them), until r ends or stop is. Each answer goes
// to the server's log, so it lands wherever the log does. stop is what
// the stop command calls: main passes the cancel of the context Run
// waits on, so that stop shuts down as Ctrl-C does. It returns nil at the
// end of r, and the error that ended reading otherwise.
func (srv *Server) RunConsole(r io.Reader, stop func()) error {
	log := srv.conf.Log.With().Str("src", "console").Logger()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxConsoleLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		reply, quit, err := srv.execCommand(line)
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
func (srv *Server) execCommand(line string) (reply string, stop bool, err error) {
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
		reply = fmt.Sprintf("%d of %d players online", len(ids), srv.playerLimit())
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
		return srv.allowlistCommand(args)
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
func (srv *Server) allowlistCommand(args []string) (string, bool, error) {
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
func banTarget(target string) Ban {
	if (Ban{IP: target}).validate() == nil {
		return Ban{IP: target}
	}
	if isXUID(target) {
		return Ban{XUID: target}
	}
	return Ban{Name: target}
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
