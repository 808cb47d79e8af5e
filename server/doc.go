// Package server ties the RakNet and NetherNet listeners, the live MOTD and
// the Bedrock sessions together: a Server owns the listeners (IPv4, IPv6,
// the LAN discovery ports and NetherNet), a GUID kept across restarts, the
// session registry, the player limit and the shutdown.
//
// Configuration flows from config.toml (package config: UserConfig, Load)
// to runtime values (UserConfig.Config gives a Config, nested as the file
// is) to a Server (Config.New, which gives every zero field its default;
// the zero value is the safe choice: online mode, encrypted):
//
//	uc, err := config.Load("config.toml") // written if missing
//	if err != nil { ... }
//	conf, err := uc.Config(&log)
//	if err != nil { ... }
//	conf.NewHandler = newPlayer // optional: nil is session.Gate
//	err = conf.New().Run(ctx)   // serves until ctx ends, then shuts down
//
// Every accepted connection runs a session.Session in its own goroutine,
// which logs the player in (network settings, protocol check, Login, with
// the encryption handshake unless Config.EncryptionDisabled); the server
// then gives the player a slot and calls the configured NewHandler for its
// handler. A handler that panics or fails ends its own session only. On
// Close (or when Run's context ends) every session is disconnected with the
// shutdown message, and the server waits a bounded time for the clients to
// acknowledge it.
//
// The package keeps the lifecycle (lifecycle.go), one file per transport
// (transport_raknet.go, transport_nethernet.go), the session registry
// (registry.go) and admission (online.go, tracker.go). Other jobs have
// rooms of their own: config (config.toml), access (the allowlist and ban
// list), console (the operator's commands), monitor (the HTTP side:
// metrics, status, health), query (the Query protocol) and nethernet.
//
// # LAN discovery
//
//   - The client finds LAN servers by broadcasting an unconnected ping to UDP
//     port 19132 (IPv4) and 19133 (IPv6) and lists whoever answers. The
//     answer carries the game ports, and the client connects there.
//   - If `address_v4` / `address_v6` use other ports, `network.lan_discovery`
//     (on by default) opens extra listeners on `0.0.0.0:19132` and `[::]:19133`
//     that answer with the same GUID and MOTD (and serve sessions too). If one of
//     those ports is taken, say by another server, the server logs a warning and
//     runs without it. Only a socket bound to the wildcard address receives
//     broadcasts, so a server bound to one address is not listed on the LAN.
//   - Firewalls: what to open (UDP 19132 and 19133, TCP 19132 for NetherNet,
//     UDP 7551 on the LAN), with ufw, nftables and a cloud security group, is
//     the README's Ports and firewall.
//     UDP alone locks out 1.26.60 and later clients. Docker bridge networks
//     drop broadcasts: use host networking to be seen on the LAN.
//   - Windows (Microsoft Store/UWP build): the game may not reach a server on
//     the same PC (`127.0.0.1`) until loopback is allowed, in an administrator
//     prompt:
//     `CheckNetIsolation LoopbackExempt -a -n="Microsoft.MinecraftUWP_8wekyb3d8bbwe"`.
//     Whether the newer GDK build still needs this is unverified.
//   - With NetherNet on, `network.lan_discovery` also answers NetherNet LAN
//     discovery on UDP 7551 (what 1.26.50+ clients ask), under the same GUID,
//     name and player count, so a client lists one server; players join from
//     the list over NetherNet, signalled on that port.
//   - Nintendo Switch does not list RakNet LAN servers; Xbox and PlayStation do.
//   - `go run ./scripts/ping -scan -broadcast 192.168.1.255` scans one subnet;
//     the default target, 255.255.255.255, covers the local network.
//
// # Scaling out
//
// Many cores. `network.sockets = N` (Linux) opens N sockets on each
// game address with `SO_REUSEPORT`, each read by its own goroutine, over one
// connection table: the kernel hashes each flow (client address and port) to
// one socket, and a datagram that arrives on another (a restarted client
// whose new flow hashes elsewhere) still finds its connection. On Linux
// every socket reads and writes in batches (`recvmmsg`, `sendmmsg`). It pays
// only with cores to spare: on two cores the load generator takes one of
// them, and 2 sockets measured no better than 1.
//
// Many machines. Several Basalt servers can share one public address
// behind a UDP load balancer or DDoS filter:
//
//   - Consistent hashing on the client address. The balancer must send
//     every datagram of a client (address and port) to the same instance for
//     the life of its connection: RakNet keeps the connection's state (its
//     reliability windows, ordering, the session) on the instance that
//     accepted it. Hash on the source address and port (Maglev, rendezvous or
//     ring hashing, or the balancer's "source IP + port" affinity); round robin
//     breaks every connection.
//   - PROXY protocol for the real address. A balancer that rewrites the
//     source address hides the players behind its own: turn on
//     `network.proxy_protocol`, list the balancer's addresses in
//     `network.trusted_proxies`, and have it prepend a PROXY v1 or v2 header
//     (see Behind a tunnel or filter (go doc ./raknet)), so per-IP
//     limits, cookies, logs and bans see the player. A tested nginx recipe is
//     in Several instances behind a load
//     balancer (below).
//   - A shared cookie key. OpenConnectionReply1's cookie is keyed by
//     `network.cookie_secret_file`. Give every instance the same file (and
//     clocks within a few seconds: a cookie lives 10 to 20 s) so an instance
//     accepts the OpenConnectionRequest2 of a handshake another instance
//     started, which happens when the balancer's hashing changes (an instance
//     added or removed) between a client's two requests. The same secret keys
//     the Query tokens, so a Query client served by two instances works too.
//   - One GUID. Clients identify a server by the GUID in its pongs (the
//     pong header and MOTD field 6 must agree) and list a server whose GUID
//     changes between pings as a new one. Give every instance the same
//     `server.guid_file` contents so pongs from any instance look the same;
//     the GUID is not part of the connection key, so instances sharing it
//     never confuse connections.
//   - Players and MOTD. Each instance counts its own players. A
//     `server.StatusProvider` can advertise the total of all instances (and
//     their combined limit), read from wherever they report it.
//
// # Several instances behind a load balancer
//
// The recipe below is the one `integration/nginx_test.go` runs: Debian's nginx
// 1.22.1 with its stream module in front of two processes of the `basalt`
// command built from this repository, listening on one address for TCP
// (NetherNet's signalling) and UDP (RakNet), with PROXY headers on both.
// gophertunnel players join through it over both transports (at least 4
// over RakNet, with a go-raknet client beside them, and 8 over NetherNet),
// both instances get players of each, each instance logs every player by its own address
// and port, and one instance is stopped with SIGTERM while the other takes
// the new players. The test substitutes loopback addresses and ports,
// temporary files and a 2 s grace for the ones here, and adds only what a
// test needs (no IPv6 or LAN listener, the lobby, `online_mode = false`,
// JSON logs); everything else is as written.
//
// Two addresses, two jobs. Players type the balancer's address
// (`public_address`, which the RakNet pong advertises, so RakNet clients come
// back to nginx). NetherNet needs no UDP balancing: a player's client sends
// its offer over TCP, through nginx, and the instance that answers tells it
// where to send its UDP, in the ICE candidates of the answer. So each
// instance advertises an address of its own that reaches its UDP game port
// from the players (`nethernet_advertise_address`), and players' NetherNet
// datagrams go to it directly, past nginx. Its port must be the port the
// instance listens on (the game port, or `nethernet_ice_port`): ICE
// candidates are rewritten by address only, so a NAT in front of an
// instance must forward that port unchanged.
//
// One identity. A NetherNet client asks the player once to trust the key
// that signs the server's answers, and remembers it. Instances behind one
// address must sign with one key, or a player sent to another instance is
// asked again: give every instance the same `nethernet_identity_file`
// contents. Create it once (start one instance, which writes a P-384 key
// with mode 0600, and copy the file) and install it on every host, for
// example with the same configuration management that places
// `cookie_secret_file`; on Kubernetes keep it in a Secret
// (`kubectl create secret generic basalt-identity
// --from-file=nethernet_identity=./nethernet_identity`) mounted read-only at
// the path the key names, beside the cookie secret and the GUID file. A
// missing file is created, so a host or pod without it would quietly sign
// with a key of its own: install it before an instance first starts.
//
// Each instance's `config.toml` (the addresses are examples: nginx on
// 10.0.0.10, reached by players at 203.0.113.5:19132; this instance at
// 10.0.0.11, reached by players at 203.0.113.11):
//
//	[network]
//	address_v4 = "0.0.0.0:19132"
//	proxy_protocol = true
//	trusted_proxies = ["10.0.0.10"]
//	# The port pongs advertise: clients reconnect to it, so it must be nginx's.
//	public_address = "203.0.113.5:19132"
//	# Where this instance's NetherNet answers send players' UDP: its own
//	# address, a different one on every instance, with the game port.
//	nethernet_advertise_address = "203.0.113.11:19132"
//	# The same key on every instance: a player trusts the server once.
//	nethernet_identity_file = "/etc/basalt/nethernet_identity"
//	# The same file on every instance: a handshake may move between them.
//	cookie_secret_file = "/etc/basalt/cookie_secret"
//
//	[server]
//	# The same GUID on every instance, so the server is listed once.
//	guid_file = "/etc/basalt/server_guid"
//	shutdown_grace = "10s"
//
//	[metrics]
//	address = "10.0.0.11:9100"
//
// nginx (`apt-get install nginx libnginx-mod-stream` on Debian 12 or Ubuntu
// 24.04), in `/etc/nginx/nginx.conf` beside the `http` block:
//
//	stream {
//	    upstream basalt {
//	        hash $remote_addr$remote_port consistent;
//	        server 10.0.0.11:19132;
//	        server 10.0.0.12:19132;
//	    }
//	    server {
//	        listen 19132;                # NetherNet signalling, TCP
//	        listen 19132 udp reuseport;  # RakNet
//	        proxy_pass basalt;
//	        proxy_protocol on;
//	        proxy_timeout 60s;
//	    }
//	}
//
// What each line of it does:
//
//   - `listen 19132;` and `listen 19132 udp`: one address and port for both
//     transports, as players type it. Each instance's signalling is on TCP at
//     its game port's number, so the same `upstream` serves both.
//   - `hash $remote_addr$remote_port consistent`: every datagram of a client
//     (address and port) goes to the same instance, which holds its RakNet
//     connection; adding or removing an instance moves few clients. A
//     NetherNet offer is one HTTP request on a TCP connection of its own, and
//     any instance can answer it.
//   - `listen ... udp reuseport`: each client's flow stays on one nginx worker.
//   - `proxy_protocol on`, for both: on TCP, nginx starts each signalling
//     connection with a PROXY v1 header, which an instance reads from
//     `trusted_proxies` only (anyone else's connection is never read for one),
//     so NetherNet's per-address admission limits, refusal logs and bans see
//     the player, not nginx. On UDP, nginx 1.22 puts a PROXY v1 text header
//     (`PROXY TCP4 <player> <nginx> <player port> <nginx port>`, at most 107
//     bytes) on the first datagram of each flow. nginx 1.31.4 and later can send
//     v2 instead (`proxy_protocol v2;`, 35 bytes for IPv4 with its checksum).
//     Basalt takes both from `trusted_proxies`, and reads datagrams of up to
//     1748 bytes from them (1492 and 256 of header room), so a client's first
//     datagram, a 1464-byte MTU probe, is not lost with its header.
//   - `proxy_timeout 60s`, and no `proxy_responses`: a flow lives while
//     datagrams pass either way (RakNet pings every few seconds, and
//     `raknet.timeout` is 10 s); a `proxy_responses` count would end a flow
//     after that many replies.
//   - nginx's open-source edition has no active health checks: it notices a
//     stopped instance when a datagram to it fails (`max_fails=1`,
//     `fail_timeout=10s` by default) and sends that client's next flow to the
//     other. `server.shutdown_grace` makes a stop graceful: on SIGTERM
//     `/readyz` answers 503 at once (for balancers that do check it), players
//     logging in are told the server is restarting, the players in are told
//     too and play on until the grace ends, then every player gets
//     `server.shutdown_message` before the listeners close. A killed instance
//     tells nobody: its players time out (about 27 s in the game).
//   - Per-IP limits (`raknet.max_connections_per_ip`, 16, and NetherNet's
//     offers and negotiations per address) count each player's own address, as
//     the header names it. A trusted proxy's own address is never limited per
//     address on either transport: behind a proxy that sends no headers (a
//     tunnel, WaterdogPE) its players share its address, and 32 of them join
//     through one on each transport in `integration/proxy_players_test.go`.
//
// Firewalls. On nginx's host, open TCP and UDP 19132 to players. On each
// instance, open UDP 19132 to players (their NetherNet datagrams come
// straight to the advertised address; `nethernet_ice_port` instead when it
// is set), TCP and UDP 19132 to nginx's address (signalling and RakNet), and
// the metrics port to whatever scrapes it. An instance's TCP 19132 need not
// be open to players: a player who reached it directly would skip nginx, and
// without a header from a trusted address it is seen by its own address
// anyway.
//
// Kernel balancing (nftables DNAT, IPVS, kube-proxy) forwards datagrams
// with the client's own source address: no header, `proxy_protocol = false`,
// nothing to trust, and the per-IP limit counts each player's address as it
// is. Balance on source address and port, for example with nftables
// (`dnat to jhash ip saddr . udp sport mod 2 map { 0 : 10.0.0.11, 1 :
// 10.0.0.12 }`) or IPVS source hashing with the port (`ipvsadm -A -u
// 203.0.113.5:19132 -s sh -b sh-port`); set `public_address` when the
// balancer's port differs from the instances'. These two are not tested here.
//
// Kubernetes. RakNet is UDP and stateful: give each instance a Service of
// its own, or one UDP Service of type LoadBalancer with
// `externalTrafficPolicy: Local`, so that kube-proxy neither spreads one
// client's datagrams over pods nor replaces its address with a node's (which
// would put every player behind one IP and its per-IP limit). NetherNet
// splits the same way as behind nginx: its signalling is TCP and goes
// through a Service (any TCP load balancer; with one that sends PROXY
// headers, list its addresses in `trusted_proxies`), while each pod needs
// one UDP port reachable by players and advertised as its own: a `hostPort`
// equal to the `containerPort` (the port cannot be rewritten) on a node with
// a public address, and `nethernet_advertise_address` set to that node's
// address and the port, written into the pod's `config.toml` when it starts
// (an init container reading the node's address). Keep
// `nethernet_identity_file`, `cookie_secret_file` and the GUID in a Secret
// mounted into every pod. Point `readinessProbe` at `/readyz` and
// `livenessProbe` at `/healthz` on `metrics.address`, set `public_address`
// to the address players use, and let `terminationGracePeriodSeconds`
// exceed `server.shutdown_grace` plus 5 s for the shutdown message.
//
// Agones. Each GameServer gets its node's address and a port of its own:
// players reach that address directly with their own source address, so no
// header and no `proxy_protocol`, and the per-IP limit is the players'. For
// NetherNet use the `Passthrough` port policy with protocol `TCPUDP`
// (Agones picks a host port and makes the container port the same, which
// the advertised port must be): listen on it (`address_v4 =
// "0.0.0.0:<port>"`), and set `public_address` and
// `nethernet_advertise_address` to the GameServer's address and that port,
// from the SDK's GameServer status, before the server starts. Share one
// `nethernet_identity_file` through a Secret, or players are asked to trust
// every GameServer anew. Basalt does not embed the Agones SDK: a sidecar
// calls `Ready()` once `/readyz` answers 200, calls `Health()` only while
// `/healthz` answers (so a hung server is restarted), and calls `Shutdown()`
// when it should stop, which sends SIGTERM and starts the drain.
package server
