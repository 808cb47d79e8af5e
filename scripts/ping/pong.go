package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/basaltmc/basalt/motd"
)

// RakNet offline message ids and the magic every offline message carries
// (raknet/internal/wire is not importable from here).
const (
	idUnconnectedPing = 0x01
	idUnconnectedPong = 0x1c
)

var magic = [16]byte{0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78}

// appendPing appends an UnconnectedPing (33 bytes):
//
//	id        u8   0x01
//	time      i64  BE, echoed in the pong
//	magic     16 bytes
//	client    i64  BE GUID
func appendPing(b []byte, sent time.Duration, guid int64) []byte {
	b = append(b, idUnconnectedPing)
	b = binary.BigEndian.AppendUint64(b, uint64(sent.Milliseconds()))
	b = append(b, magic[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(guid))
}

// pong is a decoded UnconnectedPong.
type pong struct {
	time int64 // the ping's time, echoed
	guid int64 // the server GUID from the header
	data []byte
}

// decodePong decodes an UnconnectedPong (35 bytes + MOTD):
//
//	id        u8   0x1c
//	time      i64  BE, the ping's
//	server    i64  BE GUID
//	magic     16 bytes
//	length    u16  BE
//	data      length bytes: the MOTD
func decodePong(b []byte) (pong, error) {
	const header = 1 + 8 + 8 + 16 + 2
	if len(b) < header {
		return pong{}, fmt.Errorf("decode UNCONNECTED_PONG: %w", io.ErrUnexpectedEOF)
	}
	if b[0] != idUnconnectedPong {
		return pong{}, fmt.Errorf("decode UNCONNECTED_PONG: id %#x", b[0])
	}
	if [16]byte(b[17:33]) != magic {
		return pong{}, errors.New("decode UNCONNECTED_PONG: bad magic")
	}
	n := int(binary.BigEndian.Uint16(b[33:]))
	if len(b)-header < n {
		return pong{}, fmt.Errorf("decode UNCONNECTED_PONG: data: %w", io.ErrUnexpectedEOF)
	}
	return pong{
		time: int64(binary.BigEndian.Uint64(b[1:])),
		guid: int64(binary.BigEndian.Uint64(b[9:])),
		data: b[header : header+n],
	}, nil
}

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
func newAnswer(from string, p pong, latency time.Duration) answer {
	a := answer{from: from, latency: latency, guid: p.guid, raw: string(p.data)}
	a.status, a.err = motd.Parse(p.data)
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
