package auth

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Defaults for zero Config fields: the real Minecraft authentication
// service.
const (
	// DefaultDiscoveryURL is the discovery document of Minecraft's
	// services, whose auth environment names the token issuer.
	DefaultDiscoveryURL = "https://client.discovery.minecraft-services.net/api/v1.0/discovery/MinecraftPE/builds/" + session.CurrentVersion
	// DefaultIssuer is the issuer tried when discovery fails, as
	// PocketMine-MP falls back to it.
	DefaultIssuer = "https://authorization.franchise.minecraft-services.net"
	// Audience is the audience of multiplayer tokens.
	Audience = "api://auth-minecraft-services/multiplayer"
	// DefaultRefreshInterval is how often the keys are fetched again: 30
	// minutes, as gophertunnel refreshes them.
	DefaultRefreshInterval = 30 * time.Minute
	// DefaultMinRefreshInterval is the least time between two fetches a
	// token with an unknown key id may trigger.
	DefaultMinRefreshInterval = time.Minute
	// DefaultRetryMin and DefaultRetryMax bound the backoff between
	// failed fetches.
	DefaultRetryMin = 2 * time.Second
	DefaultRetryMax = 5 * time.Minute
	// MojangRootKey is the key Mojang signs legacy login chains with:
	// base64 of a PKIX DER P-384 public key.
	MojangRootKey = "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAECRXueJeTDqNRRgJi/vlRufByu/2G0i2Ebt6YMar5QX/R0DIIyrJMcUpruK4QveTfJSTp3Shlq4Gk34cD/4GUWwkv0DVuzeuB+tXija7HBxii03NHDbPAD0AKnLr2wdAp"
)

// Disconnect messages of refused players.
const (
	// NotSignedInMessage refuses a Login that does not prove an Xbox Live
	// identity.
	NotSignedInMessage = session.NotSignedInMessage
	// UnavailableMessage refuses a player while the keys of the
	// authentication service have not been fetched.
	UnavailableMessage = "This server cannot verify Xbox Live sign-ins right now."
)

// Errors Verify returns, wrapped. ErrUnavailable means the server could
// not check; every other error means the Login proves nothing.
var (
	// ErrUnavailable reports that the service's keys have not been
	// fetched yet.
	ErrUnavailable = errors.New("keys of the authentication service not fetched yet")
	// ErrGuest reports a guest login.
	ErrGuest = errors.New("guest authentication is refused")
	// ErrNotSignedIn reports a Login that proves no Xbox Live identity.
	ErrNotSignedIn = errors.New("login not signed in to Xbox Live")
)

// Limits on what the service's answers and a Login may hold.
const (
	// maxDocumentSize caps each fetched document (discovery, OpenID
	// configuration, JWKS); real ones are a few KiB.
	maxDocumentSize = 1 << 20
	// fetchTimeout bounds one fetch of the three documents.
	fetchTimeout = 15 * time.Second
	// refreshWait bounds how long a Login waits for a refresh that its
	// unknown key id triggered.
	refreshWait = 5 * time.Second
	// chainLeeway is the clock skew allowed on the legacy chain's times.
	chainLeeway = time.Minute
)

// Config configures a Verifier. Its zero value verifies against the real
// Minecraft authentication service with Mojang's root key pinned. A Config
// is a plain value.
type Config struct {
	// DiscoveryURL is the discovery document; "" means
	// DefaultDiscoveryURL.
	DiscoveryURL string
	// Issuer is the issuer whose OpenID configuration is fetched when
	// discovery fails; "" means DefaultIssuer, and "-" none.
	Issuer string
	// HTTPClient fetches the documents; nil means http.DefaultClient.
	// Every fetch is bounded in time and size whatever the client.
	HTTPClient *http.Client
	// RefreshInterval is how often keys are fetched again after a
	// success; 0 means DefaultRefreshInterval.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between fetches triggered by
	// tokens with unknown key ids; 0 means DefaultMinRefreshInterval,
	// negative none.
	MinRefreshInterval time.Duration
	// RetryMin and RetryMax bound the exponential backoff after a failed
	// fetch; 0 means DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// LegacyRoots are the keys a legacy chain must be signed by; nil
	// means MojangRootKey alone.
	LegacyRoots []*ecdsa.PublicKey
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time
	// Log receives the Verifier's messages: one warning when the service
	// cannot be reached, an info line when it can again, and per refused
	// Login a debug line. Nil discards them.
	Log *zerolog.Logger
}

// Verifier verifies Logins. Create one with Config.New, start fetching
// keys with Start and stop with Close. Its methods are safe for concurrent
// use.
type Verifier struct {
	conf  Config
	log   zerolog.Logger
	roots []*ecdsa.PublicKey
	keys  keyCache

	fetches              atomic.Int64 // successful fetches
	startOnce, closeOnce sync.Once
	ctx                  context.Context
	cancel               context.CancelFunc
	wg                   sync.WaitGroup
}

// New returns a Verifier configured by c, every zero field given its
// default. It fetches nothing until Start.
func (c Config) New() *Verifier {
	if c.DiscoveryURL == "" {
		c.DiscoveryURL = DefaultDiscoveryURL
	}
	switch c.Issuer {
	case "":
		c.Issuer = DefaultIssuer
	case "-":
		c.Issuer = ""
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	switch {
	case c.MinRefreshInterval == 0:
		c.MinRefreshInterval = DefaultMinRefreshInterval
	case c.MinRefreshInterval < 0:
		c.MinRefreshInterval = 0
	}
	if c.RetryMin <= 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	if c.Now == nil {
		c.Now = time.Now
	}
	v := &Verifier{conf: c, log: zerolog.Nop(), roots: c.LegacyRoots}
	if c.Log != nil {
		v.log = c.Log.With().Str("src", "auth").Logger()
	}
	if v.roots == nil {
		k, err := ParsePublicKey(MojangRootKey)
		if err != nil {
			panic("auth: MojangRootKey does not parse: " + err.Error())
		}
		v.roots = []*ecdsa.PublicKey{k}
	}
	v.keys.init()
	v.ctx, v.cancel = context.WithCancel(context.Background())
	return v
}

// Start starts fetching the service's keys in the background, at once and
// then every RefreshInterval, retrying with backoff while the service
// cannot be reached. It returns at once. Calls after the first do nothing;
// Start after Close fetches nothing.
func (v *Verifier) Start() {
	v.startOnce.Do(func() {
		if v.ctx.Err() != nil {
			return
		}
		v.wg.Go(v.run)
	})
}

// Close stops fetching, cancelling a fetch under way, and waits for the
// background work to end. It is safe to call more than once.
func (v *Verifier) Close() error {
	v.closeOnce.Do(func() {
		v.cancel()
		v.wg.Wait()
	})
	return nil
}

// Ready reports whether the keys have been fetched, so that tokens can be
// verified.
func (v *Verifier) Ready() bool {
	return v.keys.load() != nil
}

// Result is what a verified Login proves.
type Result struct {
	// DisplayName is the player's Xbox gamertag.
	DisplayName string
	// XUID is the player's Xbox user id, in decimal.
	XUID string
	// UUID is the player's identity UUID.
	UUID uuid.UUID
	// PublicKey is the client's key: the token's cpk, or the key the
	// chain certifies. The client data was signed with it.
	PublicKey *ecdsa.PublicKey
	// Legacy reports a Login verified by its legacy chain, having no
	// token.
	Legacy bool
}

// Verify checks the signed parts of a Login: a guest login is refused; a
// token must verify against the service's keys, with the right issuer and
// audience, in date, naming an XUID, a name and a P-384 cpk; a Login
// without a token must carry a three-JWT chain whose second JWT a pinned
// root signed, in date, issued by "Mojang", naming an XUID and a name; and
// the client data must be an ES384 JWT signed with the proven key. The
// error wraps ErrUnavailable when the keys are not there yet, and
// otherwise ErrGuest or ErrNotSignedIn. ctx bounds the wait for a refresh
// an unknown key id triggers.
func (v *Verifier) Verify(ctx context.Context, req session.LoginRequest) (Result, error) {
	if req.AuthenticationType == session.AuthenticationGuest {
		return Result{}, ErrGuest
	}
	var (
		r   Result
		err error
	)
	if req.Token != "" {
		r, err = v.verifyToken(ctx, req.Token)
	} else {
		r, err = verifyChain(req.Chain, v.roots, v.conf.Now())
	}
	if err != nil {
		return Result{}, err
	}
	if err := verifyClientData(req.ClientData, r.PublicKey); err != nil {
		return Result{}, fmt.Errorf("%w: client data: %w", ErrNotSignedIn, err)
	}
	return r, nil
}

// VerifyLogin is a session.Config.VerifyLogin: it verifies the Login with
// Verify and returns id with the proven name, XUID, UUID and key, and
// Verified set. A refused player is told UnavailableMessage while the keys
// are not there, NotSignedInMessage otherwise, both with
// session.DisconnectReasonNotAuthenticated.
func (v *Verifier) VerifyLogin(s *session.Session, id session.Identity, req session.LoginRequest) (session.Identity, error) {
	ctx, cancel := context.WithTimeout(s.Context(), refreshWait)
	defer cancel()
	r, err := v.Verify(ctx, req)
	if err != nil {
		msg := NotSignedInMessage
		if errors.Is(err, ErrUnavailable) {
			msg = UnavailableMessage
		}
		if e := s.Log().Debug(); e.Enabled() {
			e.Err(err).Msg("login not verified")
		}
		return id, fmt.Errorf("%w: %w", err, &session.DisconnectError{Reason: session.DisconnectReasonNotAuthenticated, Message: msg})
	}
	id.DisplayName, id.XUID, id.UUID = r.DisplayName, r.XUID, r.UUID
	id.IdentityPublicKey = MarshalPublicKey(r.PublicKey)
	id.Verified = true
	return id, nil
}

// verifyClientData checks that the client-data JWT is signed with key.
func verifyClientData(cd string, key *ecdsa.PublicKey) error {
	jws, err := jose.ParseSigned(cd, []jose.SignatureAlgorithm{jose.ES384})
	if err != nil {
		return err
	}
	if len(jws.Signatures) != 1 {
		return fmt.Errorf("%d signatures", len(jws.Signatures))
	}
	_, err = jws.Verify(key)
	return err
}

// ParsePublicKey parses a key as Logins carry it: base64 (standard
// alphabet) of a PKIX DER P-384 public key. It is session.ParsePublicKey.
func ParsePublicKey(b64 string) (*ecdsa.PublicKey, error) { return session.ParsePublicKey(b64) }

// MarshalPublicKey returns key as Logins carry it: base64 (standard
// alphabet) of its PKIX DER form. It is session.MarshalPublicKey.
func MarshalPublicKey(key *ecdsa.PublicKey) string { return session.MarshalPublicKey(key) }

// sameIssuer reports whether two issuer URLs name the same issuer,
// ignoring a trailing slash.
func sameIssuer(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}

// oidcConfig returns the go-oidc configuration tokens are checked with.
func (v *Verifier) oidcConfig(algs []string) *oidc.Config {
	return &oidc.Config{ClientID: Audience, SupportedSigningAlgs: algs, Now: v.conf.Now}
}
