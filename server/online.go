package server

import (
	"errors"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/auth"
)

// newVerifier returns the verifier of online mode for c, nil when
// c.AuthenticationDisabled.
func newVerifier(c Config) *auth.Verifier {
	if c.AuthenticationDisabled {
		return nil
	}
	ac := c.Auth
	if ac.Log == nil {
		ac.Log = c.Log
	}
	return ac.New()
}

// verifyLogin is every session's session.Config.VerifyLogin: in online
// mode it has the Login verified, then it applies the ban list and the
// allowlist, so a refused player never takes a slot. Each refusal is
// counted by reason.
func (srv *Server) verifyLogin(s *session.Session, id session.Identity, req session.LoginRequest) (session.Identity, error) {
	if srv.verifier != nil {
		v, err := srv.verifier.VerifyLogin(s, id, req)
		if err != nil {
			reason := refusedNotSignedIn
			if errors.Is(err, auth.ErrUnavailable) {
				srv.stats.authUnavailable.Add(1)
				reason = refusedAuthUnavailable
			} else {
				srv.stats.notSignedIn.Add(1)
			}
			srv.logRefusal(s, id, false, reason, err)
			return id, err
		}
		id = v
	}
	if err := srv.access.Admit(id, addrPort(s.RemoteAddr()).Addr()); err != nil {
		srv.stats.countRefusal(err)
		srv.logRefusal(s, id, false, accessReason(err), err)
		return id, err
	}
	return id, nil
}

// OnlineMode reports whether the server verifies players' Xbox Live
// sign-ins (Config.AuthenticationDisabled is false).
func (srv *Server) OnlineMode() bool { return srv.verifier != nil }

// startAccess starts fetching the keys of online mode and watching the
// access files, and warns about an allowlist that offline mode makes
// meaningless. It runs at the end of a successful Listen.
func (srv *Server) startAccess() {
	if srv.verifier != nil {
		srv.verifier.Start()
		if srv.conf.EncryptionDisabled {
			srv.log.Warn().Msg("online mode without encryption: a captured Login can be replayed while its token " +
				"lasts; turn network.encryption on")
		}
	} else {
		srv.log.Info().Msg("offline mode: players' Xbox Live sign-ins are not verified; anyone can join under any name or XUID")
	}
	if srv.conf.Access.Allowlist && srv.verifier == nil {
		srv.log.Warn().Msg("the allowlist is on in offline mode: names and XUIDs are not verified, so anyone can claim " +
			"a listed one; turn server.online_mode on for the allowlist to mean something")
	}
	if srv.conf.Access.AllowlistFile != "" || srv.conf.Access.BansFile != "" {
		interval := srv.conf.Access.PollInterval
		if interval == 0 {
			interval = DefaultAccessPollInterval
		}
		srv.loops.Add(1)
		go srv.watchAccess(interval, srv.accessDone)
	}
}

// stopVerifier stops fetching the keys of online mode.
func (srv *Server) stopVerifier() {
	if srv.verifier != nil {
		_ = srv.verifier.Close()
	}
}

// OnlineModeReady reports whether the server can admit players: in online
// mode, whether the keys of the authentication service have been fetched
// (until then every player is refused with auth.UnavailableMessage); in
// offline mode, always.
func (srv *Server) OnlineModeReady() bool {
	return srv.verifier == nil || srv.verifier.Ready()
}
