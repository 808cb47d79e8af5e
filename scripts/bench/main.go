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
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = cmdServer(os.Args[2:])
	case "echo":
		err = cmdEcho(os.Args[2:])
	case "ping":
		err = cmdPing(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "floor":
		err = cmdFloor(os.Args[2:])
	case "floor-server":
		err = cmdFloorServer(os.Args[2:])
	case "players":
		err = cmdPlayers(os.Args[2:])
	case "player-server":
		err = cmdPlayerServer(os.Args[2:])
	case "help", "-h", "-help", "--help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  bench server -addr HOST:PORT -mode echo|sink [-impl basalt|goraknet]
  bench echo -addr HOST:PORT -n N -size S [-impl basalt|goraknet] [-window W]
  bench ping -addr HOST:PORT [-impl basalt|goraknet]
  bench run [-quick] [-runs N] [-markdown] [-cpuprofile DIR] [-idle N] [-duration D]
            [-tick-clients 100,1000] [-tick-duration D] [-tick-per-addr N]
            [-cap-start N] [-cap-max N] [-cap-steps N] [-cap-duration D]
            [-phases ping,handshake,...] [-loss 1,5,10]
  bench floor [-clients N] [-duration D] [-acks=true|false] [-extra N]
  bench players [-n N] [-duration D] [-settle D] [-dialers N] [-runs N]
                [-transports raknet,nethernet] [-impls basalt,gophertunnel] [-cpuprofile DIR]
`)
}
