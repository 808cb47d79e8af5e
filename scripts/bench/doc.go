// Command bench compares Basalt's RakNet transport with go-raknet.
//
//	go run ./scripts/bench server -addr 127.0.0.1:19132 -mode echo|sink [-impl basalt|goraknet]
//	go run ./scripts/bench echo -addr 127.0.0.1:19132 -n 1000 -size 100 [-impl basalt|goraknet]
//	go run ./scripts/bench ping -addr 127.0.0.1:19132 [-impl basalt|goraknet]
//	go run ./scripts/bench run [-quick] [-runs N] [-markdown] [-cpuprofile DIR]
//	    [-idle N] [-duration D] [-tick-clients 100,1000] [-phases a,b]
//	    [-cap-start N] [-cap-max N] [-cap-steps N] [-cap-duration D]
//	go run ./scripts/bench floor [-clients N] [-duration D] [-acks=true|false] [-extra N]
//	go run ./scripts/bench players [-n N] [-duration D] [-runs N] [-transports raknet,nethernet]
//
// server runs an echo server (every packet is written back) or a sink
// (packets and bytes are counted per connection; the 4-byte packet
// "\xfeSYN" is answered with "\xfeACK", the packet count and the byte count
// as big-endian uint64s). echo sends numbered packets, checks every echoed
// byte and the order and prints round-trip percentiles. ping prints a
// server's pong data. Both exit non-zero on any failure.
//
// run starts each server implementation as a child process, so that its
// CPU time and memory can be read from /proc, and drives the same
// go-raknet client workload against both: unconnected pings, handshakes,
// echo latency, unpaced streams, many clients, idle connections, game
// ticks (N clients each echoing 1 KiB every 50 ms), the capacity (the most
// game-tick clients a server holds with the round trip's p99 under 50 ms
// and no drops, found by a bounded search) and the stream and echo
// through a lossy proxy. It prints a table of both implementations with
// their ratios and the targets. With -runs N every phase runs N times and
// the table shows medians, the ratio being the median of the ratios each
// run measured; -markdown prints markdown tables, led by the headline
// figures; -cpuprofile writes the echo and game-tick servers' CPU profiles
// over their measured spans. Progress goes to stderr, the table to
// stdout. Every phase is bounded in count and time.
//
// floor measures the game-tick traffic against a server that only moves
// datagrams (plain UDP, a goroutine hand-off per message, no RakNet): the
// floor under the tick phases' server CPU per client on this machine.
//
// players is the players phase, one layer up: N Bedrock players
// (gophertunnel's client) join, spawn and send PlayerAuthInput at 20 Hz
// and /list once a second, against Basalt's lobby and against
// gophertunnel's own listener (the anchor), over RakNet and over
// NetherNet (ICE on loopback only), each player from its own loopback
// address. Each server runs as a child process (`bench player-server`)
// so that its CPU time and memory are read from /proc apart from the
// clients'. It prints per player the server CPU, RSS, goroutines and the
// join p50/p99, and Basalt's ratio to gophertunnel in the same run.
//
// # Benchmarks
//
// Micro-benchmarks sit beside the code (codecs, the reliability layer over a
// simulated link, the session batch codec); CI runs each once:
//
//	go test -run '^$' -bench . -benchmem ./raknet/... ./session/
//
// `scripts/bench` compares Basalt's RakNet server with go-raknet's under the
// same go-raknet client workload (pings, handshakes, echo, unpaced streams,
// many clients, idle connections, and the same through a lossy proxy) and
// prints both with their ratios. Each server runs as its own process so its
// CPU time and memory can be read from `/proc`:
//
//	go run ./scripts/bench run -quick      # about 2 minutes, 1,000 idle connections
//	go run ./scripts/bench run             # the full run, 5,000 idle connections
//	go run ./scripts/bench server -addr 127.0.0.1:19132 -mode echo
//	go run ./scripts/bench echo -addr 127.0.0.1:19132 -n 1000 -size 100
//
// Players per core. `go run ./scripts/bench run -phases capacity` finds
// the most game-tick clients (20 ticks a second, 1 KiB each way) a server
// holds with the round trip's p99 under 50 ms and no datagram dropped, and
// divides it by the server CPU it took. On a 2-core VM, with the clients on
// the same machine (they were the limit past 1,300), Basalt held 1,300
// clients at 59% of a core, about 2,200 players per core of server CPU;
// go-raknet held 400 at 34% (about 1,150 per core). At 100 and 1,000 game-tick
// clients Basalt's server CPU per client was 1.0x and 0.83x go-raknet's, with
// a p99 of 1 ms and 18 ms against go-raknet's 1 ms and 3.7 s (go-raknet's
// socket dropped 40,000 datagrams at 1,000 clients; Basalt's none). A plain
// UDP echo server that does no RakNet at all (`go run ./scripts/bench floor`)
// costs 0.86-0.99x and 0.72x of go-raknet's CPU on the same runs: most of a
// player's cost at tick is the Go runtime waking for each datagram
// (scripts/bench/PROFILE.md). Measure on your own
// machine: the figures move with it.
//
// # Bedrock players per core at 20 Hz
//
// `go run ./scripts/bench players` measures a player one layer up, at the
// Bedrock protocol: N players (gophertunnel v1.62.0's client, each from a
// loopback address of its own) join and spawn, then send PlayerAuthInput
// every 50 ms, as the game does, and /list once a second, reading all they
// get. They play against Basalt's lobby and against gophertunnel's own
// listener (the anchor, spawning players with `StartGame`), over RakNet and
// over NetherNet (ICE on loopback only). Each server runs in a process of
// its own; the phase prints, per player, its CPU and memory, goroutines,
// the join p50/p99 and Basalt's ratios to the anchor in the same run:
//
//	go run ./scripts/bench players                              # 20 players, 5 s each: about 30 s
//	go run ./scripts/bench players -n 60 -duration 20s -runs 2  # the table below
//
// On the 2-core VM of the figures above, clients on the same machine, four
// runs of 60 players for 20 s (server CPU per player scaled to the 20 ticks
// a second the clients were to send; players per core = 1 s divided by it):
//
//	| server | transport | players per core at 20 Hz | server CPU per player | RSS per player | join p50 / p99 |
//	|---|---|---|---|---|---|
//	| Basalt lobby | RakNet | 710-850 | 1.17-1.42 ms/s | 254-294 KiB | 8-17 / 22-96 ms |
//	| gophertunnel | RakNet | 390-870 | 1.15-2.56 ms/s | 249-287 KiB | 7-18 / 313-332 ms |
//	| Basalt lobby | NetherNet | 470-610 | 1.64-2.12 ms/s | 732-799 KiB | 17-30 / 28-96 ms |
//	| gophertunnel | NetherNet | 340-450 | 2.20-2.94 ms/s | 746-783 KiB | 19-52 / 32-93 ms |
//
// A RakNet player costs Basalt 0.46-1.02x of gophertunnel's server CPU
// and 0.98-1.09x its memory, run by run; a NetherNet player 0.59-0.81x the
// CPU and 0.95-1.07x the memory, 2.7 times a RakNet player's, most of it
// pion's (ICE, DTLS, SCTP and 19 goroutines per player). Where the CPU
// goes is in scripts/bench/PROFILE.md, under "A Bedrock player".
package main
