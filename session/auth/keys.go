package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
)

// maxKeys caps the keys taken from a JWKS; the service publishes a handful.
const maxKeys = 64

// keySet is one successful fetch: the issuer, the algorithms it signs with
// and its keys. It is never modified once stored.
type keySet struct {
	issuer  string
	algs    []jose.SignatureAlgorithm
	keys    []jose.JSONWebKey
	fetched time.Time
}

// algNames returns the set's algorithms as go-oidc takes them.
func (ks *keySet) algNames() []string {
	out := make([]string, len(ks.algs))
	for i, a := range ks.algs {
		out[i] = string(a)
	}
	return out
}

// knows reports whether the set has a key with id kid.
func (ks *keySet) knows(kid string) bool {
	for i := range ks.keys {
		if ks.keys[i].KeyID == kid {
			return true
		}
	}
	return false
}

// verify returns the payload of jws if a key of the set with id kid (any
// key if kid is empty) signed it.
func (ks *keySet) verify(jws *jose.JSONWebSignature, kid string) ([]byte, bool) {
	for i := range ks.keys {
		if kid == "" || ks.keys[i].KeyID == kid {
			if p, err := jws.Verify(&ks.keys[i]); err == nil {
				return p, true
			}
		}
	}
	return nil, false
}

// keyCache holds the last key set fetched and lets Logins with an unknown
// key id ask for a refresh.
type keyCache struct {
	cur  atomic.Pointer[keySet]
	kick chan struct{} // wakes the fetch loop; capacity 1

	mu       sync.Mutex
	attempt  chan struct{} // closed when the next fetch attempt ends
	lastKick time.Time
}

func (k *keyCache) init() {
	k.kick = make(chan struct{}, 1)
	k.attempt = make(chan struct{})
}

func (k *keyCache) load() *keySet { return k.cur.Load() }

// attempted wakes those waiting for a fetch attempt to end.
func (k *keyCache) attempted() {
	k.mu.Lock()
	close(k.attempt)
	k.attempt = make(chan struct{})
	k.mu.Unlock()
}

// awaitRefresh asks the fetch loop for a fetch, unless one was asked for
// less than MinRefreshInterval ago, and waits for it to end or ctx. It
// returns the key set then in force, nil if it did not wait.
func (v *Verifier) awaitRefresh(ctx context.Context) *keySet {
	k := &v.keys
	k.mu.Lock()
	now := time.Now()
	if !k.lastKick.IsZero() && now.Sub(k.lastKick) < v.conf.MinRefreshInterval {
		k.mu.Unlock()
		return nil
	}
	k.lastKick = now
	ch := k.attempt
	k.mu.Unlock()
	select {
	case k.kick <- struct{}{}:
	default:
	}
	select {
	case <-ch:
		return k.load()
	case <-ctx.Done():
	case <-v.ctx.Done():
	}
	return nil
}

// run fetches the keys until Close: at once, then every RefreshInterval
// after a success, after a backoff growing from RetryMin to RetryMax after
// a failure, and when a Login asks.
func (v *Verifier) run() {
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-t.C:
		case <-v.keys.kick:
		}
		err := v.fetch(v.ctx)
		v.keys.attempted()
		if v.ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			v.logFailure(err, failures)
			t.Reset(v.backoff(failures))
			continue
		}
		if failures > 0 || v.fetches.Add(1) == 1 {
			ks := v.keys.load()
			v.log.Info().Str("issuer", ks.issuer).Int("keys", len(ks.keys)).
				Msg("verifying Xbox Live sign-ins with the keys of the Minecraft authentication service")
		}
		failures = 0
		t.Reset(v.conf.RefreshInterval)
	}
}

// logFailure logs a failed fetch: a warning for the first of a run of
// failures, which says what it means for players, debug lines after.
func (v *Verifier) logFailure(err error, failures int) {
	if failures > 1 {
		if e := v.log.Debug(); e.Enabled() {
			e.Err(err).Int("failures", failures).Msg("authentication service still unreachable")
		}
		return
	}
	e := v.log.Warn().Err(err).Str("discovery", v.conf.DiscoveryURL)
	if ks := v.keys.load(); ks != nil {
		e.Time("keys_fetched", ks.fetched).Msg("cannot refresh the keys of the Minecraft authentication service; " +
			"players are verified with the keys fetched before; retrying in the background")
		return
	}
	e.Msg("cannot reach the Minecraft authentication service; players cannot join in online mode " +
		"until it answers (they are told the server cannot verify Xbox Live sign-ins right now); retrying in the background")
}

// backoff returns the wait after the given number of failed fetches in a
// row: RetryMin doubled per failure, at most RetryMax, less up to a fifth
// at random so that many servers do not retry in step.
func (v *Verifier) backoff(failures int) time.Duration {
	d := v.conf.RetryMin
	for i := 1; i < failures && d < v.conf.RetryMax; i++ {
		d *= 2
	}
	d = min(d, v.conf.RetryMax)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// fetch fetches the discovery document (or falls back to Config.Issuer),
// the issuer's OpenID configuration and its JWKS, and stores the keys.
func (v *Verifier) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	issuer, err := v.discover(ctx)
	if err != nil {
		if v.conf.Issuer == "" {
			return fmt.Errorf("discovery: %w", err)
		}
		if e := v.log.Debug(); e.Enabled() {
			e.Err(err).Str("issuer", v.conf.Issuer).Msg("discovery failed; trying the configured issuer")
		}
		issuer = v.conf.Issuer
	}
	var oc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	wellKnown := strings.TrimRight(issuer, "/") + "/.well-known/openid-configuration"
	if err := v.getJSON(ctx, wellKnown, &oc); err != nil {
		return fmt.Errorf("OpenID configuration: %w", err)
	}
	if oc.Issuer == "" {
		oc.Issuer = issuer
	}
	if !sameIssuer(oc.Issuer, issuer) {
		return fmt.Errorf("OpenID configuration of %s names issuer %q", issuer, oc.Issuer)
	}
	if oc.JWKSURI == "" {
		return fmt.Errorf("OpenID configuration of %s names no jwks_uri", issuer)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := v.getJSON(ctx, oc.JWKSURI, &doc); err != nil {
		return fmt.Errorf("JWKS: %w", err)
	}
	ks := &keySet{issuer: oc.Issuer, algs: signingAlgs(oc.Algs), fetched: time.Now()}
	for _, raw := range doc.Keys {
		if len(ks.keys) == maxKeys {
			break
		}
		if k, ok := parseJWK(raw); ok {
			ks.keys = append(ks.keys, k)
		}
	}
	if len(ks.keys) == 0 {
		return fmt.Errorf("JWKS %s holds no usable signing key", oc.JWKSURI)
	}
	v.keys.cur.Store(ks)
	return nil
}

// discover returns the token issuer the discovery document names in its
// auth service's prod environment.
func (v *Verifier) discover(ctx context.Context) (string, error) {
	var d struct {
		Result struct {
			ServiceEnvironments struct {
				Auth struct {
					Prod struct {
						Issuer string `json:"issuer"`
					} `json:"prod"`
				} `json:"auth"`
			} `json:"serviceEnvironments"`
		} `json:"result"`
	}
	if err := v.getJSON(ctx, v.conf.DiscoveryURL, &d); err != nil {
		return "", err
	}
	iss := d.Result.ServiceEnvironments.Auth.Prod.Issuer
	if iss == "" {
		return "", errors.New("no auth issuer in the discovery document")
	}
	return iss, nil
}

// getJSON GETs url and decodes its JSON body, of at most maxDocumentSize
// bytes, into v.
func (v *Verifier) getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.conf.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentSize+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocumentSize {
		return fmt.Errorf("GET %s: body exceeds %d bytes", url, maxDocumentSize)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// signingAlgs returns the asymmetric algorithms of names, RS256 if none:
// a token "signed" with a shared secret or none at all proves nothing.
func signingAlgs(names []string) []jose.SignatureAlgorithm {
	var out []jose.SignatureAlgorithm
	for _, n := range names {
		switch a := jose.SignatureAlgorithm(n); a {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
			jose.ES256, jose.ES384, jose.ES512, jose.EdDSA:
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = []jose.SignatureAlgorithm{jose.RS256}
	}
	return out
}

// parseJWK parses one key of a JWKS, keeping only public signing keys.
// The certificate thumbprints are dropped: Microsoft writes x5t in hex,
// which go-jose refuses, and only the key itself is needed.
func parseJWK(raw json.RawMessage) (jose.JSONWebKey, bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return jose.JSONWebKey{}, false
	}
	delete(m, "x5t")
	delete(m, "x5t#S256")
	b, err := json.Marshal(m)
	if err != nil {
		return jose.JSONWebKey{}, false
	}
	var k jose.JSONWebKey
	if k.UnmarshalJSON(b) != nil || !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
		return jose.JSONWebKey{}, false
	}
	return k, true
}

// keySetView is the go-oidc KeySet of one Login's check: the key set in
// force, and a refresh when the token names a key id it does not hold.
type keySetView struct {
	v  *Verifier
	ks *keySet
}

// VerifySignature returns the payload of the JWT raw if a key of the set
// signed it.
func (w keySetView) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, w.ks.algs)
	if err != nil {
		return nil, err
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%d signatures", len(jws.Signatures))
	}
	kid := jws.Signatures[0].Header.KeyID
	if p, ok := w.ks.verify(jws, kid); ok {
		return p, nil
	}
	if kid == "" || w.ks.knows(kid) {
		return nil, errors.New("bad signature")
	}
	// A key the service added since the last fetch, perhaps.
	if ks := w.v.awaitRefresh(ctx); ks != nil {
		if p, ok := ks.verify(jws, kid); ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown key id %q", kid)
}

// verifyToken checks a multiplayer token with go-oidc against the key set
// in force and returns who it names.
func (v *Verifier) verifyToken(ctx context.Context, raw string) (Result, error) {
	ks := v.keys.load()
	if ks == nil {
		return Result{}, ErrUnavailable
	}
	cfg := v.oidcConfig(ks.algNames())
	// The issuer is compared below, tolerating a trailing slash, which
	// the service's documents have been seen to differ on.
	cfg.SkipIssuerCheck = true
	idt, err := oidc.NewVerifier(ks.issuer, keySetView{v: v, ks: ks}, cfg).Verify(ctx, raw)
	if err != nil {
		return Result{}, fmt.Errorf("%w: token: %w", ErrNotSignedIn, err)
	}
	if !sameIssuer(idt.Issuer, ks.issuer) {
		return Result{}, fmt.Errorf("%w: token issued by %q, want %q", ErrNotSignedIn, idt.Issuer, ks.issuer)
	}
	var c session.TokenClaims
	if err := idt.Claims(&c); err != nil {
		return Result{}, fmt.Errorf("%w: token claims: %w", ErrNotSignedIn, err)
	}
	if c.XID == "" || c.XName == "" {
		return Result{}, fmt.Errorf("%w: token names no XUID or name", ErrNotSignedIn)
	}
	key, err := ParsePublicKey(c.CPK)
	if err != nil {
		return Result{}, fmt.Errorf("%w: token cpk: %w", ErrNotSignedIn, err)
	}
	r := Result{DisplayName: c.XName, XUID: c.XID, PublicKey: key, UUID: session.UUIDFromXUID(c.XID)}
	if c.LegUUID != "" {
		if r.UUID, err = uuid.Parse(c.LegUUID); err != nil {
			return Result{}, fmt.Errorf("%w: token leguuid: %w", ErrNotSignedIn, err)
		}
	}
	return r, nil
}
