package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// queryResend is how often an unanswered query request is sent again.
const queryResend = 500 * time.Millisecond

// queryStat is a full stat: the key/value pairs in the order sent, and the
// player names.
type queryStat struct {
	from    string
	keys    []string
	values  map[string]string
	players []string
}

// queryOne asks the server at addr for its full stat with the Query
// protocol (wiki.vg/Query): a handshake for a challenge token, then a full
// stat request echoing it. The socket is connected to addr, so it sends
// to nothing else and reads nothing from anyone else.
func queryOne(ctx context.Context, addr string) (queryStat, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return queryStat{}, err
	}
	defer c.Close()
	// The session id keeps the low 4 bits of each byte only, which every
	// server echoes unchanged.
	sess := []byte{0x0b, 0x0a, 0x05, 0x07}
	reply, err := exchange(ctx, c, append([]byte{0xfe, 0xfd, 0x09}, sess...), 0x09, sess)
	if err != nil {
		return queryStat{}, fmt.Errorf("no handshake reply from %s: %w", addr, err)
	}
	tok, err := strconv.ParseInt(strings.TrimSuffix(string(reply), "\x00"), 10, 32)
	if err != nil {
		return queryStat{}, fmt.Errorf("handshake reply from %s: token %q: %w", addr, reply, err)
	}
	req := append([]byte{0xfe, 0xfd, 0x00}, sess...)
	req = binary.BigEndian.AppendUint32(req, uint32(int32(tok)))
	req = append(req, 0, 0, 0, 0)
	reply, err = exchange(ctx, c, req, 0x00, sess)
	if err != nil {
		return queryStat{}, fmt.Errorf("no full stat from %s: %w", addr, err)
	}
	st, err := parseFullStat(reply)
	st.from = c.RemoteAddr().String()
	return st, err
}

// exchange sends req every queryResend until a reply of type typ for
// session sess arrives, and returns the reply's payload.
func exchange(ctx context.Context, c net.Conn, req []byte, typ byte, sess []byte) ([]byte, error) {
	buf := make([]byte, 65535)
	for {
		if _, err := c.Write(req); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(queryResend)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		_ = c.SetReadDeadline(deadline)
		for {
			n, err := c.Read(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return nil, err
			}
			if n >= 5 && buf[0] == typ && bytes.Equal(buf[1:5], sess) {
				return bytes.Clone(buf[5:n]), nil
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// parseFullStat reads a full stat payload: "splitnum\0\x80\0", key/value
// pairs up to an empty key, "\x01player_\0\0", names up to an empty one.
func parseFullStat(p []byte) (queryStat, error) {
	st := queryStat{values: map[string]string{}}
	rest, ok := bytes.CutPrefix(p, []byte("splitnum\x00\x80\x00"))
	if !ok {
		return st, fmt.Errorf("full stat %q: no splitnum padding", p)
	}
	next := func() (string, bool) {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return "", false
		}
		s := string(rest[:i])
		rest = rest[i+1:]
		return s, true
	}
	for {
		k, ok := next()
		if !ok {
			return st, fmt.Errorf("full stat %q: truncated", p)
		}
		if k == "" {
			break
		}
		v, ok := next()
		if !ok {
			return st, fmt.Errorf("full stat %q: truncated", p)
		}
		st.keys = append(st.keys, k)
		st.values[k] = v
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("\x01player_\x00\x00")); !ok {
		return st, fmt.Errorf("full stat %q: no player_ padding", p)
	}
	for {
		n, ok := next()
		if !ok {
			return st, fmt.Errorf("full stat %q: truncated player list", p)
		}
		if n == "" {
			return st, nil
		}
		st.players = append(st.players, n)
	}
}

// print writes the address, every key/value pair and the players.
func (st queryStat) print(w io.Writer) {
	fmt.Fprintf(w, "%-14s %s\n", "address", st.from)
	for _, k := range st.keys {
		fmt.Fprintf(w, "%-14s %s\n", k, st.values[k])
	}
	fmt.Fprintf(w, "%-14s %s\n", "players", strings.Join(st.players, ", "))
}
