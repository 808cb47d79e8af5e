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
//
// # Online mode
//
// With `server.online_mode = true` (the default, as in BDS, PocketMine-MP,
// dragonfly and gophertunnel) a player must prove an Xbox Live identity. A
// current client's Login carries the OIDC multiplayer token the Minecraft
// authentication service issued it, and the legacy certificate chain Mojang
// signed. The server (package `session/auth`) checks, before the player takes
// a slot:
//
//	| rule | refused with | test |
//	|---|---|---|
//	| the token is signed by a key of the service's JWKS (found by discovery, then the OpenID configuration), RS256 or another asymmetric algorithm the configuration lists | "You must be signed in to Xbox Live to join." | `session/auth` TestVerifyToken "bad signature"; `server` TestOnlineMode |
//	| a token naming a key id the cache does not know makes the server fetch the keys again (at most once a minute), so a rotated key is picked up; a key id still unknown is refused | same | TestKeyRotation, TestUnknownKeyIDRefreshLimited, TestVerifyToken "unknown key id", TestOnlineModeKeyRotation |
//	| issuer is the one the OpenID configuration names (which must be the issuer discovery named) | same | TestVerifyToken "wrong issuer", TestIssuerMismatch |
//	| audience is `api://auth-minecraft-services/multiplayer` | same | TestVerifyToken "wrong audience" |
//	| not expired, not before its nbf | same | TestVerifyToken "expired" |
//	| names an XUID (`xid`), a name (`xname`) and a P-384 client key (`cpk`) | same | TestVerifyToken "token without XUID" |
//	| the client-data JWT is ES384-signed with that key | same | TestVerifyToken "cpk mismatch", "client data signed by another key", "client data not a JWT" |
//	| a Login without a token carries a 3-JWT legacy chain whose second JWT Mojang's pinned root key signed, each in date, issued by "Mojang", naming an XUID and a name; the client data is signed with the key it certifies | same | TestLegacyChain (a test root is refused with Mojang pinned and accepted once pinned), TestOnlineModeLegacyChain |
//	| guest logins (AuthenticationType 1) and self-signed (offline) logins | same | TestVerifyToken "guest", "self-signed chain"; integration TestOnlineModeRefusesGophertunnelOffline, TestOnlineModeRefusesPrismarineOffline |
//	| the keys have been fetched | "This server cannot verify Xbox Live sign-ins right now." | TestUnreachable, TestOnlineModeServiceUnreachable |
//
// The player's name, XUID, UUID and key then come from what was verified
// (`session.Identity.Verified` is true), never from the unverified parts of
// the Login. Refusals are counted in `basalt_logins_refused_total`.
//
// The keys are fetched in the background at start, cached, refreshed every 30
// minutes, and fetched again with backoff (2 s doubling to 5 min) while the
// service cannot be reached: the server starts and answers pings, Query and
// metrics without the internet, logs one warning, and tells a joining player
// that sign-ins cannot be verified right now rather than keeping them
// waiting. `server.auth_discovery_url` and `server.auth_issuer` (the issuer
// tried when discovery fails) are configuration; tests point them at a local
// issuer (`session/auth/authtest`) and never reach the internet.
//
// What each mode proves. Online mode proves that the Login's name, XUID
// and key were issued by Xbox Live / the Minecraft authentication service to
// the holder of that key; with encryption on, the handshake proves this
// client holds it, so a captured Login cannot be replayed (without
// encryption it can be, while its token lasts). It does not prove anything
// in the client data (device, skin, platform). Offline mode
// (`online_mode = false`, for bots, tests and proxies that authenticate
// players themselves) proves nothing: anyone can claim any name or XUID, so
// do not use them for permissions there.
//
// In Go, `server.Config`'s zero value is online mode against the real service,
// as gophertunnel's listener is; `AuthenticationDisabled: true` turns it off,
// and `Auth` (an `auth.Config`) sets the endpoints and the legacy root keys. A
// program driving sessions itself sets `session.Config.VerifyLogin` to an
// `auth.Verifier`'s `VerifyLogin`.
package auth
