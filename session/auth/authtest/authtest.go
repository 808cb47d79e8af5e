// Package authtest is a local stand-in for the Minecraft authentication
// service, for tests of online mode that must not reach the internet: an
// httptest server answering discovery, the OpenID configuration and the
// JWKS, signing multiplayer tokens with keys it can rotate, and helpers that
// build the signed parts of a Login (token, legacy chain, client data).
//
//	is := authtest.NewIssuer()
//	defer is.Close()
//	v := is.Config().New() // an auth.Config pointed at is
//	p := authtest.NewPlayer("Steve", "2535400000000001")
//	req := is.Request(p, authtest.TokenOptions{})
//
// NewMemIssuer is the same service without a socket: its Config fetches
// through an in-memory http.RoundTripper, so a Verifier can run inside a
// testing/synctest bubble.
package authtest

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a local authentication service. Its methods are safe for
// concurrent use.
type Issuer struct {
	srv    *httptest.Server // nil for a NewMemIssuer
	url    string
	client *http.Client // fetches from a NewMemIssuer; nil for NewIssuer

	mu     sync.Mutex
	key    *rsa.PrivateKey // signs tokens
	kid    string
	keys   []jose.JSONWebKey // published in the JWKS
	serial int
	named  string // the issuer the OpenID configuration names; "" is url

	// JWKSFetches counts the JWKS requests served.
	JWKSFetches atomic.Int64
}

// NewIssuer starts an Issuer on a loopback port with one signing key.
// Close it when done.
func NewIssuer() *Issuer {
	is := &Issuer{}
	is.srv = httptest.NewServer(is.handler())
	is.url = is.srv.URL
	is.Rotate()
	return is
}

// MemURL is the issuer a NewMemIssuer names; no host answers it.
const MemURL = "https://issuer.test"

// NewMemIssuer returns an Issuer that listens nowhere: it is MemURL, and
// the Config it returns fetches from it through Transport, in memory. It
// starts no goroutine, so it may be made inside a synctest bubble or out.
func NewMemIssuer() *Issuer {
	is := &Issuer{url: MemURL}
	is.client = &http.Client{Transport: Transport(map[string]http.Handler{"issuer.test": is.handler()})}
	is.Rotate()
	return is
}

func (is *Issuer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /discovery", is.serveDiscovery)
	mux.HandleFunc("GET /.well-known/openid-configuration", is.serveOpenID)
	mux.HandleFunc("GET /keys", is.serveJWKS)
	return mux
}

// Close stops the Issuer's server, if it has one.
func (is *Issuer) Close() {
	if is.srv != nil {
		is.srv.Close()
	}
}

// URL returns the issuer, as tokens name it.
func (is *Issuer) URL() string { return is.url }

// ErrNoHost is the error of a Transport's round trip to a host it does
// not serve, as a refused connection would be.
var ErrNoHost = errors.New("authtest: no such host")

// Transport returns an http.RoundTripper that answers each request with
// the handler of its URL's host (host[:port]), in memory: no socket, no
// goroutine and no timer, so that a Verifier fetching through it runs in
// a testing/synctest bubble. A request to another host fails with
// ErrNoHost; a request whose context is done fails with its error.
func Transport(hosts map[string]http.Handler) http.RoundTripper {
	return memTransport(hosts)
}

type memTransport map[string]http.Handler

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	h, ok := t[req.URL.Host]
	if !ok {
		return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: ErrNoHost}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// DiscoveryURL returns the URL of the discovery document.
func (is *Issuer) DiscoveryURL() string { return is.url + "/discovery" }

// Config returns an auth.Config that fetches from the Issuer only (no
// fallback issuer), retrying fast and refreshing on any unknown key id.
// The HTTPClient of a NewMemIssuer's Config fetches in memory.
func (is *Issuer) Config() auth.Config {
	return auth.Config{
		HTTPClient:         is.client,
		DiscoveryURL:       is.DiscoveryURL(),
		Issuer:             "-",
		RetryMin:           10 * time.Millisecond,
		RetryMax:           100 * time.Millisecond,
		MinRefreshInterval: -1,
	}
}

// Rotate makes a new signing key, with a new key id, the only key the JWKS
// publishes from now on, and returns its id.
func (is *Issuer) Rotate() string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.serial++
	is.key, is.kid = k, fmt.Sprintf("test-key-%d", is.serial)
	is.keys = []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: is.kid, Algorithm: string(jose.RS256), Use: "sig"}}
	return is.kid
}

func (is *Issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"result": map[string]any{"serviceEnvironments": map[string]any{
		"auth": map[string]any{"prod": map[string]any{"issuer": is.URL(), "serviceUri": is.URL()}},
	}}})
}

// NameIssuer makes the OpenID configuration name iss as its issuer, as a
// misconfigured or impersonating service would, while discovery and the
// JWKS stay as they are; "" restores URL.
func (is *Issuer) NameIssuer(iss string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.named = iss
}

func (is *Issuer) serveOpenID(w http.ResponseWriter, _ *http.Request) {
	is.mu.Lock()
	named := cmp.Or(is.named, is.URL())
	is.mu.Unlock()
	writeJSON(w, map[string]any{
		"issuer":                                named,
		"jwks_uri":                              is.URL() + "/keys",
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

func (is *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	is.JWKSFetches.Add(1)
	is.mu.Lock()
	set := jose.JSONWebKeySet{Keys: is.keys}
	is.mu.Unlock()
	// The real service writes x5t in hex; a verifier must cope.
	b, _ := json.Marshal(set)
	var m map[string][]map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range m["keys"] {
		k["x5t"] = "00112233445566778899aabbccddeeff00112233"
	}
	writeJSON(w, m)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Player is a client's identity and key.
type Player struct {
	Name string
	XUID string
	Key  *ecdsa.PrivateKey
}

// NewPlayer returns a Player with a new P-384 key.
func NewPlayer(name, xuid string) Player {
	return Player{Name: name, XUID: xuid, Key: NewKey()}
}

// NewKey returns a new P-384 key, as clients and Mojang's chain use.
func NewKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// TokenOptions change a token from a valid one. Zero fields keep it valid.
type TokenOptions struct {
	// Issuer replaces the issuer.
	Issuer string
	// Audience replaces auth.Audience.
	Audience string
	// Expiry replaces an hour from now.
	Expiry time.Time
	// CPK replaces the player's key in the cpk claim.
	CPK *ecdsa.PublicKey
	// SignKey and KeyID replace the Issuer's signing key and its id.
	SignKey *rsa.PrivateKey
	KeyID   string
}

// Token returns a multiplayer token for p, changed by o.
func (is *Issuer) Token(p Player, o TokenOptions) string {
	is.mu.Lock()
	key, kid := is.key, is.kid
	is.mu.Unlock()
	if o.SignKey != nil {
		key = o.SignKey
	}
	if o.KeyID != "" {
		kid = o.KeyID
	}
	iss, aud, exp, cpk := is.URL(), auth.Audience, time.Now().Add(time.Hour), &p.Key.PublicKey
	if o.Issuer != "" {
		iss = o.Issuer
	}
	if o.Audience != "" {
		aud = o.Audience
	}
	if !o.Expiry.IsZero() {
		exp = o.Expiry
	}
	if o.CPK != nil {
		cpk = o.CPK
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		panic(err)
	}
	claims := map[string]any{
		"iss": iss, "aud": aud, "exp": exp.Unix(), "iat": time.Now().Add(-time.Minute).Unix(),
		"nbf": time.Now().Add(-time.Minute).Unix(), "sub": "test",
		"xid": p.XUID, "xname": p.Name, "cpk": auth.MarshalPublicKey(cpk),
		"ipt": "PlayFab", "mid": "ABCDEF", "tid": "20CA2",
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return s
}

// Request returns the signed part of a Login of p as a current client sends
// it: a token changed by o, an empty legacy chain, and client data signed
// with p's key.
func (is *Issuer) Request(p Player, o TokenOptions) session.LoginRequest {
	return session.LoginRequest{
		Token:      is.Token(p, o),
		Chain:      []string{""},
		ClientData: ClientData(p.Key, nil),
	}
}

// ClientData returns a client-data JWT signed with key (ES384), holding
// claims merged over a few common fields.
func ClientData(key *ecdsa.PrivateKey, claims map[string]any) string {
	c := map[string]any{"DeviceOS": 7, "GameVersion": session.CurrentVersion, "LanguageCode": "en_US", "SkinId": "test"}
	for k, v := range claims {
		c[k] = v
	}
	return sign(key, nil, c)
}

// Chain returns a legacy certificate chain for p as Mojang would sign it
// with root: self-signed by p certifying root, signed by root certifying an
// intermediate key, signed by that key holding p's identity and key. exp is
// the expiry of all three.
func Chain(root *ecdsa.PrivateKey, p Player, exp time.Time) []string {
	mid := NewKey()
	now := time.Now()
	times := func(c map[string]any) map[string]any {
		c["exp"], c["nbf"] = exp.Unix(), now.Add(-time.Minute).Unix()
		return c
	}
	return []string{
		sign(p.Key, &p.Key.PublicKey, times(map[string]any{
			"identityPublicKey": auth.MarshalPublicKey(&root.PublicKey), "certificateAuthority": true})),
		sign(root, &root.PublicKey, times(map[string]any{
			"identityPublicKey": auth.MarshalPublicKey(&mid.PublicKey), "iss": "Mojang", "certificateAuthority": true})),
		sign(mid, &mid.PublicKey, times(map[string]any{
			"identityPublicKey": auth.MarshalPublicKey(&p.Key.PublicKey), "iss": "Mojang",
			"extraData": map[string]any{"displayName": p.Name, "XUID": p.XUID, "identity": "0b8ea5e2-7c8e-4a41-a3c5-9a6f7ad8d3b1"},
		})),
	}
}

// SelfSignedChain returns the one-JWT chain of an offline client: p's
// identity and key, signed with that key.
func SelfSignedChain(p Player) []string {
	return []string{sign(p.Key, &p.Key.PublicKey, map[string]any{
		"exp": time.Now().Add(time.Hour).Unix(), "nbf": time.Now().Add(-time.Minute).Unix(),
		"identityPublicKey": auth.MarshalPublicKey(&p.Key.PublicKey),
		"extraData":         map[string]any{"displayName": p.Name, "XUID": p.XUID},
	})}
}

// sign returns claims as an ES384 JWT signed with key, with x5u naming
// x5u if set.
func sign(key *ecdsa.PrivateKey, x5u *ecdsa.PublicKey, claims map[string]any) string {
	opts := &jose.SignerOptions{}
	if x5u != nil {
		opts = opts.WithHeader("x5u", auth.MarshalPublicKey(x5u))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES384, Key: key}, opts)
	if err != nil {
		panic(err)
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return s
}

// EncodeRequest returns the connection request of a Login holding req, in
// the form current clients send: the JSON {"AuthenticationType",
// "Certificate", "Token"}, then the client data, each after an int32 LE
// length.
func EncodeRequest(req session.LoginRequest) []byte {
	cert, _ := json.Marshal(map[string]any{"chain": req.Chain})
	outer, _ := json.Marshal(map[string]any{
		"AuthenticationType": req.AuthenticationType, "Certificate": string(cert), "Token": req.Token,
	})
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(outer)))
	b = append(b, outer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(req.ClientData)))
	return append(b, req.ClientData...)
}

// LoginPayload returns the payload of a Login packet (after its header)
// for protocol holding req.
func LoginPayload(protocol int32, req session.LoginRequest) []byte {
	r := EncodeRequest(req)
	b := binary.BigEndian.AppendUint32(nil, uint32(protocol))
	b = binary.AppendUvarint(b, uint64(len(r)))
	return append(b, r...)
}
