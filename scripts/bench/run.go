package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
)

// runConfig sizes `bench run`. Every phase is bounded by these counts and
// durations and, as a backstop, by its own time limit.
type runConfig struct {
	phases map[string]bool // nil means all

	pingDur    time.Duration
	pingWindow int

	hsDur time.Duration
	hsMax int
	hsSeq int

	echoN     int
	echoLimit time.Duration

	streamDur           time.Duration
	stream1K, stream64K int64 // byte caps
	ackWait             time.Duration

	clients, clientPackets int
	multiAckWait           time.Duration

	idle          int
	idleDialLimit time.Duration
	idleSettle    time.Duration
	idleDur       time.Duration

	lossRates   []float64
	lossEchoN   int
	lossEchoLim time.Duration
	lossBytes   int64
	lossAckWait time.Duration
	proxyDelay  time.Duration
	proxyJitter time.Duration
	seed        uint64

	tickClients   []int // clients of each game-tick phase
	tickDur       time.Duration
	tickSettle    time.Duration
	tickGrace     time.Duration
	tickDialLimit time.Duration
	tickPerAddr   int

	// The capacity search: from capStart clients, doubling up to capMax,
	// at most capSteps game-tick runs of capDur each.
	capStart, capMax, capSteps int
	capDur                     time.Duration

	runs       int
	markdown   bool
	profileDir string // CPU profiles of the echo and tick servers go here
}

// val is one measurement: a number, a word ("died", "timeout", "yes") or
// both.
type val struct {
	v   float64
	has bool   // v is a measurement
	s   string // shown instead of v when set
	ok  *bool  // an explicit pass/fail for word values
}

func num(v float64) val  { return val{v: v, has: true} }
func note(s string) val  { return val{s: s} }
func (v val) set() bool  { return v.has || v.s != "" }
func (v val) word() bool { return v.s != "" }

// record collects one implementation's measurements and logs progress.
type record struct {
	im     impl
	run    int // 1-based
	phase  string
	log    io.Writer
	mu     sync.Mutex
	m      map[string]val
	status map[string]string // phase → "timeout" or "error" when it failed
}

func (r *record) set(key string, v val) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[key] = v
}

func (r *record) setOK(key string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.m[key]
	v.ok = &ok
	r.m[key] = v
}

func (r *record) get(key string) val {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[key]
}

func (r *record) logf(format string, args ...any) {
	r.mu.Lock()
	phase := r.phase
	r.mu.Unlock()
	fmt.Fprintf(r.log, "  [%s %s #%d] %s\n", r.im, phase, r.run, fmt.Sprintf(format, args...))
}

// phase is one step of `bench run`, run once per implementation.
type phase struct {
	name  string
	limit func(*runConfig) time.Duration
	run   func(*runConfig, impl, *record) error
}

func phases(cfg *runConfig) []phase {
	ps := []phase{
		{"ping", func(c *runConfig) time.Duration { return c.pingDur + 20*time.Second }, phasePing},
		{"handshake", func(c *runConfig) time.Duration { return 2*c.hsDur + 40*time.Second }, phaseHandshake},
		{"echo", func(c *runConfig) time.Duration { return c.echoLimit + 20*time.Second }, phaseEcho},
		{"stream1k", streamLimit, phaseStream(1024, func(c *runConfig) int64 { return c.stream1K })},
		{"stream64k", streamLimit, phaseStream(64<<10, func(c *runConfig) int64 { return c.stream64K })},
		{"multi", func(c *runConfig) time.Duration { return c.streamDur + c.multiAckWait + 60*time.Second }, phaseMulti},
		{"idle", func(c *runConfig) time.Duration {
			return c.idleDialLimit + c.idleSettle + c.idleDur + closeWait + 30*time.Second
		}, phaseIdle},
	}
	for _, n := range cfg.tickClients {
		ps = append(ps, phase{tickKey(n), func(c *runConfig) time.Duration {
			return c.tickDialLimit + c.tickSettle + c.tickDur + c.tickGrace + closeWait + 30*time.Second
		}, phaseTick(n)})
	}
	ps = append(ps, phase{"capacity", capLimit, phaseCapacity})
	for _, rate := range cfg.lossRates {
		ps = append(ps, phase{lossKey(rate), func(c *runConfig) time.Duration {
			return c.lossEchoLim + c.streamDur + c.lossAckWait + 2*lossyDialTimeout + 2*closeWait + 20*time.Second
		}, phaseLoss(rate)})
	}
	return ps
}

// startProfile has child c write a CPU profile for phase on im into the
// profile directory and returns the function that ends it.
func startProfile(cfg *runConfig, c *child, phase string, im impl, r *record) func() {
	path := filepath.Join(cfg.profileDir, fmt.Sprintf("%s-%s-run%d.pprof", phase, im, r.run))
	if err := c.startProfile(path); err != nil {
		r.logf("CPU profile: %v", err)
		return func() {}
	}
	return func() {
		if err := c.stopProfile(); err != nil {
			r.logf("CPU profile: %v", err)
			return
		}
		r.logf("CPU profile written to %s", path)
	}
}

func streamLimit(c *runConfig) time.Duration { return c.streamDur + c.ackWait + 30*time.Second }

// runPhase runs p for im, giving up after its limit: a phase that overruns
// is reported as "timeout" and its child servers are killed.
func runPhase(cfg *runConfig, p phase, r *record) {
	r.mu.Lock()
	r.phase = p.name
	r.mu.Unlock()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.run(cfg, r.im, r) }()
	limit := p.limit(cfg)
	select {
	case err := <-done:
		if err != nil {
			r.status[p.name] = "error"
			r.logf("error: %v", err)
		}
	case <-time.After(limit):
		r.status[p.name] = "timeout"
		r.logf("timeout after %v", limit)
		stopChildren()
	}
	r.logf("done in %v", time.Since(start).Round(time.Millisecond))
}

// parseCounts parses a comma-separated list of client counts.
func parseCounts(s string) ([]int, error) {
	var counts []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 60000 {
			return nil, fmt.Errorf("bad client count %q: want 1 to 60000", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func parseRates(s string) ([]float64, error) {
	var rates []float64
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "%"))
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 || v >= 100 {
			return nil, fmt.Errorf("bad loss rate %q: want a percentage in [0, 100)", f)
		}
		rates = append(rates, v/100)
	}
	return rates, nil
}

// cmdRun is `bench run`.
func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a short run: smaller counts and durations")
	only := fs.String("phases", "", "comma-separated phases to run (ping,handshake,echo,stream1k,stream64k,multi,idle,tick100,tick1000,capacity,loss1,loss5,loss10); empty runs all")
	idle := fs.Int("idle", 0, "idle connections to hold (default 5000, quick 1000)")
	duration := fs.Duration("duration", 0, "length of each timed phase (default 3s, quick 1s)")
	loss := fs.String("loss", "1,5,10", "loss rates in percent for the proxy phases")
	delay := fs.Duration("proxy-delay", 5*time.Millisecond, "one-way delay the proxy adds")
	jitter := fs.Duration("proxy-jitter", 0, "uniform jitter on the proxy delay (reorders)")
	seedFlag := fs.Uint64("seed", 0, "proxy loss seed (0 picks one; "+proxy.SeedEnv+" also works)")
	ticks := fs.String("tick-clients", "100,1000", "client counts of the game-tick phases (tickN)")
	tickDur := fs.Duration("tick-duration", 0, "measured length of each game-tick phase (default 3s, quick 2s)")
	perAddr := fs.Int("tick-per-addr", 100, "game-tick clients per source address (127.0.1.1, 127.0.1.2, ...)")
	capStart := fs.Int("cap-start", 200, "capacity search: game-tick clients of the first step")
	capMax := fs.Int("cap-max", 0, "capacity search: most game-tick clients tried (default 3200, quick 1600)")
	capSteps := fs.Int("cap-steps", 0, "capacity search: most steps (default 7, quick 5)")
	capDur := fs.Duration("cap-duration", 0, "capacity search: measured length of each step (default 2s)")
	echoN := fs.Int("echo-n", 0, "echoes of the echo phase (default 2000, quick 500)")
	runs := fs.Int("runs", 1, "repeat every phase this many times and report medians")
	markdown := fs.Bool("markdown", false, "print the results as markdown tables")
	profDir := fs.String("cpuprofile", "", "write CPU profiles of the echo and game-tick servers into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", *runs)
	}
	cfg := &runConfig{
		pingDur: 3 * time.Second, pingWindow: 32,
		hsDur: 3 * time.Second, hsMax: 6000, hsSeq: 500,
		echoN: 2000, echoLimit: 60 * time.Second,
		streamDur: 3 * time.Second, stream1K: 256 << 20, stream64K: 1 << 30, ackWait: 30 * time.Second,
		clients: 100, clientPackets: 1000, multiAckWait: 60 * time.Second,
		idle: 5000, idleDialLimit: 120 * time.Second, idleSettle: 3 * time.Second, idleDur: 10 * time.Second,
		lossEchoN: 500, lossEchoLim: 150 * time.Second, lossBytes: 32 << 20, lossAckWait: 60 * time.Second,
		proxyDelay: *delay, proxyJitter: *jitter,
		tickDur: 3 * time.Second, tickSettle: time.Second, tickGrace: 2 * time.Second,
		tickDialLimit: 20 * time.Second, tickPerAddr: *perAddr,
		capStart: *capStart, capMax: 3200, capSteps: 7, capDur: 2 * time.Second,
		runs: *runs, markdown: *markdown,
	}
	if *quick {
		cfg.pingDur, cfg.hsDur, cfg.streamDur = time.Second, time.Second, time.Second
		cfg.hsMax, cfg.hsSeq = 3000, 200
		cfg.echoN = 500
		cfg.clientPackets = 300
		cfg.idle, cfg.idleDialLimit, cfg.idleSettle, cfg.idleDur = 1000, 40*time.Second, 2*time.Second, 3*time.Second
		cfg.lossEchoN, cfg.lossEchoLim, cfg.lossBytes = 150, 60*time.Second, 4<<20
		cfg.ackWait, cfg.lossAckWait, cfg.multiAckWait = 20*time.Second, 30*time.Second, 30*time.Second
		cfg.tickDur, cfg.tickSettle, cfg.tickGrace = 2*time.Second, 500*time.Millisecond, time.Second
		cfg.capMax, cfg.capSteps = 1600, 5
	}
	if *capMax > 0 {
		cfg.capMax = *capMax
	}
	if *capSteps > 0 {
		cfg.capSteps = *capSteps
	}
	if *capDur > 0 {
		cfg.capDur = *capDur
	}
	if *tickDur > 0 {
		cfg.tickDur = *tickDur
	}
	if *echoN > 0 {
		cfg.echoN = *echoN
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
	if *idle > 0 {
		cfg.idle = *idle
	}
	if *duration > 0 {
		cfg.pingDur, cfg.hsDur, cfg.streamDur, cfg.idleDur = *duration, *duration, *duration, *duration
	}
	var err error
	if cfg.lossRates, err = parseRates(*loss); err != nil {
		return err
	}
	if cfg.tickClients, err = parseCounts(*ticks); err != nil {
		return err
	}
	cfg.seed = *seedFlag
	if cfg.seed == 0 {
		if cfg.seed, err = proxy.Seed(); err != nil {
			return err
		}
	}
	if *only != "" {
		known := make(map[string]bool)
		var names []string
		for _, p := range phases(cfg) {
			known[p.name] = true
			names = append(names, p.name)
		}
		cfg.phases = make(map[string]bool)
		for p := range strings.SplitSeq(*only, ",") {
			p = strings.TrimSpace(p)
			if !known[p] {
				return fmt.Errorf("unknown phase %q: want some of %s", p, strings.Join(names, ","))
			}
			cfg.phases[p] = true
		}
	}

	// One go-raknet client is one socket: thousands of idle connections
	// need file descriptors.
	if lim, err := raiseNoFile(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: cannot raise RLIMIT_NOFILE: %v\n", err)
	} else if need := uint64(max(cfg.idle, cfg.capMax, slices.Max(append([]int{0}, cfg.tickClients...))) + 1000); lim < need {
		fmt.Fprintf(os.Stderr, "bench: RLIMIT_NOFILE is %d, below the %d the idle and tick phases need; they will hold fewer connections\n", lim, need)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			stopChildren()
			os.Exit(130)
		}
	}()
	defer stopChildren()

	fmt.Fprintf(os.Stderr, "bench run: client go-raknet; proxy seed %d; %s\n", cfg.seed, describe(cfg))
	// Each run measures every phase on both implementations, one after
	// the other, so that a ratio compares figures taken under the same
	// load on the machine.
	var runsRecs []runRecords
	start := time.Now()
	for run := 1; run <= cfg.runs; run++ {
		recs := runRecords{}
		for _, im := range []impl{implBasalt, implGoRakNet} {
			recs[im] = &record{im: im, run: run, log: os.Stderr, m: map[string]val{}, status: map[string]string{}}
		}
		runsRecs = append(runsRecs, recs)
		for _, p := range phases(cfg) {
			if cfg.phases != nil && !cfg.phases[p.name] {
				continue
			}
			for _, im := range []impl{implBasalt, implGoRakNet} {
				runPhase(cfg, p, recs[im])
			}
		}
		fmt.Fprintf(os.Stderr, "bench run: run %d of %d done after %v\n", run, cfg.runs, time.Since(start).Round(time.Second))
	}
	fmt.Fprintf(os.Stderr, "bench run: finished in %v\n", time.Since(start).Round(time.Second))
	if cfg.markdown {
		printMarkdown(os.Stdout, cfg, runsRecs)
	} else {
		printTable(os.Stdout, cfg, runsRecs)
	}
	return nil
}

// runRecords are one run's records of both implementations.
type runRecords map[impl]*record

func describe(cfg *runConfig) string {
	return fmt.Sprintf("%d run(s); ping %v; handshakes %v (max %d); echo %d; streams %v (1K cap %d MiB, 64K cap %d MiB); %d clients x %d KiB; idle %d for %v; game tick %v clients for %v; capacity %d to %d clients in at most %d steps of %v; loss %v at %v delay",
		cfg.runs, cfg.pingDur, cfg.hsDur, cfg.hsMax, cfg.echoN, cfg.streamDur, cfg.stream1K>>20, cfg.stream64K>>20,
		cfg.clients, cfg.clientPackets, cfg.idle, cfg.idleDur, cfg.tickClients, cfg.tickDur,
		cfg.capStart, cfg.capMax, cfg.capSteps, cfg.capDur, cfg.lossRates, cfg.proxyDelay)
}

// target is a goal for basalt shown beside a row.
type target struct {
	text  string
	check func(b, g val) (pass, known bool)
	// ratio targets are checked against the median of the runs' ratios.
	ratio bool
}

func ratioLE(x float64) *target {
	return &target{fmt.Sprintf("<= %gx", x), func(b, g val) (bool, bool) {
		if !b.has || b.word() || !g.has || g.word() || g.v == 0 {
			return false, false
		}
		return b.v/g.v <= x, true
	}, true}
}

func ratioGE(x float64) *target {
	return &target{fmt.Sprintf(">= %gx", x), func(b, g val) (bool, bool) {
		if !b.has || b.word() {
			return false, b.set()
		}
		if g.has && (g.word() || g.v == 0) {
			return b.v > 0, true // the comparison died: any rate wins
		}
		if !g.has {
			return false, false
		}
		return b.v/g.v >= x, true
	}, true}
}

func absLE(x float64, unit string) *target {
	return &target{fmt.Sprintf("basalt <= %g %s", x, unit), func(b, _ val) (bool, bool) {
		if !b.has || b.word() {
			return false, b.set()
		}
		return b.v <= x, true
	}, false}
}

var survives = &target{"survives", func(b, _ val) (bool, bool) {
	if !b.set() {
		return false, false
	}
	if b.ok != nil {
		return *b.ok, true
	}
	return b.s == "yes", true
}, false}

// row is one line of the table.
type row struct {
	phase, key, label, format string
	target                    *target
}

func tableRows(cfg *runConfig) []row {
	rows := []row{
		{"ping", "pong.rate", fmt.Sprintf("pongs/s (raw pings, %d in flight)", cfg.pingWindow), "%.0f", nil},
		{"ping", "pong.cpu", "server CPU per pong (us)", "%.2f", ratioLE(0.5)},
		{"handshake", "hs.rate", fmt.Sprintf("handshakes/s (%d dialers)", handshakeDialers), "%.0f", ratioGE(5)},
		{"handshake", "hs.p50", "dial p50 (ms)", "%.2f", nil},
		{"handshake", "hs.p99", "dial p99 (ms)", "%.2f", absLE(10, "ms")},
		{"handshake", "hs.cpu", "server CPU per handshake (us)", "%.0f", nil},
		{"handshake", "hs1.p50", "dial p50, one dialer at a time (ms)", "%.2f", nil},
		{"handshake", "hs1.p99", "dial p99, one dialer at a time (ms)", "%.2f", nil},
		{"handshake", "hs.fail", "failed dials", "%.0f", nil},
		{"echo", "echo.p50", "echo 100 B p50 (us)", "%.0f", nil},
		{"echo", "echo.p99", "echo 100 B p99 (us)", "%.0f", ratioLE(0.5)},
		{"stream1k", "stream1024.rate", "1 KiB stream, unpaced (MB/s)", "%.1f", nil},
		{"stream1k", "stream1024.ok", "1 KiB stream survives (SYN/ACK)", "", survives},
		{"stream1k", "stream1024.cpu", "1 KiB stream server CPU (ms/MB)", "%.2f", nil},
		{"stream64k", "stream65536.rate", "64 KiB stream, unpaced (MB/s)", "%.1f", nil},
		{"stream64k", "stream65536.ok", "64 KiB stream survives (SYN/ACK)", "", survives},
		{"stream64k", "stream65536.cpu", "64 KiB stream server CPU (ms/MB)", "%.2f", nil},
		{"multi", "multi.rate", fmt.Sprintf("1 KiB x %d clients, %d each (MB/s)", cfg.clients, cfg.clientPackets), "%.1f", nil},
		{"multi", "multi.ok", "clients whose stream survived", "", survives},
		{"idle", "idle.conns", "idle connections held", "%.0f", nil},
		{"idle", "idle.alive", "still alive after the idle period", "", survives},
		{"idle", "idle.cpu", "idle server CPU (% of one core)", "%.2f", ratioLE(0.1)},
		{"idle", "idle.rss", "RSS per connection (KiB)", "%.2f", ratioLE(0.5)},
		{"idle", "idle.heap", "live heap per connection (KiB)", "%.2f", nil},
		{"idle", "idle.gor", "goroutines per connection", "%.2f", nil},
	}
	for _, n := range cfg.tickClients {
		k := tickKey(n)
		var p99T *target
		if n >= 1000 {
			p99T = absLE(10, "ms")
		}
		rows = append(rows,
			row{k, k + ".cpu", fmt.Sprintf("%d clients game tick: server CPU per client (us/s)", n), "%.1f", nil},
			row{k, k + ".sent", fmt.Sprintf("%d clients: ticks/s per client the clients sent (of 20)", n), "%.1f", nil},
			row{k, k + ".dg", fmt.Sprintf("%d clients: server datagrams/s per client, in+out", n), "%.1f", nil},
			row{k, k + ".dgin", fmt.Sprintf("%d clients: datagrams/s per client received", n), "%.1f", nil},
			row{k, k + ".dgout", fmt.Sprintf("%d clients: datagrams/s per client sent", n), "%.1f", nil},
			row{k, k + ".p50", fmt.Sprintf("%d clients: tick round trip p50 (ms)", n), "%.2f", nil},
			row{k, k + ".p99", fmt.Sprintf("%d clients: tick round trip p99 (ms)", n), "%.2f", p99T},
			row{k, k + ".wp99", fmt.Sprintf("%d clients: server echo Write p99 (ms)", n), "%.2f", nil},
			row{k, k + ".swp99", fmt.Sprintf("%d clients: server goroutine wake-up p99 (ms)", n), "%.2f", nil},
			row{k, k + ".cwp99", fmt.Sprintf("%d clients: client goroutine wake-up p99 (ms)", n), "%.2f", nil},
			row{k, k + ".late", fmt.Sprintf("%d clients: ticks unanswered after the grace", n), "%.0f", nil},
			row{k, k + ".drops", fmt.Sprintf("%d clients: kernel drops at the server socket", n), "%.0f", nil},
			row{k, k + ".rcvbuf", fmt.Sprintf("%d clients: UDP RcvbufErrors, all sockets", n), "%.0f", nil},
			row{k, k + ".inerr", fmt.Sprintf("%d clients: UDP InErrors, all sockets", n), "%.0f", nil},
			row{k, k + ".memerr", fmt.Sprintf("%d clients: UDP MemErrors, all sockets", n), "%.0f", nil},
			row{k, k + ".ok", fmt.Sprintf("%d clients: connections that survived", n), "", survives},
		)
	}
	rows = append(rows,
		row{"capacity", "cap.n", fmt.Sprintf("capacity: most game-tick clients held (p99 < %v, no drops)", capP99), "%.0f", nil},
		row{"capacity", "cap.cpu", "capacity: server CPU at that load (% of one core)", "%.0f", nil},
		row{"capacity", "cap.percore", "capacity: game-tick clients per core of server CPU", "%.0f", nil},
	)
	for _, rate := range cfg.lossRates {
		k, pct := lossKey(rate), rate*100
		var rateT, p99T *target
		if pct == 5 {
			rateT, p99T = ratioGE(5), ratioLE(0.2)
		}
		rows = append(rows,
			row{k, k + ".rate", fmt.Sprintf("%g%% loss: 1 KiB stream (MB/s)", pct), "%.2f", rateT},
			row{k, k + ".ok", fmt.Sprintf("%g%% loss: stream survives", pct), "", survives},
			row{k, k + ".p50", fmt.Sprintf("%g%% loss: echo p50 (ms)", pct), "%.1f", nil},
			row{k, k + ".p90", fmt.Sprintf("%g%% loss: echo p90 (ms)", pct), "%.1f", nil},
			row{k, k + ".p99", fmt.Sprintf("%g%% loss: echo p99 (ms)", pct), "%.1f", p99T},
		)
	}
	return rows
}
