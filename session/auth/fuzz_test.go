package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
	"github.com/basaltmc/basalt/session/auth/authtest"
)

// Verify never panics and never accepts what it cannot prove: whatever a
// client puts in its Login, the answer is an error of the package's or a
// result naming the XUID and key the valid token (the only seed that can
// pass) names.
func FuzzVerify(f *testing.F) {
	is := authtest.NewMemIssuer()
	c := is.Config()
	c.MinRefreshInterval = time.Hour // the fuzzer must not hammer the issuer
	v := c.New()
	v.Start()
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := auth.AwaitReady(ctx, v); err != nil {
		f.Fatalf("no keys: %v", err)
	}
	steve := authtest.NewPlayer("Steve", "2535400000000001")
	valid := is.Request(steve, authtest.TokenOptions{})
	root := authtest.NewKey()
	f.Add(valid.Token, strings.Join(valid.Chain, "\n"), valid.ClientData, 0)
	f.Add("", strings.Join(authtest.Chain(root, steve, time.Now().Add(time.Hour)), "\n"), valid.ClientData, 0)
	f.Add("", strings.Join(authtest.SelfSignedChain(steve), "\n"), valid.ClientData, 2)
	f.Add("a.b.c", "x.y.z", "", 1)
	f.Fuzz(func(t *testing.T, token, chain, clientData string, authType int) {
		req := session.LoginRequest{AuthenticationType: authType, Token: token, ClientData: clientData}
		if chain != "" {
			req.Chain = strings.Split(chain, "\n")
		}
		r, err := v.Verify(context.Background(), req)
		if err != nil {
			if !errors.Is(err, auth.ErrNotSignedIn) && !errors.Is(err, auth.ErrGuest) {
				t.Fatalf("got %v, want ErrNotSignedIn or ErrGuest", err)
			}
			return
		}
		if r.XUID != steve.XUID || !r.PublicKey.Equal(&steve.Key.PublicKey) {
			t.Fatalf("accepted %+v", r)
		}
	})
}
