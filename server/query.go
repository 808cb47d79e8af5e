package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/internal/file"
	"github.com/basaltmc/basalt/server/query"
)

// queryEngine is the server_engine the Query protocol reports.
const queryEngine = "Basalt"

// cookieSecretSize is the random bytes a new cookie secret file holds.
const cookieSecretSize = 32

// withQuery returns lc answering the Query protocol for the game listener
// of one family, when Config.Network.Query is set: its stat replies report the
// live status, the names of the players online, and the listener's host
// and port. The tokens are keyed from Config.Network.CookieSecret, so servers that
// share it accept each other's tokens as they do cookies.
func (srv *Server) withQuery(lc raknet.ListenConfig, v6 bool) raknet.ListenConfig {
	if !srv.conf.Network.Query {
		return lc
	}
	addr, wildcard := srv.conf.Network.AddressV4, "0.0.0.0"
	if v6 {
		addr, wildcard = srv.conf.Network.AddressV6, "::"
	}
	qs := &queryStatus{srv: srv, v6: v6}
	qs.host, _, _ = net.SplitHostPort(withHost(addr, wildcard))
	r := &query.Responder{Tokens: query.NewTokens(srv.conf.Network.CookieSecret, 0), Status: qs.status}
	lc.Query = r.Answer
	return lc
}

// queryStatus makes the stat replies of one game listener.
type queryStatus struct {
	srv  *Server
	host string // the listener's host, as configured
	v6   bool
	// names is the last player list read. The read goroutine never waits
	// for the server's lock, which Listen holds while it closes
	// listeners (and so waits for their readers): when the lock is busy
	// the reply lists the names read last time.
	names atomic.Pointer[[]string]
}

// status returns what a stat reply says now.
func (q *queryStatus) status() query.Status {
	st := q.srv.Status()
	port := st.PortV4
	if q.v6 {
		port = st.PortV6
	}
	// PocketMine's QueryInfo: "SMP" for survival and adventure, "CMP"
	// otherwise.
	gameType := "SMP"
	if st.GameMode == "Creative" || st.GameMode == "Spectator" {
		gameType = "CMP"
	}
	names, ok := q.srv.playerNames()
	if ok {
		q.names.Store(&names)
	} else if last := q.names.Load(); last != nil {
		names = *last
	}
	return query.Status{
		HostName:   st.ServerName,
		GameType:   gameType,
		Version:    st.Version,
		Engine:     queryEngine,
		Map:        st.LevelName,
		NumPlayers: st.Players,
		MaxPlayers: st.MaxPlayers,
		HostIP:     q.host,
		HostPort:   port,
		Players:    names,
		Whitelist:  q.srv.AllowlistEnabled(),
	}
}

// playerNames returns the names of the players online, sorted: the
// sessions holding a player slot whose handler set an identity. It
// reports false, without waiting, if the server's lock is held.
func (srv *Server) playerNames() ([]string, bool) {
	if !srv.mu.TryLock() {
		return nil, false
	}
	names := make([]string, 0, srv.players)
	for s, e := range srv.sessions {
		if !e.player {
			continue
		}
		if id, ok := s.Identity(); ok && id.DisplayName != "" {
			names = append(names, id.DisplayName)
		}
	}
	srv.mu.Unlock()
	slices.Sort(names)
	return names, true
}

// LoadOrCreateCookieSecret returns the secret kept in the file at path, in
// hexadecimal, at least raknet.MinCookieSecret bytes. If the file does not
// exist it first writes a new random secret of 32 bytes (from crypto/rand)
// there, readable by its owner only (mode 0600). A file that cannot be
// read, or does not hold such a secret, is an error naming path.
func LoadOrCreateCookieSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret := make([]byte, cookieSecretSize)
		_, _ = rand.Read(secret)
		werr := file.CreateNew(path, []byte(hex.EncodeToString(secret)+"\n"), 0o600) // readable by its owner only
		if werr == nil {
			return secret, nil
		}
		if !errors.Is(werr, fs.ErrExist) {
			return nil, fmt.Errorf("create cookie secret file: %w", werr)
		}
		// Someone else created it meanwhile: use theirs.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("load cookie secret: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(secret) < raknet.MinCookieSecret {
		return nil, fmt.Errorf("load cookie secret: %s does not hold at least %d bytes in hexadecimal; delete the file to make a new secret", path, raknet.MinCookieSecret)
	}
	return secret, nil
}
