package nethernet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

// leakPrefixes are the code whose goroutines must not outlive a test:
// ours, go-nethernet's and pion's.
var leakPrefixes = []string{leaktest.Module, "github.com/df-mc/go-nethernet", "github.com/pion/"}

// checkGoroutines fails t if a goroutine of leakPrefixes' is left once
// the test and its cleanups have run. The returned function does nothing;
// it keeps the defer form of the tests.
func checkGoroutines(t *testing.T) func() {
	t.Helper()
	leaktest.Check(t, leakPrefixes...)
	return func() {}
}

func TestMain(m *testing.M) { os.Exit(leaktest.Main(m, leakPrefixes...)) }

// listenTest starts a Listener on loopback (signalling and ICE on ports
// of their own) and closes it when the test ends.
func listenTest(t *testing.T, c Config) *Listener {
	t.Helper()
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.ICEConn == nil && c.ICEAddr == "" {
		c.ICEAddr = "127.0.0.1:0"
	}
	if c.OffersPerSource == 0 {
		c.OffersPerSource = -1
	}
	if c.NegotiationsPerSource == 0 {
		c.NegotiationsPerSource = -1
	}
	l, err := c.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// loopbackAPI is a WebRTC API that gathers loopback candidates only.
func loopbackAPI() *webrtc.API {
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.LoggerFactory = pionLogger{}
	return webrtc.NewAPI(webrtc.WithSettingEngine(se))
}

// quietSlog discards go-nethernet's client-side logging.
var quietSlog = slog.New(slog.NewTextHandler(io.Discard, nil))

// httpClient is a client that keeps no connection open after a request.
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
}

// dial joins l over NetherNet as a client would, presenting id (nil:
// anonymous).
func dial(t *testing.T, l *Listener, id *gonn.Identity) (*gonn.Conn, error) {
	t.Helper()
	sig := endpoint.ClientConfig{HTTPClient: httpClient(), Logger: quietSlog}.New()
	d := gonn.Dialer{API: loopbackAPI(), Log: quietSlog, Identity: id}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return d.DialContext(ctx, "http://"+l.Addr().String(), sig)
}

// clientIdentity returns a client identity with a new key; the token is
// self-signed, as go-nethernet's listener accepts by default.
func clientIdentity(t *testing.T) *gonn.Identity {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := gonn.GenerateServerIdentity(k, "test")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// accept returns the next connection l accepts, within 20 s.
func accept(t *testing.T, l *Listener) *Conn {
	t.Helper()
	type result struct {
		c   *Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.c
	case <-time.After(20 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// captureSignaling is a Signaling that keeps the offer a Dialer sends and
// fails the dial.
type captureSignaling struct{ offer chan string }

func (s *captureSignaling) Signal(_ context.Context, sig *gonn.Signal) error {
	if sig.Type == gonn.SignalTypeOffer {
		select {
		case s.offer <- sig.Data:
		default:
		}
	}
	return errors.New("captured")
}
func (s *captureSignaling) Notify(gonn.Notifier) func() { return func() {} }
func (s *captureSignaling) Context() context.Context    { return context.Background() }
func (s *captureSignaling) Credentials(context.Context) (*gonn.Credentials, error) {
	return &gonn.Credentials{}, nil
}
func (s *captureSignaling) NetworkID() string       { return "1" }
func (s *captureSignaling) PongData([]byte)         {}
func (s *captureSignaling) DisableTrickleICE() bool { return true }

// offerSDP returns a real client offer (loopback candidates, anonymous).
func offerSDP(t testing.TB) string {
	t.Helper()
	sig := &captureSignaling{offer: make(chan string, 1)}
	d := gonn.Dialer{API: loopbackAPI(), Log: quietSlog}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := d.DialContext(ctx, "http://127.0.0.1:1", sig); err == nil {
		_ = c.Close()
	}
	select {
	case o := <-sig.offer:
		return o
	default:
		t.Fatal("no offer captured")
		return ""
	}
}

// postOffer posts an offer to l and returns the answer, failing unless it
// is 200.
func postOffer(t testing.TB, l *Listener, networkID, offer string) string {
	t.Helper()
	resp, err := httpClient().Post("http://"+l.Addr().String()+"/v1/join/"+networkID, "application/sdp", strings.NewReader(offer))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("offer: %s: %s", resp.Status, b)
	}
	return string(b)
}

// identityKeyOfAnswer returns the cpk of the identity token an answer
// carries.
func identityKeyOfAnswer(t testing.TB, answer string) *ecdsa.PublicKey {
	t.Helper()
	var attr string
	for line := range strings.SplitSeq(answer, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "a=identity:"); ok {
			attr = v
		}
	}
	raw, err := base64.StdEncoding.DecodeString(attr)
	if err != nil {
		t.Fatal(err)
	}
	var outer struct {
		Assertion string `json:"assertion"`
	}
	var inner struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &outer); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(outer.Assertion), &inner); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(inner.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", inner.Token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		CPK string `json:"cpk"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	der, err := base64.StdEncoding.DecodeString(claims.CPK)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("cpk is %T", pub)
	}
	return k
}
