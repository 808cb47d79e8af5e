package nethernet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStatusJSON(t *testing.T) {
	defer checkGoroutines(t)()
	players := 3
	l := listenTest(t, Config{Status: func() Status {
		return Status{Name: "Basalt", Protocol: 2193, Version: "1.26.50", Level: "L", Players: players, MaxPlayers: 20, GameType: "Survival"}
	}})
	get := func() map[string]any {
		resp, err := httpClient().Get("http://" + l.Addr().String() + "/v1/join")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := get()
	want := map[string]any{"name": "Basalt", "protocol": 2193.0, "version": "1.26.50", "level": "L",
		"players": 3.0, "maxPlayers": 20.0, "gameType": "Survival"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	players = 4 // the status is read per request
	if m := get(); m["players"] != 4.0 {
		t.Errorf("players = %v after a join, want 4", m["players"])
	}
	resp, err := httpClient().Get("http://" + l.Addr().String() + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %d, want 404", resp.StatusCode)
	}
	_ = l.Close()
}

func TestDialAnonymous(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true})
	cc, err := dial(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := accept(t, l)
	tr := sc.Transport()
	if tr.Name != "nethernet" || !tr.Framed || !tr.Secure || tr.PublicKey != nil {
		t.Errorf("Transport() = %+v, want nethernet, framed, secure, no key", tr)
	}
	if !strings.HasPrefix(sc.RemoteAddr().String(), "127.0.0.1:") {
		t.Errorf("RemoteAddr = %v, want the client's loopback address", sc.RemoteAddr())
	}
	// A message each way, as is: no header added or expected.
	if _, err := cc.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b, err := sc.ReadPacket(); err != nil || string(b) != "hello" {
		t.Fatalf("ReadPacket = %q, %v", b, err)
	}
	big := bytes.Repeat([]byte("x"), 50_000) // fragmented by go-nethernet
	if _, err := sc.Write(big); err != nil {
		t.Fatal(err)
	}
	if b, err := cc.ReadPacket(); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("client read %d bytes, %v", len(b), err)
	}
	if st := l.Stats(); st.Offers != 1 || st.Answered != 1 || st.Accepted != 1 || st.Open != 1 {
		t.Errorf("Stats = %+v", st)
	}
	// The peer going away ends the server's read.
	_ = cc.Close()
	done := make(chan error, 1)
	go func() {
		_, err := sc.ReadPacket()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("ReadPacket after the peer closed: nil error")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ReadPacket still blocked 15 s after the peer closed")
	}
	_ = sc.Close()
	if st := l.Stats(); st.Open != 0 {
		t.Errorf("Open = %d after Close, want 0", st.Open)
	}
	_ = l.Close()
}

func TestDialWithIdentity(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{})
	id := clientIdentity(t)
	cc, err := dial(t, l, id)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc := accept(t, l)
	defer sc.Close()
	if k := sc.Transport().PublicKey; k == nil || !k.Equal(&id.PrivateKey.PublicKey) {
		t.Errorf("PublicKey = %v, want the client's", k)
	}
	_ = cc.Close()
	_ = sc.Close()
	_ = l.Close()
}

func TestAnonymousRefusedUnlessAllowed(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{})
	if c, err := dial(t, l, nil); err == nil {
		_ = c.Close()
		t.Fatal("anonymous dial succeeded")
	}
	if st := l.Stats(); st.Answered != 0 || st.Accepted != 0 {
		t.Errorf("Stats = %+v, want nothing answered", st)
	}
	_ = l.Close()
}

func TestServerIdentityIsTheConfiguredKey(t *testing.T) {
	defer checkGoroutines(t)()
	key, _, err := LoadIdentityKey(filepath.Join(t.TempDir(), "nethernet_identity"))
	if err != nil {
		t.Fatal(err)
	}
	l := listenTest(t, Config{AllowAnonymous: true, IdentityKey: key})
	body := postOffer(t, l, "1", offerSDP(t))
	// The answer's identity token carries the server key as its cpk.
	if !strings.Contains(body, "a=identity:") {
		t.Fatalf("answer without identity:\n%s", body)
	}
	cpk := identityKeyOfAnswer(t, body)
	if !cpk.Equal(&key.PublicKey) {
		t.Error("the answer's identity is not the configured key")
	}
	_ = l.Close()
}

func TestLoadIdentityKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nethernet_identity")
	k1, created, err := LoadIdentityKey(path)
	if err != nil || !created {
		t.Fatalf("first load: created %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	k2, created, err := LoadIdentityKey(path)
	if err != nil || created {
		t.Fatalf("second load: created %v, %v", created, err)
	}
	if !k1.Equal(k2) {
		t.Error("the key changed between loads")
	}
	if err := os.WriteFile(path, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadIdentityKey(path); err == nil {
		t.Error("a junk file loaded")
	}
	if b, _ := os.ReadFile(path); string(b) != "junk" {
		t.Error("a junk file was replaced")
	}
}

func TestSignallingRefusals(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true, MaxOfferSize: 1024})
	base := "http://" + l.Addr().String()
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"oversized", "/v1/join/1", "v=0\r\n" + strings.Repeat("a=x\r\n", 400), http.StatusRequestEntityTooLarge},
		{"not SDP", "/v1/join/1", "hello", http.StatusBadRequest},
		{"bad network ID", "/v1/join/abc", "v=0\r\n", http.StatusBadRequest},
		{"malformed SDP", "/v1/join/1", "v=0\r\nthis is not sdp\r\n", http.StatusBadRequest},
	} {
		resp, err := httpClient().Post(base+tc.path, "application/sdp", strings.NewReader(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	st := l.Stats()
	if st.TooLarge != 1 || st.Malformed != 3 || st.Answered != 0 {
		t.Errorf("Stats = %+v, want 1 too large, 3 malformed", st)
	}
	_ = l.Close()
}

func TestRateLimitPerIP(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{AllowAnonymous: true, OffersPerSource: 2})
	codes := map[int]int{}
	for range 5 {
		resp, err := httpClient().Post("http://"+l.Addr().String()+"/v1/join/1", "application/sdp", strings.NewReader("junk"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	// Five offers within a second from one address: two pass the rate
	// (and are refused as malformed), three do not. A slow machine may
	// straddle a window boundary and let two more through.
	if codes[http.StatusTooManyRequests] < 1 || codes[http.StatusTooManyRequests]+codes[http.StatusBadRequest] != 5 {
		t.Errorf("status codes %v", codes)
	}
	_ = l.Close()
}

func TestCloseAccept(t *testing.T) {
	defer checkGoroutines(t)()
	l := listenTest(t, Config{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	_ = l.Close()
	if err := <-done; err == nil {
		t.Fatal("Accept after Close: nil error")
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("Accept after Close: nil error")
	}
	_ = errors.New
}

// In online mode an offer's token is checked at signalling time, before
// any WebRTC state: one that fails is refused with the identity error
// code and never answered; one that passes joins.
func TestOfferTokenCheckedBeforeState(t *testing.T) {
	defer checkGoroutines(t)()
	var (
		mu      sync.Mutex
		checked []string
	)
	l := listenTest(t, Config{VerifyToken: func(_ context.Context, token string) error {
		mu.Lock()
		defer mu.Unlock()
		checked = append(checked, token)
		if len(checked) == 1 {
			return errors.New("issuer mismatch")
		}
		return nil
	}})
	id := clientIdentity(t)
	if _, err := dial(t, l, id); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a failing token: %v, want a 400 refusal", err)
	}
	st := l.Stats()
	if st.Unauthenticated != 1 || st.Answered != 0 || st.Negotiating != 0 {
		t.Errorf("after a failing token: %+v", st)
	}
	mu.Lock()
	if len(checked) != 1 || checked[0] != id.Token {
		t.Errorf("checked %q, want the offer's token", checked)
	}
	mu.Unlock()
	cc, err := dial(t, l, id)
	if err != nil {
		t.Fatalf("a passing token: %v", err)
	}
	sc := accept(t, l)
	_ = cc.Close()
	_ = sc.Close()
	_ = l.Close()
}
