// Package integration holds end-to-end tests that run Basalt over real UDP
// sockets on loopback against independent peers (go-raknet, gophertunnel,
// PrismarineJS bedrock-protocol in js/).
//
// Every client here logs in offline, as bots and test tools do, so the
// servers these tests start are in offline mode: server.online_mode =
// false (UserConfig.Server.OnlineMode) for those built from config.toml's
// defaults, AuthenticationDisabled for a server.Config filled in by hand.
// Online mode, the default, is tested against a local issuer
// (online_test.go), where the same offline clients are refused; no test
// reaches the real authentication service.
package integration
