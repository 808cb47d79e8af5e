package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/monitor"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
)

// onlineConfig returns a Config in online mode against the local issuer
// is, whose players are held.
func onlineConfig(is *authtest.Issuer) Config {
	return Config{NewHandler: newHold, Auth: is.Config()}
}

// startOnline starts c and waits until its verifier has the issuer's keys.
func startOnline(t *testing.T, c Config) *Server {
	t.Helper()
	srv := startServer(t, c)
	if !srv.OnlineMode() {
		t.Fatal("server not in online mode")
	}
	waitFor(t, "the issuer's keys", srv.verifier.Ready)
	return srv
}

// sendRequest negotiates (unless c has already) and sends a Login holding
// req.
func (c *client) sendRequest(req session.LoginRequest) {
	c.t.Helper()
	if !c.compressed {
		c.negotiate()
	}
	c.send(session.IDLogin, authtest.LoginPayload(session.CurrentProtocol, req))
}

// expectDisconnect fails unless the next packet is a Disconnect with
// reason and message.
func (c *client) expectDisconnect(reason session.DisconnectReason, message string) {
	c.t.Helper()
	p := c.expect(session.IDDisconnect)
	if r, m := disconnectMsg(c.t, p.payload); r != reason || m != message {
		c.t.Errorf("got Disconnect %v %q, want %v %q", r, m, reason, message)
	}
}

// expectLoginSuccess fails unless the next packet is PlayStatus
// LoginSuccess.
func (c *client) expectLoginSuccess() {
	c.t.Helper()
	if p := c.expect(session.IDPlayStatus); !bytes.Equal(p.payload, []byte{0, 0, 0, 0}) {
		c.t.Fatalf("got PlayStatus % x, want LoginSuccess", p.payload)
	}
}

// Every rule of online mode, end to end: a client's Login over RakNet, the
// session, the verifier and the Disconnect the player sees.
func TestOnlineMode(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	srv := startOnline(t, onlineConfig(is))
	addr := gameAddr(t, srv)
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	other := authtest.NewKey()
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	valid := func() session.LoginRequest { return is.Request(steve, authtest.TokenOptions{}) }
	refused := []struct {
		name string
		req  session.LoginRequest
	}{
		{"expired", is.Request(steve, authtest.TokenOptions{Expiry: time.Now().Add(-time.Minute)})},
		{"wrong audience", is.Request(steve, authtest.TokenOptions{Audience: "api://elsewhere"})},
		{"wrong issuer", is.Request(steve, authtest.TokenOptions{Issuer: "https://issuer.example"})},
		{"bad signature", is.Request(steve, authtest.TokenOptions{SignKey: forger})},
		{"unknown key id", is.Request(steve, authtest.TokenOptions{SignKey: forger, KeyID: "forged"})},
		{"cpk mismatch", is.Request(steve, authtest.TokenOptions{CPK: &other.PublicKey})},
		{"guest", func() session.LoginRequest {
			r := valid()
			r.AuthenticationType = session.AuthenticationGuest
			return r
		}()},
		{"self-signed, as an offline client", session.LoginRequest{AuthenticationType: session.AuthenticationSelfSigned,
			Chain: authtest.SelfSignedChain(steve), ClientData: authtest.ClientData(steve.Key, nil)}},
		{"legacy chain of an unpinned root", session.LoginRequest{
			Chain: authtest.Chain(authtest.NewKey(), steve, time.Now().Add(time.Hour)), ClientData: authtest.ClientData(steve.Key, nil)}},
	}
	for i, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr, raknet.Dialer{})
			c.sendRequest(tc.req)
			c.expectDisconnect(session.DisconnectReasonNotAuthenticated, auth.NotSignedInMessage)
			if got := srv.Stats().NotSignedIn; got != uint64(i+1) {
				t.Errorf("NotSignedIn = %d, want %d", got, i+1)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		c := dial(t, addr, raknet.Dialer{})
		c.sendRequest(valid())
		c.expectLoginSuccess()
		c.sync()
		if srv.PlayerCount() != 1 {
			t.Errorf("got %d players, want 1", srv.PlayerCount())
		}
		// The refused clients' sessions may still be closing: they never
		// logged in, so they have no identity.
		logged := 0
		for _, s := range srv.Sessions() {
			id, ok := s.Identity()
			if !ok {
				continue
			}
			logged++
			if !id.Verified || id.XUID != steve.XUID || id.DisplayName != "Steve" ||
				id.IdentityPublicKey != auth.MarshalPublicKey(&steve.Key.PublicKey) {
				t.Errorf("got %+v, want Steve's verified identity", id)
			}
		}
		if logged != 1 {
			t.Errorf("%d sessions logged in, want Steve's alone", logged)
		}
	})
	t.Run("the offline client of these tests", func(t *testing.T) {
		c := dial(t, addr, raknet.Dialer{})
		c.sendLogin("Forger")
		c.expectDisconnect(session.DisconnectReasonNotAuthenticated, auth.NotSignedInMessage)
	})
}

// A token of a key the issuer added since the server fetched its keys is
// accepted: the unknown key id makes the server fetch them again.
func TestOnlineModeKeyRotation(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	srv := startOnline(t, onlineConfig(is))
	is.Rotate()
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.sendRequest(is.Request(authtest.NewPlayer("Alex", "2535400000000002"), authtest.TokenOptions{}))
	c.expectLoginSuccess()
}

// A Login with only a legacy chain joins when the chain's root is pinned.
func TestOnlineModeLegacyChain(t *testing.T) {
	is := authtest.NewIssuer()
	defer is.Close()
	root := authtest.NewKey()
	c := onlineConfig(is)
	c.Auth.LegacyRoots = []*ecdsa.PublicKey{&root.PublicKey}
	srv := startOnline(t, c)
	alex := authtest.NewPlayer("Alex", "2535400000000002")
	cl := dial(t, gameAddr(t, srv), raknet.Dialer{})
	cl.sendRequest(session.LoginRequest{Chain: authtest.Chain(root, alex, time.Now().Add(time.Hour)),
		ClientData: authtest.ClientData(alex.Key, nil)})
	cl.expectLoginSuccess()
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

// With the authentication service unreachable the server starts and
// answers pings, and a player is told at once that sign-ins cannot be
// verified.
func TestOnlineModeServiceUnreachable(t *testing.T) {
	c := Config{
		NewHandler: newHold,
		Auth:       auth.Config{DiscoveryURL: closedURL(t), Issuer: "-", RetryMin: time.Hour},
		Metrics: MetricsConfig{
			Address: "127.0.0.1:0",
		},
	}
	srv := startServer(t, c)
	addr := gameAddr(t, srv)
	if st := ping(t, addr); st.ServerName != "Basalt" {
		t.Errorf("got MOTD %+v", st)
	}
	resp := get(t, "http://"+srv.MetricsAddr().String()+"/status")
	var st monitor.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || !st.OnlineMode || st.OnlineModeReady {
		t.Errorf("/status: got %+v, %v, want online mode, not ready", st, err)
	}
	_ = resp.Body.Close()
	is := authtest.NewIssuer()
	defer is.Close()
	cl := dial(t, addr, raknet.Dialer{})
	cl.sendRequest(is.Request(authtest.NewPlayer("Steve", "2535400000000001"), authtest.TokenOptions{}))
	cl.expectDisconnect(session.DisconnectReasonNotAuthenticated, auth.UnavailableMessage)
	if st := srv.Stats(); st.AuthUnavailable != 1 || st.NotSignedIn != 0 {
		t.Errorf("got %+v, want one AuthUnavailable", st)
	}
}

// In offline mode the same Logins all join: nothing is verified.
func TestOfflineModeAcceptsUnverified(t *testing.T) {
	srv := startServer(t, Config{NewHandler: newHold})
	if srv.OnlineMode() {
		t.Fatal("startServer's server is in online mode")
	}
	c := dial(t, gameAddr(t, srv), raknet.Dialer{})
	c.login("Anyone")
	c.sync()
	for _, s := range srv.Sessions() {
		if id, _ := s.Identity(); id.Verified {
			t.Errorf("got %+v, want an unverified identity", id)
		}
	}
}

// The zero Config is in online mode.
func TestOnlineModeIsTheDefault(t *testing.T) {
	if !(Config{}).New().OnlineMode() {
		t.Error("Config{}.New() is in offline mode")
	}
	if (Config{AuthenticationDisabled: true}).New().OnlineMode() {
		t.Error("AuthenticationDisabled left online mode on")
	}
}
