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
