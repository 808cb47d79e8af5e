// Command flood reruns the attacks of the listener hardening issue over
// loopback against a Basalt server in a child process and prints what
// each one did: honest joins, amplification, datagrams to spoofed
// sources after the flood, the server's memory and CPU, echo latency,
// slots taken.
//
//	go run ./scripts/flood              # every attack
//	go run ./scripts/flood -attack ocr2,reflect
//
// Every attack is bounded in count and time and sends only to 127.0.0.0/8.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/basaltmc/basalt/integration/attack"
	goraknet "github.com/sandertv/go-raknet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// attackCase is one attack: the server it needs and how to run it.
type attackCase struct {
	name, server string
	maxConn      int
	run          func(c *child) (params, figures string)
}

var attacks = []attackCase{
	{"ocr2-slow", "bedrock", 0, ocr2Slow},
	{"ocr2", "bedrock", 0, ocr2Flood},
	{"ocr2-raknet", "raknet", 24, ocr2Raknet},
	{"ocr2-nocap", "raknet", 0, ocr2NoCap},
	{"reflect", "raknet", 0, reflect},
	{"ocr1-18", "raknet", 0, amplify("OCR1 of 18 bytes", attack.OCR1(attack.OCR1MinSize))},
	{"ocr2-amp", "raknet", 0, amplify("OCR2, no cookie", attack.OCR2(attack.NoCookie))},
	{"ping", "bedrock", 0, pingFlood},
	{"ping-one", "bedrock", 0, pingOne},
	{"hold", "raknet", 0, hold},
	{"acks", "raknet", 0, ackFlood},
	{"big", "raknet", 0, bigFlood},
	{"junk", "raknet", 0, junk},
	{"grab", "raknet", 24, grab},
}

func main() {
	serveKind := flag.String("serve", "", "run as the server under attack (raknet or bedrock); used internally")
	maxConn := flag.Int("maxconn", 0, "with -serve: MaxConnections")
	only := flag.String("attack", "", "comma-separated attacks to run (default all): "+names())
	flag.Parse()
	if *serveKind != "" {
		if err := serve(*serveKind, *maxConn); err != nil {
			fmt.Fprintln(os.Stderr, "flood:", err)
			os.Exit(1)
		}
		return
	}
	want := strings.Split(*only, ",")
	fmt.Println("| attack | parameters | figures |")
	fmt.Println("|---|---|---|")
	for _, a := range attacks {
		if *only != "" && !slices.Contains(want, a.name) {
			continue
		}
		c, err := startChild(a.server, a.maxConn)
		if err != nil {
			fmt.Fprintln(os.Stderr, "flood:", err)
			os.Exit(1)
		}
		params, figures := a.run(c)
		c.stop()
		fmt.Printf("| %s | %s (%s server) | %s |\n", a.name, params, a.server, figures)
	}
}

func names() string {
	var n []string
	for _, a := range attacks {
		n = append(n, a.name)
	}
	return strings.Join(n, ", ")
}

func target(c *child) netip.AddrPort { return netip.MustParseAddrPort(c.addr) }

// flood runs s in the background; the returned function waits for it.
func flood(s attack.Spoofer) func() *attack.Report {
	done := make(chan *attack.Report, 1)
	go func() {
		r, err := s.Run(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "flood:", err)
			r = &attack.Report{}
		}
		done <- r
	}()
	return func() *attack.Report { return <-done }
}

// joinBedrock joins with gophertunnel and reports how it ended.
func joinBedrock(addr string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	conn, err := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Steve"}}.DialContext(ctx, "raknet", addr)
	took := time.Since(start).Round(time.Millisecond)
	if conn != nil {
		_ = conn.Close()
	}
	var de minecraft.DisconnectError
	if errors.As(err, &de) {
		return fmt.Sprintf("gophertunnel reached the disconnect message in %v", took)
	}
	return fmt.Sprintf("gophertunnel failed after %v (%v)", took, shortErr(err))
}

// joinRaknet dials with go-raknet and echoes 10 messages.
func joinRaknet(addr string, timeout time.Duration) string {
	start := time.Now()
	c, err := goraknet.Dialer{}.DialTimeout(addr, timeout)
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		return fmt.Sprintf("go-raknet failed after %v (%v)", took, shortErr(err))
	}
	defer c.Close()
	e := newEchoer(c).echo(10, 10*time.Millisecond, time.Second)
	return fmt.Sprintf("go-raknet joined in %v, echo %v", took, e)
}

func shortErr(err error) string {
	s := fmt.Sprint(err)
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// ocr2Slow is the smallest lockout: 25 spoofed sources sending
// 10 OCR2 a second in all.
func ocr2Slow(c *child) (string, string) {
	wait := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(25, 1), Shape: attack.OCR2(attack.NoCookie),
		Rate: 10, Count: 60, Duration: 6 * time.Second,
	})
	time.Sleep(3 * time.Second)
	j := joinBedrock(c.addr, 4*time.Second)
	r := wait()
	return "OCR2 without OCR1, 25 sources, 10/s (340 B/s), join after 3 s", fmt.Sprintf("%s; %d sent", j, r.Sent.Datagrams)
}

// ocr2Flood is the worst: 20,000 OCR2/s from 10,000 sources,
// half without cookie, half with a forged one.
func ocr2Flood(c *child) (string, string) {
	before := c.sample()
	wait := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(10000, 40), Shape: attack.OCR2(attack.MixedCookies),
		Rate: 20000, Count: 100000, Duration: 5 * time.Second,
	})
	time.Sleep(time.Second)
	j := joinBedrock(c.addr, 4*time.Second)
	r := wait()
	after := c.sample()
	return "OCR2 no/forged cookie, 10,000 sources, 20,000/s, 5 s", fmt.Sprintf("%s; %.0f/s sent, %.2fx back; server CPU %.0f%%, RSS %s → %s",
		j, r.Rate(), r.Amplification(), 100*cpuShare(before, after), mib(before.rss), mib(after.rss))
}

// ocr2Raknet is ocr2Flood against a raknet listener capped at 24 (a
// server for 20 players), joined by go-raknet.
func ocr2Raknet(c *child) (string, string) {
	wait := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(10000, 40), Shape: attack.OCR2(attack.MixedCookies),
		Rate: 20000, Count: 60000, Duration: 3 * time.Second,
	})
	time.Sleep(time.Second)
	j := joinRaknet(c.addr, 4*time.Second)
	r := wait()
	return "OCR2 no/forged cookie, 10,000 sources, 20,000/s, MaxConnections 24", fmt.Sprintf("%s; %.0f/s sent", j, r.Rate())
}

// ocr2NoCap floods a listener with no connection cap (the library
// default) and watches its memory.
func ocr2NoCap(c *child) (string, string) {
	before := c.sample()
	r := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(10000, 40), Shape: attack.OCR2(attack.MixedCookies),
		Rate: 20000, Count: 100000, Duration: 5 * time.Second,
	})()
	after := c.sample()
	j := joinRaknet(c.addr, 4*time.Second)
	return "OCR2 no/forged cookie, 10,000 sources, 20,000/s, 5 s, MaxConnections 0", fmt.Sprintf("RSS %s → %s, server CPU %.0f%%, %.0f/s sent; then %s",
		mib(before.rss), mib(after.rss), 100*cpuShare(before, after), r.Rate(), j)
}

// reflect is OCR2 + ConnectionRequest per victim, listened to for 15 s
// after.
func reflect(c *child) (string, string) {
	r := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(1000, 4), Shape: attack.Seq(attack.OCR2(attack.NoCookie), attack.ConnectionRequest()),
		Rate: 5000, Count: 2000, Duration: 5 * time.Second, Linger: 15 * time.Second,
	})()
	return "OCR2 + ConnectionRequest, 1,000 victims, 15 s after", fmt.Sprintf("%.2fx the bytes; after the flood %d datagrams (%d bytes) to %d victims; %s",
		r.Amplification(), r.After.Datagrams, r.After.Bytes, r.AfterSources, byID(r))
}

func byID(r *attack.Report) string {
	var parts []string
	for id, c := range r.ByID {
		parts = append(parts, fmt.Sprintf("%s %d", attack.IDName(id), c.Datagrams))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func amplify(what string, shape attack.Shape) func(c *child) (string, string) {
	return func(c *child) (string, string) {
		r := flood(attack.Spoofer{
			Target: target(c), Sources: attack.Sources(1000, 4), Shape: shape,
			Rate: 5000, Count: 1000, Duration: 5 * time.Second, Linger: 2 * time.Second,
		})()
		return what + ", 1,000 sources", fmt.Sprintf("%.2fx the bytes (%d back for %d sent); %d datagrams after the flood; %s",
			r.Amplification(), r.Received.Bytes, r.Sent.Bytes, r.After.Datagrams, byID(r))
	}
}

// pingFlood pings from 1,000 sources in 4 /24s at 10,000/s.
func pingFlood(c *child) (string, string) {
	r := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(1000, 4), Shape: attack.Ping(),
		Rate: 10000, Count: 20000, Duration: 2 * time.Second,
	})()
	return "unconnected pings, 1,000 sources in 4 /24s, 10,000/s", fmt.Sprintf("%.2fx the bytes; %d pongs (%d bytes) to one /24 in a second",
		r.Amplification(), r.MaxPrefixDatagramsPerSecond, r.MaxPrefixBytesPerSecond)
}

// pingOne pings from one source at 500/s.
func pingOne(c *child) (string, string) {
	r := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(1, 1), Shape: attack.Ping(),
		Rate: 500, Count: 1000, Duration: 2 * time.Second,
	})()
	return "unconnected pings, one source, 500/s, 2 s", fmt.Sprintf("%d pongs back of %d, %.2fx the bytes", r.Received.Datagrams, r.Sent.Datagrams, r.Amplification())
}

// hold has 20 connections each hold 32 MiB of split messages never
// finished and 32 MiB of ordered messages ahead of a gap.
func hold(c *child) (string, string) {
	const n = 20
	before := c.sample()
	clients, err := dialMany(target(c), n, 100)
	if err != nil {
		return "hold", err.Error()
	}
	defer abandon(clients)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sent int
	done := make(chan int, n)
	for _, cl := range clients {
		go func() {
			s, _ := cl.OpenSplits(ctx, (32<<20)/(63*cl.MaxPayload(attack.Reliable, true))+1, 63)
			o, _ := cl.OrderedAhead(ctx, (32<<20)/cl.MaxPayload(attack.ReliableOrdered, false)+1, 1024)
			done <- s.Bytes + o.Bytes
		}()
	}
	for range n {
		sent += <-done
	}
	time.Sleep(time.Second)
	after := c.sample()
	return "20 connections, each 32 MiB split never finished + 32 MiB ordered ahead", fmt.Sprintf("sent %s; server RSS %s → %s", mib(int64(sent)), mib(before.rss), mib(after.rss))
}

// ackFlood sends 28 KB ACKs of 4,096 records from one connection as fast
// as it can for 5 s while an honest client echoes.
func ackFlood(c *child) (string, string) {
	clients, err := dialMany(target(c), 1, 150)
	if err != nil {
		return "acks", err.Error()
	}
	defer abandon(clients)
	honest, err := goraknet.Dialer{}.DialTimeout(c.addr, 2*time.Second)
	if err != nil {
		return "acks", err.Error()
	}
	defer honest.Close()
	before := c.sample()
	done := make(chan attack.Counts, 1)
	go func() {
		s, _ := clients[0].AckFlood(context.Background(), attack.MaxAckRecords, 0, attack.MaxCount, 5*time.Second)
		done <- s
	}()
	e := newEchoer(honest).echo(100, 40*time.Millisecond, time.Second)
	s := <-done
	after := c.sample()
	return "ACKs of 4,096 records (28,675 B) from one connection, max rate, 5 s", fmt.Sprintf("%.0f ACKs/s; server CPU %.0f%%; honest echo %v",
		float64(s.Datagrams)/5, 100*cpuShare(before, after), e)
}

// bigFlood sends 64 KiB datagrams from spoofed sources as fast as it can.
func bigFlood(c *child) (string, string) {
	honest, err := goraknet.Dialer{}.DialTimeout(c.addr, 2*time.Second)
	if err != nil {
		return "big", err.Error()
	}
	defer honest.Close()
	before := c.sample()
	wait := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(1000, 4), Shape: attack.Big(attack.MaxUDPPayload),
		Count: attack.MaxCount, Duration: 4 * time.Second,
	})
	e := newEchoer(honest).echo(100, 30*time.Millisecond, time.Second)
	r := wait()
	after := c.sample()
	return "65,507-byte datagrams, 1,000 sources, max rate, 4 s", fmt.Sprintf("%.0f/s (%.0f MB/s); server CPU %.0f%%; honest echo %v",
		r.Rate(), float64(r.Sent.Bytes)/r.Elapsed.Seconds()/1e6, 100*cpuShare(before, after), e)
}

// junk floods random bytes and datagrams from unknown addresses.
func junk(c *child) (string, string) {
	honest, err := goraknet.Dialer{}.DialTimeout(c.addr, 2*time.Second)
	if err != nil {
		return "junk", err.Error()
	}
	defer honest.Close()
	ec := newEchoer(honest)
	before := ec.echo(200, 5*time.Millisecond, time.Second)
	u0 := c.sample()
	wait := flood(attack.Spoofer{
		Target: target(c), Sources: attack.Sources(10000, 40), Shape: attack.Junk(1400),
		Count: attack.MaxCount, Duration: 3 * time.Second, Seed: 1,
	})
	during := ec.echo(400, 5*time.Millisecond, time.Second)
	r := wait()
	u1 := c.sample()
	return "random bytes + data datagrams from unknown sources, 10,000 sources, max rate, 3 s", fmt.Sprintf("%.0f/s; server CPU %.0f%%; echo before %v; during %v",
		r.Rate(), 100*cpuShare(u0, u1), before, during)
}

// grab opens 500 connections from one IP, then joins from another.
func grab(c *child) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := attack.Grab(ctx, attack.ClientAddr(4), target(c), 500, 32)
	defer g.Close()
	j := joinRaknet(c.addr, 2*time.Second)
	return "one IP, 500 ports, MaxConnections 24", fmt.Sprintf("%d slots taken, %d refused; then from 127.0.0.1: %s", len(g.Clients), g.Refused[attack.IDNoFreeIncomingConnections], j)
}

func dialMany(server netip.AddrPort, n, first int) ([]*attack.Client, error) {
	var out []*attack.Client
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err := attack.Dial(ctx, attack.ClientConfig{Local: netip.AddrPortFrom(attack.ClientAddr(first+i), 0), Server: server})
		cancel()
		if err != nil {
			abandon(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func abandon(cs []*attack.Client) {
	for _, c := range cs {
		c.Abandon()
	}
}
