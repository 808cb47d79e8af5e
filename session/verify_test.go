package session

import (
	"context"
	"errors"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

func TestVerifyLogin(t *testing.T) {
	leaktest.Check(t)
	verified := Identity{DisplayName: "Proven", XUID: "2535400000000009", Verified: true}
	tests := []struct {
		name   string
		verify func(*Session, Identity, LoginRequest) (Identity, error)
		want   *disconnect // nil: logged in as Proven
	}{
		{"verified identity kept", func(_ *Session, id Identity, req LoginRequest) (Identity, error) {
			if id.DisplayName != "Steve" || len(req.Chain) != 3 || req.ClientData == "" {
				return id, errors.New("hook got the wrong login")
			}
			v := verified
			v.Protocol, v.ClientData, v.IdentityPublicKey = id.Protocol, id.ClientData, id.IdentityPublicKey
			return v, nil
		}, nil},
		{"refused without a message", func(_ *Session, id Identity, _ LoginRequest) (Identity, error) {
			return id, errors.New("bad token")
		}, &disconnect{Reason: DisconnectReasonNotAuthenticated, Message: NotSignedInMessage}},
		{"refused with a message", func(_ *Session, id Identity, _ LoginRequest) (Identity, error) {
			return id, &DisconnectError{Reason: DisconnectReasonNotAuthenticated, Message: "Later."}
		}, &disconnect{Reason: DisconnectReasonNotAuthenticated, Message: "Later."}},
		{"panic", func(*Session, Identity, LoginRequest) (Identity, error) {
			panic("verifier bug")
		}, nil},
		{"control characters in the verified name", func(_ *Session, id Identity, _ LoginRequest) (Identity, error) {
			id.DisplayName = "a\nb"
			return id, nil
		}, &disconnect{Reason: DisconnectReasonInvalidPlayer, Message: invalidLoginMessage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var newHandlerCalled bool
			s, c, done := start(t, context.Background(), Config{VerifyLogin: tc.verify, NewHandler: func(s *Session) (Handler, error) {
				newHandlerCalled = true
				return holder{}, nil
			}})
			c.negotiate(t)
			c.send(clientBatch(t, plain, Packet{ID: IDLogin, Payload: steveLogin(t)}))
			switch {
			case tc.name == "panic":
				c.waitClosed(t)
				if err := wait(t, done); !errors.Is(err, ErrHandlerPanic) {
					t.Fatalf("got %v, want ErrHandlerPanic", err)
				}
				return
			case tc.want == nil:
				c.expectLoginSuccess(t)
				c.sync(t)
				id, _ := s.Identity()
				if id.DisplayName != "Proven" || id.XUID != verified.XUID || !id.Verified {
					t.Errorf("got %+v, want the verified identity", id)
				}
				_ = s.Close()
				_ = wait(t, done)
				return
			}
			c.expectDisconnect(t, true, tc.want.Reason, tc.want.Message)
			if err := wait(t, done); err == nil {
				t.Error("Run returned nil for a refused login")
			}
			if newHandlerCalled {
				t.Error("NewHandler called for a refused login")
			}
		})
	}
}
