package auth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
	"github.com/rs/zerolog"
)

// The Verifier's tests run in testing/synctest bubbles and fetch through
// authtest's in-memory transport: no socket, and the clock is the
// bubble's, so backoffs and refresh intervals of hours take no time.

// startVerifier starts a Verifier for c in the caller's synctest bubble,
// lets its first fetch end and fails unless it then has keys. Cleanup
// closes it.
func startVerifier(t *testing.T, c auth.Config) *auth.Verifier {
	t.Helper()
	v := c.New()
	v.Start()
	t.Cleanup(func() { _ = v.Close() })
	synctest.Wait()
	if !v.Ready() {
		t.Fatal("no keys after the first fetch")
	}
	return v
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
	is := authtest.NewMemIssuer()
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
			synctest.Test(t, func(t *testing.T) {
				v := startVerifier(t, is.Config())
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
		})
	}
}

func TestKeyRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := authtest.NewMemIssuer()
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
	})
}

func TestUnknownKeyIDRefreshLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := authtest.NewMemIssuer()
		c := is.Config()
		c.MinRefreshInterval, c.RefreshInterval = time.Hour, 24*time.Hour
		v := startVerifier(t, c)
		steve := authtest.NewPlayer("Steve", "2535400000000001")
		forger := rsaKey(t)
		forged := func() error {
			_, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{SignKey: forger, KeyID: "forged"}))
			return err
		}
		before := is.JWKSFetches.Load()
		for i := range 5 {
			if err := forged(); !errors.Is(err, auth.ErrNotSignedIn) {
				t.Fatalf("attempt %d: got %v, want ErrNotSignedIn", i, err)
			}
		}
		if got := is.JWKSFetches.Load() - before; got != 1 {
			t.Errorf("5 unknown key ids fetched the JWKS %d times, want 1", got)
		}
		// Once MinRefreshInterval has passed, an unknown key id may ask
		// again.
		time.Sleep(time.Hour)
		if err := forged(); !errors.Is(err, auth.ErrNotSignedIn) {
			t.Fatalf("after an hour: got %v, want ErrNotSignedIn", err)
		}
		if got := is.JWKSFetches.Load() - before; got != 2 {
			t.Errorf("an unknown key id an hour later: JWKS fetched %d times in all, want 2", got)
		}
	})
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

// failingService returns a client whose every request to down.test is
// answered 503 and counted in n, after it has passed gate (nil: none).
// From the 100th request on it answers only when the request is given up,
// so that a Verifier which does not back off blocks, in fetchTimeout
// steps of the bubble's clock, instead of spinning the bubble forever.
func failingService(n *atomic.Int64, gate <-chan struct{}) *http.Client {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			<-gate
		}
		if n.Add(1) >= 100 {
			<-r.Context().Done()
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	return &http.Client{Transport: authtest.Transport(map[string]http.Handler{"down.test": h})}
}

func TestUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		log := zerolog.New(&logs).Level(zerolog.DebugLevel)
		var n atomic.Int64
		gate := make(chan struct{})
		v := auth.Config{DiscoveryURL: "https://down.test/discovery", Issuer: "-", HTTPClient: failingService(&n, gate),
			RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond, Log: &log}.New()
		defer v.Close()
		// The first fetch hangs until gate opens: Start must not wait
		// for it (if it did, the bubble would deadlock here).
		v.Start()
		steve := authtest.NewPlayer("Steve", "2535400000000001")
		is := authtest.NewMemIssuer()
		if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); !errors.Is(err, auth.ErrUnavailable) {
			t.Fatalf("got %v, want ErrUnavailable", err)
		}
		close(gate)
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		_ = v.Close()
		if got := n.Load(); got < 3 {
			t.Fatalf("got %d fetches in 5ms of 1-2ms backoffs, want at least 3", got)
		}
		if got := strings.Count(logs.String(), `"level":"warn"`); got != 1 {
			t.Errorf("got %d warnings over %d failed fetches, want 1:\n%s", got, n.Load(), logs.String())
		}
		if !strings.Contains(logs.String(), "cannot reach the Minecraft authentication service") {
			t.Errorf("the warning does not say what failed:\n%s", logs.String())
		}
		if v.Ready() {
			t.Error("Ready after failed fetches")
		}
	})
}

func TestFallbackIssuer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := authtest.NewMemIssuer()
		c := is.Config()
		// Discovery fails (no such host); the configured issuer answers.
		c.DiscoveryURL, c.Issuer = "https://discovery.test/discovery", is.URL()
		v := startVerifier(t, c)
		steve := authtest.NewPlayer("Steve", "2535400000000001")
		if _, err := v.Verify(context.Background(), is.Request(steve, authtest.TokenOptions{})); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
	})
}

func TestIssuerMismatch(t *testing.T) {
	// Discovery names the issuer and its OpenID configuration is valid,
	// with a JWKS of good keys, but names an issuer: unless that is the
	// one asked (a trailing slash aside), the keys are refused, since
	// the keys of one issuer must never verify another's tokens.
	for _, tc := range []struct {
		name   string
		named  string // the issuer the OpenID configuration names
		wantOK bool
	}{
		{"the issuer asked", authtest.MemURL, true},
		{"with a trailing slash", authtest.MemURL + "/", true},
		{"another issuer", "https://other.test", false},
		{"another path of the issuer", authtest.MemURL + "/other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				log := zerolog.New(&logs)
				is := authtest.NewMemIssuer()
				is.NameIssuer(tc.named)
				c := is.Config()
				c.Log = &log
				v := c.New()
				v.Start()
				defer v.Close()
				synctest.Wait() // the first fetch has ended
				if v.Ready() != tc.wantOK {
					t.Fatalf("Ready: got %v, want %v; log:\n%s", v.Ready(), tc.wantOK, logs.String())
				}
				if tc.wantOK {
					return
				}
				if got := is.JWKSFetches.Load(); got != 0 {
					t.Errorf("JWKS fetched %d times, want 0: the OpenID configuration is refused before", got)
				}
				if !strings.Contains(logs.String(), `names issuer \"`+tc.named+`\"`) {
					t.Errorf("the warning does not name the issuer refused:\n%s", logs.String())
				}
				steve := authtest.NewPlayer("Steve", "2535400000000001")
				req := is.Request(steve, authtest.TokenOptions{Issuer: tc.named})
				if _, err := v.Verify(context.Background(), req); !errors.Is(err, auth.ErrUnavailable) {
					t.Errorf("a token of %s: got %v, want ErrUnavailable", tc.named, err)
				}
			})
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	// After failures the fetches back off from RetryMin, doubling up to
	// RetryMax, each wait less up to a fifth at random; Close ends a wait
	// at once.
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		v := auth.Config{DiscoveryURL: "https://down.test/discovery", Issuer: "-", HTTPClient: failingService(&n, nil),
			RetryMin: time.Hour, RetryMax: 4 * time.Hour}.New()
		defer v.Close()
		start := time.Now()
		v.Start()
		// Fetches fall at 0, [48m, 60m], +[96m, 120m] (so [144m, 180m]),
		// +[192m, 240m] ([336m, 420m]), then every [192m, 240m].
		for _, step := range []struct {
			at   time.Duration
			want int64
		}{
			{0, 1}, {47 * time.Minute, 1}, {61 * time.Minute, 2}, {143 * time.Minute, 2},
			{181 * time.Minute, 3}, {335 * time.Minute, 3}, {421 * time.Minute, 4},
		} {
			time.Sleep(time.Until(start.Add(step.at)))
			synctest.Wait()
			if got := n.Load(); got != step.want {
				t.Fatalf("after %v: got %d fetches, want %d", step.at, got, step.want)
			}
		}
		before := time.Now()
		_ = v.Close()
		if d := time.Since(before); d != 0 {
			t.Errorf("Close waited %v of the backoff, want 0", d)
		}
	})
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
