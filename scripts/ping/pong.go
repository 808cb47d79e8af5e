package main

import (
	"fmt"
	"io"
	"time"

	"github.com/basaltmc/basalt/motd"
	"github.com/basaltmc/basalt/raknet"
)

// answer is what one server said.
type answer struct {
	from    string
	latency time.Duration
	guid    int64 // from the pong header
	raw     string
	status  motd.Status
	err     error // the MOTD did not parse
}

// newAnswer parses a pong's MOTD.
func newAnswer(p raknet.Pong) answer {
	a := answer{from: p.Addr.String(), latency: p.RTT, guid: p.GUID, raw: string(p.Data)}
	a.status, a.err = motd.Parse(p.Data)
	return a
}

// print writes every field of the answer, one per line.
func (a answer) print(w io.Writer) {
	st := a.status
	line := func(k, format string, args ...any) {
		fmt.Fprintf(w, "%-10s %s\n", k, fmt.Sprintf(format, args...))
	}
	line("address", "%s", a.from)
	line("latency", "%v", a.latency.Round(10*time.Microsecond))
	if a.err != nil {
		line("motd", "%q", a.raw)
		line("error", "%v", a.err)
		return
	}
	line("edition", "%s", st.Edition)
	line("name", "%s", st.ServerName)
	line("level", "%s", st.LevelName)
	line("protocol", "%d", st.Protocol)
	line("version", "%s", st.Version)
	line("players", "%d/%d", st.Players, st.MaxPlayers)
	line("game mode", "%s (%d)", st.GameMode, st.GameModeNumeric)
	guid := fmt.Sprint(st.ServerGUID)
	if st.ServerGUID != uint64(a.guid) {
		guid += fmt.Sprintf(" (pong header says %d)", a.guid)
	}
	line("guid", "%s", guid)
	line("ports", "%d (IPv4), %d (IPv6)", st.PortV4, st.PortV6)
	if len(st.Extra) > 0 {
		line("extra", "%q", st.Extra)
	}
	line("motd", "%s", a.raw)
}

// summary returns the answer as one line of a scan listing.
func (a answer) summary() string {
	if a.err != nil {
		return fmt.Sprintf("%-24s %8v  unreadable MOTD %q: %v", a.from, a.latency.Round(10*time.Microsecond), a.raw, a.err)
	}
	st := a.status
	return fmt.Sprintf("%-24s %8v  %s %q (%s) %d/%d players, %s protocol %d, ports %d/%d, guid %d",
		a.from, a.latency.Round(10*time.Microsecond), st.Edition, st.ServerName, st.LevelName,
		st.Players, st.MaxPlayers, st.Version, st.Protocol, st.PortV4, st.PortV6, st.ServerGUID)
}
