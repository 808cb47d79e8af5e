package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
)

// queryClient speaks the Query protocol as wiki.vg/Query describes it,
// independently of package query: it is the test's check on the wire
// format.
type queryClient struct {
	t    *testing.T
	pc   *net.UDPConn
	to   *net.UDPAddr
	sess [4]byte
}

func newQueryClient(t *testing.T, server string) *queryClient {
	t.Helper()
	to, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: to.IP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	// Clients keep the low 4 bits of each byte of the session id
	// (wiki.vg; the vanilla Java server ignores the others).
	return &queryClient{t: t, pc: pc, to: to, sess: [4]byte{0x01, 0x02, 0x0e, 0x0f}}
}

// exchange sends req and returns the reply, or nil if none arrives within
// wait.
func (c *queryClient) exchange(req []byte, wait time.Duration) []byte {
	c.t.Helper()
	if _, err := c.pc.WriteToUDP(req, c.to); err != nil {
		c.t.Fatal(err)
	}
	_ = c.pc.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 65535)
	n, _, err := c.pc.ReadFromUDP(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return buf[:n]
}

// handshake asks for a challenge token: "FE FD 09" and the session id; the
// reply is 09, the session id and the token as a NUL-terminated decimal.
func (c *queryClient) handshake() int32 {
	c.t.Helper()
	reply := c.exchange(append([]byte{0xfe, 0xfd, 0x09}, c.sess[:]...), testTimeout)
	rest := c.header(reply, 0x09)
	s, ok := strings.CutSuffix(string(rest), "\x00")
	if !ok {
		c.t.Fatalf("handshake reply % x lacks its NUL", reply)
	}
	tok, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		c.t.Fatalf("token %q: %v", s, err)
	}
	return int32(tok)
}

// statRequest is "FE FD 00", the session id, the token as int32 BE, and
// for a full stat four bytes of padding.
func (c *queryClient) statRequest(token int32, full bool) []byte {
	b := append([]byte{0xfe, 0xfd, 0x00}, c.sess[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(token))
	if full {
		b = append(b, 0, 0, 0, 0)
	}
	return b
}

// header checks a reply's type and session id and returns its payload.
func (c *queryClient) header(reply []byte, typ byte) []byte {
	c.t.Helper()
	if len(reply) < 5 || reply[0] != typ || !bytes.Equal(reply[1:5], c.sess[:]) {
		c.t.Fatalf("reply % x: want type %#x and session id % x", reply, typ, c.sess)
	}
	return reply[5:]
}

// basicStat is the basic stat: motd, gametype, map, numplayers and
// maxplayers NUL-terminated, hostport as a little-endian short, hostip
// NUL-terminated.
type basicStat struct {
	motd, gameType, mapName, numPlayers, maxPlayers string
	hostPort                                        uint16
	hostIP                                          string
}

func (c *queryClient) basic(token int32) basicStat {
	c.t.Helper()
	p := c.header(c.exchange(c.statRequest(token, false), testTimeout), 0x00)
	f := bytes.SplitN(p, []byte{0}, 6)
	if len(f) != 6 || len(f[5]) < 3 || p[len(p)-1] != 0 {
		c.t.Fatalf("basic stat %q: malformed", p)
	}
	return basicStat{
		motd: string(f[0]), gameType: string(f[1]), mapName: string(f[2]),
		numPlayers: string(f[3]), maxPlayers: string(f[4]),
		hostPort: binary.LittleEndian.Uint16(f[5]), hostIP: string(f[5][2 : len(f[5])-1]),
	}
}

// full returns the full stat's key/value pairs and players: 11 bytes of
// padding ("splitnum\0\x80\0"), pairs of NUL-terminated strings up to an
// empty key, 10 bytes of padding ("\x01player_\0\0"), the names
// NUL-terminated up to an empty one.
func (c *queryClient) full(token int32) (map[string]string, []string) {
	c.t.Helper()
	p := c.header(c.exchange(c.statRequest(token, true), testTimeout), 0x00)
	const pad1, pad2 = "splitnum\x00\x80\x00", "\x01player_\x00\x00"
	rest, ok := bytes.CutPrefix(p, []byte(pad1))
	if !ok {
		c.t.Fatalf("full stat %q lacks %q", p, pad1)
	}
	kv := map[string]string{}
	var order []string
	next := func() string {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			c.t.Fatalf("full stat %q: unterminated string", p)
		}
		s := string(rest[:i])
		rest = rest[i+1:]
		return s
	}
	for {
		k := next()
		if k == "" {
			break
		}
		kv[k] = next()
		order = append(order, k)
	}
	if want := []string{"hostname", "gametype", "game_id", "version", "server_engine", "plugins", "map",
		"numplayers", "maxplayers", "whitelist", "hostip", "hostport"}; !reflect.DeepEqual(order, want) {
		c.t.Errorf("keys: got %v, want %v (PocketMine's order)", order, want)
	}
	rest, ok = bytes.CutPrefix(rest, []byte(pad2))
	if !ok {
		c.t.Fatalf("full stat %q lacks %q", p, pad2)
	}
	var players []string
	for {
		n := next()
		if n == "" {
			break
		}
		players = append(players, n)
	}
	if len(rest) != 0 {
		c.t.Errorf("full stat: %q after the player list", rest)
	}
	return kv, players
}

// A client written from the protocol's description queries a running
// server over loopback and reads its name, version, map, players and
// address.
func TestQuery(t *testing.T) {
	srv := startServer(t, Config{
		NewHandler: newHold,
		Network: NetworkConfig{
			Query: true,
		},
		Status: StatusConfig{
			Name:       "Query test",
			LevelName:  "World",
			GameMode:   "Creative",
			MaxPlayers: 5,
		},
	})
	addr := gameAddr(t, srv)
	for _, name := range []string{"Steve", "Alex"} {
		c := dial(t, addr, raknet.Dialer{})
		c.login(name)
		c.sync()
	}
	// A session that has not logged in is no player.
	dial(t, addr, raknet.Dialer{}).negotiate()

	q := newQueryClient(t, addr)
	token := q.handshake()
	port := port(srv.Addrs()[0])
	want := basicStat{motd: "Query test", gameType: "CMP", mapName: "World", numPlayers: "2", maxPlayers: "5",
		hostPort: port, hostIP: "127.0.0.1"}
	if got := q.basic(token); got != want {
		t.Errorf("basic stat: got %+v, want %+v", got, want)
	}
	kv, players := q.full(token)
	wantKV := map[string]string{
		"hostname": "Query test", "gametype": "CMP", "game_id": "MINECRAFTPE", "version": session.CurrentVersion,
		"server_engine": "Basalt", "plugins": "Basalt", "map": "World", "numplayers": "2", "maxplayers": "5",
		"whitelist": "off", "hostip": "127.0.0.1", "hostport": strconv.Itoa(int(port)),
	}
	if !reflect.DeepEqual(kv, wantKV) {
		t.Errorf("full stat: got %v, want %v", kv, wantKV)
	}
	if want := []string{"Alex", "Steve"}; !reflect.DeepEqual(players, want) {
		t.Errorf("players: got %v, want %v", players, want)
	}
	if st := srv.ls.v4.Stats(); st.QueryAnswered != 3 {
		t.Errorf("got %d queries answered, want 3", st.QueryAnswered)
	}

	// The token belongs to the client's address: from another socket it
	// gets nothing.
	other := newQueryClient(t, addr)
	if b := other.exchange(other.statRequest(token, true), 200*time.Millisecond); b != nil {
		t.Errorf("token from another address answered with %q", b)
	}
	waitFor(t, "the refusal counted", func() bool { return srv.ls.v4.Stats().Dropped > 0 })
}

// With Query off, fe fd datagrams go unanswered.
func TestQueryOff(t *testing.T) {
	srv := startServer(t, Config{})
	q := newQueryClient(t, gameAddr(t, srv))
	if b := q.exchange(append([]byte{0xfe, 0xfd, 0x09}, q.sess[:]...), 200*time.Millisecond); b != nil {
		t.Errorf("got %q, want no reply", b)
	}
	if st := srv.ls.v4.Stats(); st.QueryAnswered != 0 {
		t.Errorf("got %d queries answered, want 0", st.QueryAnswered)
	}
}

// Each family's listener reports its own port and host.
func TestQueryIPv6(t *testing.T) {
	probe, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	_ = probe.Close()
	srv := startServer(t, Config{Network: NetworkConfig{Query: true, AddressV4: "127.0.0.1:0", AddressV6: "[::1]:0"}})
	for i, host := range []string{"127.0.0.1", "::1"} {
		a := srv.Addrs()[i]
		q := newQueryClient(t, a.String())
		if got := q.basic(q.handshake()); got.hostIP != host || got.hostPort != port(a) {
			t.Errorf("%s: got host %s port %d, want %s %d", a, got.hostIP, got.hostPort, host, port(a))
		}
	}
}

// Servers given the same cookie secret accept each other's query tokens,
// as they do RakNet cookies: a load balancer may send a client's stat
// request to another instance than its handshake.
func TestQuerySharedSecret(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	a := startServer(t, Config{Network: NetworkConfig{Query: true, CookieSecret: secret}})
	b := startServer(t, Config{Network: NetworkConfig{Query: true, CookieSecret: secret}})
	c := startServer(t, Config{Network: NetworkConfig{Query: true}})
	q := newQueryClient(t, gameAddr(t, a))
	token := q.handshake()
	q.to = net.UDPAddrFromAddrPort(addrPort(b.Addrs()[0]))
	if got := q.basic(token); got.hostPort != port(b.Addrs()[0]) {
		t.Errorf("second server: got port %d, want its own %d", got.hostPort, port(b.Addrs()[0]))
	}
	q.to = net.UDPAddrFromAddrPort(addrPort(c.Addrs()[0]))
	if r := q.exchange(q.statRequest(token, false), 200*time.Millisecond); r != nil {
		t.Errorf("server with another secret answered %q", r)
	}
}

func TestLoadOrCreateCookieSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cookie_secret")
	secret, err := LoadOrCreateCookieSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != 32 {
		t.Errorf("new secret: got %d bytes, want 32", len(secret))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode: got %v, want 0600", perm)
	}
	again, err := LoadOrCreateCookieSecret(path)
	if err != nil || !bytes.Equal(again, secret) {
		t.Errorf("reread: got %x, %v, want %x", again, err, secret)
	}
	other, err := LoadOrCreateCookieSecret(filepath.Join(t.TempDir(), "cookie_secret"))
	if err != nil || bytes.Equal(other, secret) {
		t.Errorf("second file: got %x, %v, want another secret", other, err)
	}
}

func TestLoadOrCreateCookieSecretErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"not hex":   "not a secret at all\n",
		"too short": "00112233445566778899aabbccddee\n", // 15 bytes
		"empty":     "",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateCookieSecret(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, path)
		}
	}
	// A hand-written secret of exactly 16 bytes is accepted.
	path := filepath.Join(dir, "ok")
	if err := os.WriteFile(path, []byte(" 00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadOrCreateCookieSecret(path); err != nil || len(s) != 16 {
		t.Errorf("16 bytes: got %x, %v", s, err)
	}
	if _, err := LoadOrCreateCookieSecret(filepath.Join(dir, "missing", "secret")); err == nil {
		t.Error("uncreatable path: got nil error")
	}
}

func ExampleLoadOrCreateCookieSecret() {
	dir, _ := os.MkdirTemp("", "basalt")
	defer os.RemoveAll(dir)
	secret, err := LoadOrCreateCookieSecret(filepath.Join(dir, "cookie_secret"))
	fmt.Println(len(secret), err)
	// Output: 32 <nil>
}

// A stat reply never waits for the server's lock (Listen holds it while it
// closes listeners, and so waits for their readers): while it is held, the
// reply lists the names read last time.
func TestQueryStatusNeverWaits(t *testing.T) {
	srv := Config{Network: NetworkConfig{Query: true}, Status: StatusConfig{Name: "N"}}.New()
	qs := &queryStatus{srv: srv, host: "0.0.0.0"}
	if st := qs.status(); st.HostName != "N" || len(st.Players) != 0 {
		t.Fatalf("got %+v", st)
	}
	qs.names.Store(&[]string{"Steve"})
	srv.mu.Lock()
	done := make(chan []string, 1)
	go func() { done <- qs.status().Players }()
	select {
	case got := <-done:
		if !reflect.DeepEqual(got, []string{"Steve"}) {
			t.Errorf("got %v, want the last names [Steve]", got)
		}
	case <-time.After(testTimeout):
		t.Error("status waited for the server's lock")
	}
	srv.mu.Unlock()
	if got := qs.status().Players; len(got) != 0 {
		t.Errorf("lock free again: got %v, want the current (empty) list", got)
	}
}
