package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// playersConfig is one `bench players` invocation.
type playersConfig struct {
	n          int           // players per server
	dur        time.Duration // measured window
	settle     time.Duration // after the joins, before the window
	dialers    int           // players joining at once
	transports []transport
	impls      []playerImpl
	loss       float64 // NetherNet players' datagrams lost each way
	runs       int
	profileDir string
	log        io.Writer // progress
}

// playersResult is one server's figures in one run.
type playersResult struct {
	im     playerImpl
	t      transport
	run    int
	joined int
	fails  int
	joins  latencies
	// listRTT is the /list round trips over the window.
	listRTT latencies
	// Per player over the window: server CPU (ms/s), RSS and goroutines
	// over the server's own before any player joined.
	cpu, rssKiB, gor float64
	// ticks and lists are the PlayerAuthInput batches sent and the /list
	// answers read per player per second over the window.
	ticks, lists float64
	inWorld      int64 // players the server counted in its world
	err          error
}

// cpu20 is the server CPU per player scaled to 20 ticks a second: on a
// loaded machine the clients, sharing it with the server, may send
// fewer, and a server is not cheaper for being sent less.
func (r playersResult) cpu20() float64 {
	if r.ticks <= 0 {
		return 0
	}
	return r.cpu * 20 / r.ticks
}

// perCore is the players at 20 Hz one core of server CPU holds.
func (r playersResult) perCore() float64 {
	if c := r.cpu20(); c > 0 {
		return 1000 / c
	}
	return 0
}

// playerImpls are the servers of the players phase, Basalt first and the
// anchor after it.
var playerImpls = []playerImpl{playerBasalt, playerGophertunnel}

// runPlayers runs the players phase: every transport of cfg on both
// servers, cfg.runs times, the two servers one after the other so that a
// ratio compares figures taken under the same load on the machine.
func runPlayers(cfg playersConfig) []playersResult {
	var out []playersResult
	for run := 1; run <= cfg.runs; run++ {
		for _, t := range cfg.transports {
			for _, im := range cfg.impls {
				r := measurePlayers(cfg, im, t)
				r.run = run
				if r.err != nil {
					fmt.Fprintf(cfg.log, "players: run %d %s %s: %v\n", run, im, t, r.err)
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// measurePlayers starts a server of im over t, joins cfg.n players, runs
// the game-tick workload for cfg.dur and measures the server.
func measurePlayers(cfg playersConfig, im playerImpl, t transport) playersResult {
	r := playersResult{im: im, t: t}
	c, err := startChildArgs("player-server", "-impl", string(im), "-transport", string(t))
	if err != nil {
		r.err = fmt.Errorf("start server: %w", err)
		return r
	}
	defer c.stop()
	// The server's own memory and goroutines, before any player.
	if _, err := c.liveHeap(); err != nil {
		r.err = err
		return r
	}
	rss0, err := c.rss()
	if err != nil {
		r.err = err
		return r
	}
	gor0, _, err := c.stats()
	if err != nil {
		r.err = err
		return r
	}

	players, fails, firstErr := joinPlayers(t, c.addr, cfg.n, cfg.dialers, cfg.loss)
	r.joined, r.fails = len(players), fails
	var joins []time.Duration
	for _, p := range players {
		joins = append(joins, p.join)
	}
	r.joins = summarise(joins)
	fmt.Fprintf(cfg.log, "players: %s %s: %d joined (%d failed), join %v\n", im, t, len(players), fails, r.joins)
	if firstErr != nil {
		fmt.Fprintf(cfg.log, "players: %s %s: first join error: %v\n", im, t, firstErr)
	}
	var wg sync.WaitGroup
	defer closePlayers(players, &wg, closeWait)
	if len(players) == 0 {
		r.err = errors.New("no player joined")
		return r
	}
	stop := make(chan struct{})
	defer close(stop)
	for i, p := range players {
		wg.Go(p.reader)
		// Spread the players' ticks evenly over the tick.
		wg.Go(func() { p.play(time.Duration(i)*playerTick/time.Duration(len(players)), stop) })
	}
	time.Sleep(cfg.settle) // a real wait: the workload reaches its steady state

	var prof bool
	if cfg.profileDir != "" {
		path := filepath.Join(cfg.profileDir, fmt.Sprintf("players-%s-%s.pprof", im, t))
		if err := c.startProfile(path); err != nil {
			fmt.Fprintf(cfg.log, "players: profile: %v\n", err)
		} else {
			prof = true
		}
	}
	sent0, lists0 := sumPlayers(players)
	for _, p := range players {
		p.measuring.Store(true)
	}
	m := meterCPU(c)
	time.Sleep(cfg.dur) // a real wait: the measured window
	cpu, wall, cerr := m.used()
	sent1, lists1 := sumPlayers(players)
	var rtts []time.Duration
	for _, p := range players {
		p.measuring.Store(false)
		rtts = append(rtts, p.listRTTs()...)
	}
	r.listRTT = summarise(rtts)
	if prof {
		if err := c.stopProfile(); err != nil {
			fmt.Fprintf(cfg.log, "players: profile: %v\n", err)
		}
	}
	if cerr != nil {
		r.err = cerr
		return r
	}
	rss, err := c.rss()
	if err != nil {
		r.err = err
		return r
	}
	gor, inWorld, err := c.stats()
	if err != nil {
		r.err = err
		return r
	}
	if cfg.profileDir != "" {
		path := filepath.Join(cfg.profileDir, fmt.Sprintf("players-%s-%s.goroutines", im, t))
		if err := c.command("goroutines "+path, "goroutines "); err != nil {
			fmt.Fprintf(cfg.log, "players: goroutines: %v\n", err)
		}
		path = filepath.Join(cfg.profileDir, fmt.Sprintf("players-%s-%s.heap", im, t))
		if err := c.command("heapprofile "+path, "heapprofile "); err != nil {
			fmt.Fprintf(cfg.log, "players: heap profile: %v\n", err)
		}
	}
	n := float64(len(players))
	r.cpu = ms(cpu) / wall.Seconds() / n
	r.rssKiB = float64(rss-rss0) / 1024 / n
	r.gor = float64(gor-gor0) / n
	r.ticks = float64(sent1-sent0) / wall.Seconds() / n
	r.lists = float64(lists1-lists0) / wall.Seconds() / n
	r.inWorld = inWorld
	for _, p := range players {
		if err := p.werr.Load(); err != nil {
			r.err = fmt.Errorf("%s stopped sending: %w", p.name, *err)
			break
		}
	}
	fmt.Fprintf(cfg.log, "players: %s %s: server CPU %v over %v; per player %.2f ms/s, %.0f KiB RSS, %.1f goroutines; %.1f ticks/s and %.2f /list answers/s per player; %d in the world; /list round trip %v\n",
		im, t, cpu, wall.Round(time.Millisecond), r.cpu, r.rssKiB, r.gor, r.ticks, r.lists, inWorld, r.listRTT)
	return r
}

// sumPlayers returns the ticks sent and /list answers read by all of ps.
func sumPlayers(ps []*benchPlayer) (sent, lists int64) {
	for _, p := range ps {
		sent += p.sent.Load()
		lists += p.lists.Load()
	}
	return sent, lists
}

// printPlayers writes the players phase's table: each server's figures
// per run and Basalt's ratio to gophertunnel's in the same run.
func printPlayers(w io.Writer, cfg playersConfig, rs []playersResult) {
	fmt.Fprintf(w, "players: %d players, %v measured, PlayerAuthInput at 20 Hz and /list at 1 Hz each", cfg.n, cfg.dur)
	if cfg.loss > 0 {
		fmt.Fprintf(w, "; NetherNet players lose %g%% of datagrams each way", 100*cfg.loss)
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintln(w, "| run | server | transport | joined | join p50 / p99 (ms) | /list round trip p50 / p99 (ms) | ticks/s sent per player | server CPU per player at 20 Hz (ms/s) | RSS per player (KiB) | goroutines per player | players per core at 20 Hz |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.joined == 0 {
			fmt.Fprintf(w, "| %d | %s | %s | 0 of %d | - | - | - | - | - | - | - |\n", r.run, r.im, r.t, cfg.n)
			continue
		}
		fmt.Fprintf(w, "| %d | %s | %s | %d of %d | %.1f / %.1f | %.1f / %.1f | %.1f | %.2f | %.0f | %.1f | %.0f |\n",
			r.run, r.im, r.t, r.joined, cfg.n, ms(r.joins.P50), ms(r.joins.P99), ms(r.listRTT.P50), ms(r.listRTT.P99),
			r.ticks, r.cpu20(), r.rssKiB, r.gor, r.perCore())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | transport | join p50 | server CPU per player | RSS per player | goroutines per player |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, b := range rs {
		if b.im != playerBasalt {
			continue
		}
		i := slices.IndexFunc(rs, func(g playersResult) bool {
			return g.im == playerGophertunnel && g.t == b.t && g.run == b.run
		})
		if i < 0 {
			continue
		}
		g := rs[i]
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s |\n", b.run, b.t,
			times(ms(b.joins.P50), ms(g.joins.P50)), times(b.cpu20(), g.cpu20()), times(b.rssKiB, g.rssKiB), times(b.gor, g.gor))
	}
}

// times formats b/g, or "-" when it has no meaning.
func times(b, g float64) string {
	if b <= 0 || g <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", b/g)
}

// cmdPlayers is `bench players`.
func cmdPlayers(args []string) error {
	fs := flag.NewFlagSet("players", flag.ContinueOnError)
	n := fs.Int("n", 20, "players per server")
	dur := fs.Duration("duration", 5*time.Second, "measured window")
	settle := fs.Duration("settle", time.Second, "wait after the joins before the window")
	dialers := fs.Int("dialers", 4, "players joining at once")
	ts := fs.String("transports", "raknet,nethernet", "comma-separated transports")
	ims := fs.String("impls", "basalt,gophertunnel", "comma-separated servers")
	runs := fs.Int("runs", 1, "repeat every measurement this many times")
	loss := fs.Float64("loss", 0, "percentage of datagrams NetherNet players lose each way, in [0, 50]")
	profDir := fs.String("cpuprofile", "", "write each server's CPU profile over the window, and its goroutines and live heap at the end, into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := playersConfig{n: *n, dur: *dur, settle: *settle, dialers: *dialers, runs: *runs, loss: *loss / 100, log: os.Stderr}
	if *loss < 0 || *loss > 50 {
		return fmt.Errorf("-loss %g: want a percentage in [0, 50]", *loss)
	}
	if cfg.n < 1 || cfg.n > 2000 {
		return fmt.Errorf("-n %d: want 1 to 2000", cfg.n)
	}
	if cfg.dur <= 0 || cfg.dur > 10*time.Minute || cfg.settle < 0 || cfg.settle > time.Minute {
		return fmt.Errorf("-duration %v, -settle %v: want a window of up to 10m and a settle of up to 1m", cfg.dur, cfg.settle)
	}
	if cfg.runs < 1 || cfg.runs > 20 {
		return fmt.Errorf("-runs %d: want 1 to 20", cfg.runs)
	}
	for f := range strings.SplitSeq(*ts, ",") {
		t, err := parseTransport(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		cfg.transports = append(cfg.transports, t)
	}
	for f := range strings.SplitSeq(*ims, ",") {
		im, err := parsePlayerImpl(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		cfg.impls = append(cfg.impls, im)
	}
	if *profDir != "" {
		dir, err := filepath.Abs(*profDir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cfg.profileDir = dir
	}
	if _, err := raiseNoFile(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: cannot raise RLIMIT_NOFILE: %v\n", err)
	}
	defer stopChildren()
	rs := runPlayers(cfg)
	printPlayers(os.Stdout, cfg, rs)
	for _, r := range rs {
		if r.err != nil {
			return fmt.Errorf("%s %s: %w", r.im, r.t, r.err)
		}
	}
	return nil
}
