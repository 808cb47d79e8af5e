// Package auth verifies Bedrock logins against Xbox Live: online mode.
//
// A current client sends two proofs of who it is in its Login: the OIDC
// multiplayer token the Minecraft authentication service issued it (RS256,
// audience api://auth-minecraft-services/multiplayer, claims xid, xname and
// cpk, the client's public key), and the legacy certificate chain Mojang
// signed. A Verifier checks the token against the service's keys, found by
// discovery, then the OpenID configuration, then its JWKS, all fetched in
// the background, cached and refreshed; a Login without a token must carry
// a legacy chain signed by Mojang's pinned root key. Either way the
// client-data JWT must be signed with the proven client key, guest logins
// are refused, and so is everything else.
//
// The token is checked with coreos/go-oidc (issuer, audience, expiry,
// not-before, algorithm, a single signature) over a key set this package
// keeps; the chain and the client data with go-jose. gophertunnel's
// login.Parse does the same checks but pins Mojang's key in a variable no
// caller can set, fetches its keys once at start-up and blocks on them, and
// refuses client data that Basalt deliberately accepts.
//
// A Verifier never blocks a join on the network: until the keys have been
// fetched a player is refused at once with UnavailableMessage, and a token
// signed with a key id the cache does not know triggers at most one
// refresh per MinRefreshInterval.
//
//	v := auth.Config{Log: log}.New()
//	v.Start()
//	defer v.Close()
//	s := session.New(conn, session.Config{VerifyLogin: v.VerifyLogin, Encryption: true})
//
// Verification proves the Login was issued to its key's holder; with
// session.Config.Encryption on, the handshake then proves the client holds
// that key, so a captured Login cannot be replayed. Without encryption it
// can be, for as long as its token is valid.
package auth
