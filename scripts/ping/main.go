// Command ping asks Bedrock servers for their MOTD with RakNet unconnected
// pings, as the game's server list and LAN tab do.
//
// Ping one server and print every MOTD field (exit status 1 if it does not
// answer within the timeout):
//
//	go run ./scripts/ping 127.0.0.1:19132
//
// List the servers on the local network: one ping is broadcast to
// 255.255.255.255 on the LAN discovery port, and every answer that arrives
// within the timeout is listed (exit status 1 if none):
//
//	go run ./scripts/ping -scan [-port 19132] [-timeout 2s]
//
// Ask one server for its Query full stat instead (the GameSpy4 protocol
// PocketMine-MP and Basalt answer on the game port: name, version, map,
// players by name), sent to that address only:
//
//	go run ./scripts/ping -query 127.0.0.1:19132
//
// -broadcast replaces the broadcast address with a comma-separated list of
// addresses, each pinged the same way: a subnet broadcast such as
// 192.168.1.255, or plain server addresses such as 127.0.0.1:19132,[::1]:19133.
// An address without a port gets -port, by default 19132, or 19133 for an
// IPv6 address (the ports Bedrock servers use per family).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its arguments, output and exit status made explicit for
// tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scanMode := fs.Bool("scan", false, "list every server that answers a broadcast ping")
	queryMode := fs.Bool("query", false, "ask the one server given for its Query full stat instead of pinging it")
	port := fs.Int("port", 0, "port for addresses given without one (default 19132, or 19133 for an IPv6 address, Bedrock's defaults)")
	broadcast := fs.String("broadcast", "255.255.255.255", "with -scan: comma-separated addresses to ping instead of the IPv4 broadcast address")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for answers")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ping [-query] [-timeout 2s] [-port PORT] ADDR\n       ping -scan [-port PORT] [-broadcast ADDR,...] [-timeout 2s]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	portSet := false
	fs.Visit(func(f *flag.Flag) { portSet = portSet || f.Name == "port" })
	if (portSet && (*port < 1 || *port > 65535)) || *timeout <= 0 {
		fmt.Fprintln(stderr, "ping: -port must be 1-65535 and -timeout positive")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	p := *port

	if !*scanMode {
		if fs.NArg() != 1 {
			fs.Usage()
			return 2
		}
		if *queryMode {
			st, err := queryOne(ctx, withPort(fs.Arg(0), p))
			if err != nil {
				fmt.Fprintf(stderr, "ping: %v\n", err)
				return 1
			}
			st.print(stdout)
			return 0
		}
		a, err := pingOne(ctx, withPort(fs.Arg(0), p))
		if err != nil {
			fmt.Fprintf(stderr, "ping: %v\n", err)
			return 1
		}
		a.print(stdout)
		return 0
	}

	if fs.NArg() != 0 || *queryMode {
		fs.Usage()
		return 2
	}
	var targets []string
	for t := range strings.SplitSeq(*broadcast, ",") {
		if t = strings.TrimSpace(t); t != "" {
			targets = append(targets, withPort(t, p))
		}
	}
	answers, err := scan(ctx, targets)
	if err != nil {
		fmt.Fprintf(stderr, "ping: %v\n", err)
		return 1
	}
	if len(answers) == 0 {
		fmt.Fprintf(stderr, "ping: no server answered within %v\n", *timeout)
		return 1
	}
	for _, a := range answers {
		fmt.Fprintln(stdout, a.summary())
	}
	return 0
}

// withPort returns addr with port added if it has none: port, or when it
// is 0 the Bedrock default of the address's family, 19133 for an IPv6
// literal and 19132 otherwise. A bare IPv6 address ("::1") gets brackets.
func withPort(addr string, port int) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	host := strings.Trim(addr, "[]")
	if port == 0 {
		port = 19132
		if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() && !ip.Is4In6() {
			port = 19133
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
