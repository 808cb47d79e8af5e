package session

import (
	"errors"
	"fmt"
	"slices"
)

// Authentication types of a Login's request, as the client states them.
const (
	// AuthenticationFull is a player signed in to Xbox Live.
	AuthenticationFull = 0
	// AuthenticationGuest is a guest account, which cannot be verified.
	AuthenticationGuest = 1
	// AuthenticationSelfSigned is an offline login the client signed
	// itself.
	AuthenticationSelfSigned = 2
)

// NotSignedInMessage is the Disconnect message of a player whose Login
// Config.VerifyLogin refused without saying why, as the anchors word it.
const NotSignedInMessage = "You must be signed in to Xbox Live to join."

// LoginRequest is the signed part of a Login packet, as Config.VerifyLogin
// sees it. Nothing in it has been checked. A LoginRequest is a plain value;
// its Chain is the session's copy and may be kept.
type LoginRequest struct {
	// AuthenticationType is what the client says it is:
	// AuthenticationFull, AuthenticationGuest or
	// AuthenticationSelfSigned; 0 when the Login (an older form) does not
	// say.
	AuthenticationType int
	// Chain is the legacy certificate chain of JWTs (Xbox chains hold
	// three: self-signed, Mojang's, and the identity); it may hold empty
	// strings.
	Chain []string
	// Token is the OIDC multiplayer token of current clients, "" if none.
	Token string
	// ClientData is the client-data JWT, signed with the identity key.
	ClientData string
}

// verifyLogin runs Config.VerifyLogin on the parsed login id and its
// request, turning a panic into an error and a refusal into the end of the
// session: the *DisconnectError the refusal wraps is shown, otherwise
// NotSignedInMessage with DisconnectReasonNotAuthenticated.
func (s *Session) verifyLogin(id Identity, req connectionRequest) (v Identity, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = Identity{}, s.panicked("verify login", r)
		}
	}()
	lr := LoginRequest{
		AuthenticationType: req.AuthenticationType,
		Chain:              slices.Clone(req.Chain),
		Token:              req.Token,
		ClientData:         req.ClientData,
	}
	v, err = s.verify(s, id, lr)
	if err != nil {
		err = fmt.Errorf("verify login: %w", err)
		if _, ok := errors.AsType[*DisconnectError](err); !ok {
			err = fmt.Errorf("%w: %w", err, &DisconnectError{Reason: DisconnectReasonNotAuthenticated, Message: NotSignedInMessage})
		}
		return Identity{}, err
	}
	if err := validateDisplayName(v.DisplayName); err != nil || v.DisplayName == "" {
		return Identity{}, invalidLogin(fmt.Errorf("verify login: display name %q: %v", v.DisplayName, err))
	}
	if err := validateXUID(v.XUID); err != nil {
		return Identity{}, invalidLogin(fmt.Errorf("verify login: %w", err))
	}
	return v, nil
}
