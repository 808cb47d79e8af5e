package server

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
)

func TestStatsCount(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("decode batch: %w (4194304 bytes)", err) }
	tests := []struct {
		name     string
		err      error
		loggedIn bool
		want     Stats
	}{
		{"closed on purpose", nil, false, Stats{}},
		{"peer went away", fmt.Errorf("read batch: %w", net.ErrClosed), true, Stats{}},
		{"handler panic", fmt.Errorf("handle packet 0x1: %w: boom", session.ErrHandlerPanic), true, Stats{}},
		{"too large before login", wrap(session.ErrTooLarge), false, Stats{PreLoginTooLarge: 1}},
		{"too large after login", wrap(session.ErrTooLarge), true, Stats{TooLarge: 1}},
		{"budget", wrap(session.ErrDecompressionBudget), false, Stats{DecompressionBudget: 1}},
		{"login timeout", fmt.Errorf("%w after 10s", session.ErrLoginTimeout), false, Stats{LoginTimeouts: 1}},
		{"bad checksum", wrap(session.ErrChecksum), true, Stats{BadChecksums: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := Config{}.New()
			srv.stats.count(tc.err, tc.loggedIn)
			if got := srv.Stats(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestStatsLoginTimeout checks a client that connects and never logs in is
// disconnected at the deadline, and counted.
func TestStatsLoginTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := startServer(t, Config{NewHandler: newHold, LoginTimeout: timeout})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	start := time.Now()
	c.negotiate() // the session is up; its deadline runs
	p := c.expect(session.IDDisconnect)
	if waited := time.Since(start); waited < timeout {
		t.Errorf("disconnected after %v, want at least %v", waited, timeout)
	}
	if reason, msg := disconnectMsg(t, p.payload); reason != session.DisconnectReasonTimeout || msg != "Login timed out." {
		t.Errorf("got Disconnect %v %q, want %v %q", reason, msg, session.DisconnectReasonTimeout, "Login timed out.")
	}
	c.expectClosed()
	waitFor(t, "a login timeout counted", func() bool { return srv.Stats() == Stats{LoginTimeouts: 1} })
}

// TestStatsPreLoginBomb checks issue 9's attack over RakNet: right after
// RequestNetworkSettings, 16 KiB of DEFLATE inflating to 16 MiB. The
// client is told why and disconnected, and the refusal is counted.
func TestStatsPreLoginBomb(t *testing.T) {
	// The bomb is built before the client connects: compressing 16 MiB
	// under -race on a busy machine can take longer than the login
	// timeout, which would end the session for another reason.
	var buf bytes.Buffer
	buf.Write([]byte{0xfe, 0x00})
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 16<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	srv := startServer(t, Config{})
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.send(session.IDRequestNetworkSettings, binary.BigEndian.AppendUint32(nil, uint32(session.CurrentProtocol)))
	c.expect(session.IDNetworkSettings)
	if _, err := c.conn.Write(buf.Bytes()); err != nil {
		t.Fatalf("write bomb: %v", err)
	}
	p := c.expect(session.IDDisconnect)
	if reason, _ := disconnectMsg(t, p.payload); reason != session.DisconnectReasonBadPacket {
		t.Errorf("got reason %v, want %v", reason, session.DisconnectReasonBadPacket)
	}
	c.expectClosed()
	waitFor(t, "a pre-login refusal counted", func() bool { return srv.Stats() == Stats{PreLoginTooLarge: 1} })
	if n := srv.PlayerCount(); n != 0 {
		t.Errorf("got %d players, want 0", n)
	}
}
