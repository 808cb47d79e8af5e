package auth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
	"github.com/rs/zerolog"
)

const testTimeout = 5 * time.Second

// startVerifier starts a Verifier for c and waits until it has keys.
func startVerifier(t *testing.T, c auth.Config) *auth.Verifier {
	t.Helper()
	v := c.New()
	v.Start()
	t.Cleanup(func() { _ = v.Close() })
	waitFor(t, "keys", v.Ready)
	return v
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestVerifyToken(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	v := startVerifier(t, is.Config())
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	other := authtest.NewKey()
	forger := rsaKey(t)
	tests := []struct {
		name string
		req  func() session.LoginRequest
		want error // nil: accepted
	}{
		{"valid token", func() session.LoginRequest { return is.Request(steve, authtest.TokenOptions{}) }, nil},
		{"expired", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{Expiry: time.Now().Add(-time.Minute)})
		}, auth.ErrNotSignedIn},
		{"wrong audience", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{Audience: "api://somewhere-else"})
		}, auth.ErrNotSignedIn},
		{"wrong issuer", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{Issuer: "https://issuer.example"})
		}, auth.ErrNotSignedIn},
		{"bad signature", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{SignKey: forger})
		}, auth.ErrNotSignedIn},
		{"unknown key id", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{SignKey: forger, KeyID: "forged"})
		}, auth.ErrNotSignedIn},
		{"cpk mismatch with the client data", func() session.LoginRequest {
			return is.Request(steve, authtest.TokenOptions{CPK: &other.PublicKey})
		}, auth.ErrNotSignedIn},
		{"client data signed by another key", func() session.LoginRequest {
			r := is.Request(steve, authtest.TokenOptions{})
			r.ClientData = authtest.ClientData(other, nil)
			return r
		}, auth.ErrNotSignedIn},
		{"client data not a JWT", func() session.LoginRequest {
			r := is.Request(steve, authtest.TokenOptions{})
			r.ClientData = "garbage"
			return r
		}, auth.ErrNotSignedIn},
		{"guest", func() session.LoginRequest {
			r := is.Request(steve, authtest.TokenOptions{})
			r.AuthenticationType = session.AuthenticationGuest
			return r
		}, auth.ErrGuest},
		{"token without XUID", func() session.LoginRequest {
			return is.Request(authtest.Player{Name: "Steve", Key: steve.Key}, authtest.TokenOptions{})
		}, auth.ErrNotSignedIn},
		{"token not a JWT", func() session.LoginRequest {
			r := is.Request(steve, authtest.TokenOptions{})
			r.Token = "a.b.c"
			return r
		}, auth.ErrNotSignedIn},
		{"self-signed chain, no token", func() session.LoginRequest {
			return session.LoginRequest{AuthenticationType: session.AuthenticationSelfSigned,
				Chain: authtest.SelfSignedChain(steve), ClientData: authtest.ClientData(steve.Key, nil)}
		}, auth.ErrNotSignedIn},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := v.Verify(context.Background(), tc.req())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				if r.DisplayName != "Steve" || r.XUID != "2535400000000001" || !r.PublicKey.Equal(&steve.Key.PublicKey) || r.Legacy {
					t.Errorf("got %+v, want Steve's token identity and key", r)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	v := startVerifier(t, is.Config())
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); err != nil {
		t.Fatalf("before rotation: got %v, want nil", err)
	}
	before := is.JWKSFetches.Load()
	is.Rotate()
	if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); err != nil {
		t.Fatalf("token of the new key: got %v, want nil", err)
	}
	if got := is.JWKSFetches.Load(); got != before+1 {
		t.Errorf("JWKS fetched %d times since the rotation, want 1", got-before)
	}
}

func TestUnknownKeyIDRefreshLimited(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	c := is.Config()
	c.MinRefreshInterval = time.Hour
	v := startVerifier(t, c)
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	forger := rsaKey(t)
	before := is.JWKSFetches.Load()
	for i := range 5 {
		_, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{SignKey: forger, KeyID: "forged"}))
		if !errors.Is(err, auth.ErrNotSignedIn) {
			t.Fatalf("attempt %d: got %v, want ErrNotSignedIn", i, err)
		}
	}
	if got := is.JWKSFetches.Load() - before; got != 1 {
		t.Errorf("5 unknown key ids fetched the JWKS %d times, want 1", got)
	}
}

func TestLegacyChain(t *testing.T) {
	root := authtest.NewKey()
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	chainReq := func(chain []string, cdKey *ecdsa.PrivateKey) session.LoginRequest {
		return session.LoginRequest{Chain: chain, ClientData: authtest.ClientData(cdKey, nil)}
	}
	valid := authtest.Chain(root, steve, time.Now().Add(time.Hour))
	// Mojang's root is pinned by default: the test root proves nothing.
	v := auth.Config{}.New()
	defer v.Close()
	if _, err := v.Verify(context.Background(), chainReq(valid, steve.Key)); !errors.Is(err, auth.ErrNotSignedIn) {
		t.Fatalf("chain of a test root, Mojang pinned: got %v, want ErrNotSignedIn", err)
	}
	pinned := auth.Config{LegacyRoots: []*ecdsa.PublicKey{&root.PublicKey}}.New()
	defer pinned.Close()
	r, err := pinned.Verify(context.Background(), chainReq(valid, steve.Key))
	if err != nil {
		t.Fatalf("chain of the pinned test root: got %v, want nil", err)
	}
	if r.DisplayName != "Steve" || r.XUID != "2535400000000001" || !r.Legacy || !r.PublicKey.Equal(&steve.Key.PublicKey) {
		t.Errorf("got %+v, want Steve's chain identity", r)
	}
	other := authtest.NewKey()
	for _, tc := range []struct {
		name string
		req  session.LoginRequest
	}{
		{"expired", chainReq(authtest.Chain(root, steve, time.Now().Add(-time.Hour)), steve.Key)},
		{"client data of another key", chainReq(valid, other)},
		{"self-signed only", chainReq(valid[:1], steve.Key)},
		{"identity JWT re-signed", chainReq([]string{valid[0], valid[1], authtest.Chain(other, steve, time.Now().Add(time.Hour))[2]}, steve.Key)},
		{"no XUID", chainReq(authtest.Chain(root, authtest.Player{Name: "Steve", Key: steve.Key}, time.Now().Add(time.Hour)), steve.Key)},
		{"empty", chainReq(nil, steve.Key)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pinned.Verify(context.Background(), tc.req); !errors.Is(err, auth.ErrNotSignedIn) {
				t.Fatalf("got %v, want ErrNotSignedIn", err)
			}
		})
	}
}

// syncBuffer is a log sink safe for the Verifier's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// closedURL returns a loopback URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/discovery"
}

func TestUnreachable(t *testing.T) {
	var logs syncBuffer
	log := zerolog.New(&logs).Level(zerolog.DebugLevel)
	var attempts sync.WaitGroup
	attempts.Add(3)
	var n int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		if n <= 3 {
			attempts.Done()
		}
		mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	v := auth.Config{DiscoveryURL: srv.URL, Issuer: "-", RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond, Log: &log}.New()
	start := time.Now()
	v.Start()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Start took %v, want it not to wait for the service", d)
	}
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	is := authtest.NewIssuer()
	defer is.Close()
	if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); !errors.Is(err, auth.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	attempts.Wait() // three fetches, all failed
	_ = v.Close()
	if got := strings.Count(logs.String(), `"level":"warn"`); got != 1 {
		t.Errorf("got %d warnings over 3 failed fetches, want 1:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "cannot reach the Minecraft authentication service") {
		t.Errorf("the warning does not say what failed:\n%s", logs.String())
	}
	if v.Ready() {
		t.Error("Ready after failed fetches")
	}
}

func TestFallbackIssuer(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	c := is.Config()
	c.DiscoveryURL, c.Issuer = closedURL(t), is.URL()
	v := startVerifier(t, c)
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
}

func TestIssuerMismatch(t *testing.T) {
	// An OpenID configuration naming another issuer than the one asked is
	// refused: the keys of one issuer never verify another's tokens.
	is := authtest.NewIssuer()
	defer is.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /discovery", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"result":{"serviceEnvironments":{"auth":{"prod":{"issuer":"` + is.URL() + `/other"}}}}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	v := auth.Config{DiscoveryURL: srv.URL + "/discovery", Issuer: "-", RetryMin: time.Millisecond, RetryMax: time.Millisecond}.New()
	v.Start()
	time.Sleep(50 * time.Millisecond)
	_ = v.Close()
	if v.Ready() {
		t.Error("keys taken from an OpenID configuration of another issuer")
	}
}

func TestRetryBackoff(t *testing.T) {
	// Close stops a Verifier waiting out a long backoff at once.
	v := auth.Config{DiscoveryURL: closedURL(t), Issuer: "-", RetryMin: time.Hour}.New()
	v.Start()
	time.Sleep(20 * time.Millisecond)
	done := make(chan struct{})
	go func() { _ = v.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Close did not return")
	}
}

func TestMarshalParsePublicKey(t *testing.T) {
	k := authtest.NewKey()
	got, err := auth.ParsePublicKey(auth.MarshalPublicKey(&k.PublicKey))
	if err != nil || !got.Equal(&k.PublicKey) {
		t.Fatalf("got %v, %v, want the key back", got, err)
	}
	for _, bad := range []string{"", "!!", "AAAA"} {
		if _, err := auth.ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q): got nil, want an error", bad)
		}
	}
}
