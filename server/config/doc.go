// Package config is config.toml: UserConfig, one struct per TOML table,
// with each key's comment in its tag; DefaultUserConfig, the one place a
// key's default is set (taken from the owning package's constant where
// there is one); Validate, which names every bad key and its fix; the
// commented default file; and errors that point at the line that set a
// key. UserConfig.Config turns it into the server.Config a server runs
// with.
//
//	uc, err := config.Load("config.toml") // written with the defaults if missing
//	if err != nil {
//		return err // names the key, its line and the fix
//	}
//	log, logFile, err := uc.Logger()
//	if err != nil {
//		return err
//	}
//	defer logFile.Close()
//	c, err := uc.Config(log)
//	if err != nil {
//		return err
//	}
//	return c.New().Run(ctx)
//
// # Configuration reference
//
// Every key is optional: a missing key takes its default. An unknown key is an
// error naming the key and line, and so is a value the server refuses, with
// what to write instead.
//
// The defaults have one source, `config.DefaultUserConfig` (package server/config), and each key's
// comment in `config.toml` is the `comment` tag of its field in
// `config.UserConfig`; the file is written from both. To add a key, follow
// the steps in `UserConfig`'s documentation: the field with its tags, its
// default, its check, its runtime field, then
// `go test ./server/config -run TestConfigFile -update` and a row here (tests hold
// `config.toml` and this table to the code).
//
//	| key | default | meaning |
//	|---|---|---|
//	| `network.address_v4` | `'0.0.0.0:19132'` | UDP address for IPv4 clients; `""` disables IPv4 |
//	| `network.address_v6` | `'[::]:19133'` | UDP address for IPv6 clients; `""` disables IPv6 (at least one of the two must be set) |
//	| `network.lan_discovery` | `true` | also answer LAN discovery pings on 19132/19133 when the game ports differ, and (with NetherNet) NetherNet LAN discovery on UDP 7551 |
//	| `network.query` | `true` | answer the Query protocol (GameSpy4) on the game ports, as PocketMine-MP does |
//	| `network.cookie_secret_file` | `''` | file with the secret keying RakNet cookies and query tokens, created (mode 0600) if missing, relative to the config file; share it between servers behind one load balancer; `""` means a random secret at each start |
//	| `network.proxy_protocol` | `false` | take PROXY protocol headers (v2, or v1 as nginx sends them) from `trusted_proxies` and see each player by the address they name (see Behind a tunnel or filter (go doc ./raknet)) |
//	| `network.trusted_proxies` | `[]` | proxies allowed to send PROXY headers, as CIDR prefixes (`"203.0.113.0/24"`) or IPs; `proxy_protocol` needs at least one |
//	| `network.sockets` | `1` | UDP sockets per game address (1–64); more than 1 shares the address with `SO_REUSEPORT` (Linux) so receiving spreads over cores (see Scaling out (go doc ./server)) |
//	| `network.public_address` | `''` | the `"IP:port"` players reach the server at when it is not the listening address (a load balancer, tunnel or NAT); pongs advertise its port, which clients connect to; `""` means the listening ports |
//	| `network.encryption` | `true` | run the encryption handshake with every client after its Login; keep it on in online mode, where it stops a captured Login from being replayed |
//	| `network.nethernet` | `true` | also serve NetherNet, which 1.26.50+ clients try first and 1.26.60+ use alone: HTTP signalling on TCP at the game port's number, peer connections over UDP (see NetherNet (go doc ./server/nethernet)) |
//	| `network.nethernet_tls_cert` | `''` | PEM certificate for HTTPS signalling (with `nethernet_tls_key`), relative to the config file; a certificate clients trust spares them the trust prompt; `""` means plain HTTP |
//	| `network.nethernet_tls_key` | `''` | PEM private key of `nethernet_tls_cert` |
//	| `network.nethernet_identity_file` | `'nethernet_identity'` | the server's NetherNet identity key (P-384, created mode 0600 if missing), relative to the GUID file; players trust this key once; `""` means a new key, and a new prompt, at each start |
//	| `network.nethernet_ice_port` | `0` | UDP port of NetherNet peer connections: `0` shares the game port's socket with RakNet; 1–65535 a socket of its own |
//	| `network.nethernet_advertise_address` | `''` | `"IP:port"` NetherNet's ICE candidates offer players, when not `public_address`'s: behind a balancer, each instance's own address (port: the game port or `nethernet_ice_port`); empty means `public_address`'s IP |
//	| `server.name` | `'Basalt'` | MOTD line 1, the name in the server list; § colour codes allowed, no `;`, `\` or control characters |
//	| `server.level_name` | `'Bedrock level'` | MOTD line 2, the world name |
//	| `server.edition` | `'MCPE'` | `"MCPE"` (Bedrock) or `"MCEE"` (Education) |
//	| `server.game_mode` | `'Survival'` | advertised game mode: Survival, Creative, Adventure or Spectator |
//	| `server.max_players` | `20` | most players online at once (at least 1); the MOTD shows it |
//	| `server.version` | `'1.26.60'` | advertised game version, network form |
//	| `server.protocol` | `2225` | advertised network protocol, the newest accepted; must be in `accepted_protocols` |
//	| `server.accepted_protocols` | `[2193, 2225]` | network protocols a joining client may speak, each one this build knows (`session.Protocols`); others get PlayStatus "outdated client/server" |
//	| `server.disconnect_message` | `'Basalt is a skeleton server: you, {player}, have reached it, but there is no world here yet.'` | what the default handler shows a player; `{player}` is the player's name |
//	| `server.shutdown_message` | `'Server closed.'` | what every player sees when the server shuts down |
//	| `server.shutdown_grace` | `'0s'` | on Ctrl-C or SIGTERM, how long to drain before closing (at most 5m): `/readyz` answers 503, players logging in are told the server is restarting, the players in are told too and play on until it ends (see Several instances behind a load balancer (go doc ./server)) |
//	| `server.handler` | `'gate'` | `"gate"` disconnects every player with `disconnect_message` once logged in; `"lobby"` spawns them in the built-in lobby (see The lobby) |
//	| `server.greeting` | `'Welcome to the Basalt lobby, {player}! Type /list to see who is here and /leave to go.'` | the lobby's chat greeting; `{player}` is the player's name |
//	| `server.guid_file` | `''` | file keeping the server GUID across restarts, relative to the config file; `''` names it after the config file (`config.toml` → `config.guid`), so configs sharing a directory keep GUIDs of their own |
//	| `server.login_timeout` | `'10s'` | how long a client has, once connected, to log in before it is disconnected with "Login timed out." (more than 0, at most 1m) |
//	| `server.online_mode` | `true` | verify every player's Xbox Live sign-in (see Online mode (go doc ./session/auth)); `false` trusts any claimed name and XUID |
//	| `server.auth_discovery_url` | `'https://client.discovery.minecraft-services.net/api/v1.0/discovery/MinecraftPE/builds/1.26.60'` | discovery document naming the token issuer online mode verifies against |
//	| `server.auth_issuer` | `'https://authorization.franchise.minecraft-services.net'` | issuer whose keys are fetched when discovery fails; empty means none |
//	| `server.allowlist` | `false` | admit only the players `allowlist_file` lists |
//	| `server.allowlist_file` | `'allowlist.json'` | the allowlist, BDS's format, created empty if missing, reloaded on change, SIGHUP and `reload` |
//	| `server.bans_file` | `'bans.json'` | the ban list (XUID, name or IP/CIDR, reason, expiry), handled as `allowlist_file` |
//	| `log.level` | `'info'` | trace, debug (one line per session), info (lifecycle), warn or error |
//	| `log.format` | `'console'` | `"console"` for human-readable lines (coloured only on a terminal), `"json"` for one JSON object per line |
//	| `log.file` | `''` | file the log goes to instead of standard error, rotated by size (lumberjack); relative to the config file, its directory created if missing; `''` means standard error |
//	| `log.file_max_mib` | `100` | size in MiB at which `log.file` is rotated (1–10240) |
//	| `log.file_backups` | `5` | rotated log files kept; 0 keeps them all |
//	| `raknet.max_mtu` | `1400` | largest RakNet datagram offered in MTU discovery (576–1492) |
//	| `raknet.max_connections` | `0` | RakNet connections per listener; 0 means max_players plus 10% (at least 4), so clients over the limit still see "server full" |
//	| `raknet.timeout` | `'10s'` | drop a connection silent this long (more than 0, at most 5m) |
//	| `raknet.protocol_versions` | `[11, 10]` | RakNet protocol versions accepted: 11 (Minecraft since 1.19.30) and/or 10 (older, PrismarineJS clients); no other is allowed |
//	| `raknet.max_connections_per_ip` | `16` | established connections from one IP address per listener; generous, since households and LAN parties share one address; 0 means no limit |
//	| `raknet.memory_budget` | `134217728` | bytes (128 MiB) that all peers of a listener together may make it hold at once: messages in reassembly, out of order or unread (4 MiB–64 GiB) |
//	| `metrics.address` | `''` | TCP address of the HTTP server of Prometheus metrics at `/metrics`, such as `"127.0.0.1:9100"`; `""` serves none (see Metrics (go doc ./server/monitor)) |
//	| `metrics.pprof` | `false` | also serve Go's profiler at `/debug/pprof/` on `metrics.address` |
package config
