package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
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
	fmt.Fprintf(r.log, "  [%s %s] %s\n", r.im, phase, fmt.Sprintf(format, args...))
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
	for _, rate := range cfg.lossRates {
		ps = append(ps, phase{lossKey(rate), func(c *runConfig) time.Duration {
			return c.lossEchoLim + c.streamDur + c.lossAckWait + 2*lossyDialTimeout + 2*closeWait + 20*time.Second
		}, phaseLoss(rate)})
	}
	return ps
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
	only := fs.String("phases", "", "comma-separated phases to run (ping,handshake,echo,stream1k,stream64k,multi,idle,loss1,loss5,loss10); empty runs all")
	idle := fs.Int("idle", 0, "idle connections to hold (default 5000, quick 1000)")
	duration := fs.Duration("duration", 0, "length of each timed phase (default 3s, quick 1s)")
	loss := fs.String("loss", "1,5,10", "loss rates in percent for the proxy phases")
	delay := fs.Duration("proxy-delay", 5*time.Millisecond, "one-way delay the proxy adds")
	jitter := fs.Duration("proxy-jitter", 0, "uniform jitter on the proxy delay (reorders)")
	seedFlag := fs.Uint64("seed", 0, "proxy loss seed (0 picks one; "+proxy.SeedEnv+" also works)")
	if err := fs.Parse(args); err != nil {
		return err
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
	}
	if *quick {
		cfg.pingDur, cfg.hsDur, cfg.streamDur = time.Second, time.Second, time.Second
		cfg.hsMax, cfg.hsSeq = 3000, 200
		cfg.echoN = 500
		cfg.clientPackets = 300
		cfg.idle, cfg.idleDialLimit, cfg.idleSettle, cfg.idleDur = 1000, 40*time.Second, 2*time.Second, 3*time.Second
		cfg.lossEchoN, cfg.lossEchoLim, cfg.lossBytes = 150, 60*time.Second, 4<<20
		cfg.ackWait, cfg.lossAckWait, cfg.multiAckWait = 20*time.Second, 30*time.Second, 30*time.Second
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
	} else if need := uint64(cfg.idle + 1000); lim < need {
		fmt.Fprintf(os.Stderr, "bench: RLIMIT_NOFILE is %d, below the %d the idle phase needs; it will hold fewer connections\n", lim, need)
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
	recs := map[impl]*record{}
	for _, im := range []impl{implBasalt, implGoRakNet} {
		recs[im] = &record{im: im, log: os.Stderr, m: map[string]val{}, status: map[string]string{}}
	}
	start := time.Now()
	for _, p := range phases(cfg) {
		if cfg.phases != nil && !cfg.phases[p.name] {
			continue
		}
		for _, im := range []impl{implBasalt, implGoRakNet} {
			runPhase(cfg, p, recs[im])
		}
	}
	fmt.Fprintf(os.Stderr, "bench run: finished in %v\n", time.Since(start).Round(time.Second))
	printTable(os.Stdout, cfg, recs[implBasalt], recs[implGoRakNet])
	return nil
}

func describe(cfg *runConfig) string {
	return fmt.Sprintf("ping %v; handshakes %v (max %d); echo %d; streams %v (1K cap %d MiB, 64K cap %d MiB); %d clients x %d KiB; idle %d for %v; loss %v at %v delay",
		cfg.pingDur, cfg.hsDur, cfg.hsMax, cfg.echoN, cfg.streamDur, cfg.stream1K>>20, cfg.stream64K>>20,
		cfg.clients, cfg.clientPackets, cfg.idle, cfg.idleDur, cfg.lossRates, cfg.proxyDelay)
}

// target is a goal for basalt shown beside a row.
type target struct {
	text  string
	check func(b, g val) (pass, known bool)
}

func ratioLE(x float64) *target {
	return &target{fmt.Sprintf("<= %gx", x), func(b, g val) (bool, bool) {
		if !b.has || b.word() || !g.has || g.word() || g.v == 0 {
			return false, false
		}
		return b.v/g.v <= x, true
	}}
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
	}}
}

func absLE(x float64, unit string) *target {
	return &target{fmt.Sprintf("basalt <= %g %s", x, unit), func(b, _ val) (bool, bool) {
		if !b.has || b.word() {
			return false, b.set()
		}
		return b.v <= x, true
	}}
}

var survives = &target{"survives", func(b, _ val) (bool, bool) {
	if !b.set() {
		return false, false
	}
	if b.ok != nil {
		return *b.ok, true
	}
	return b.s == "yes", true
}}

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

func cell(r *record, rw row) (string, val) {
	v := r.get(rw.key)
	switch {
	case v.word():
		return v.s, v
	case v.has:
		return fmt.Sprintf(rw.format, v.v), v
	}
	if s := r.status[rw.phase]; s != "" {
		return s, v
	}
	return "-", v
}

func printTable(w io.Writer, cfg *runConfig, b, g *record) {
	fmt.Fprintf(w, "\nbasalt vs go-raknet v1.15.1 servers, same go-raknet client workload (lossy proxy seed %d, %v one-way delay)\n\n",
		cfg.seed, cfg.proxyDelay)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbasalt\tgoraknet\tbasalt/goraknet\ttarget\t\t")
	last := ""
	for _, rw := range tableRows(cfg) {
		if cfg.phases != nil && !cfg.phases[rw.phase] {
			continue
		}
		if rw.phase != last && last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t")
		}
		last = rw.phase
		bs, bv := cell(b, rw)
		gs, gv := cell(g, rw)
		ratio := ""
		switch {
		case bv.has && !bv.word() && gv.has && !gv.word() && gv.v != 0:
			ratio = fmt.Sprintf("%.2fx", bv.v/gv.v)
		case bv.has && !bv.word() && bv.v > 0 && gv.has && (gv.word() || gv.v == 0):
			ratio = "inf"
		}
		tgt, verdict := "", ""
		if rw.target != nil {
			tgt = rw.target.text
			switch pass, known := rw.target.check(bv, gv); {
			case !known:
				verdict = "n/a"
			case pass:
				verdict = "PASS"
			default:
				verdict = "FAIL"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", rw.label, bs, gs, ratio, tgt, verdict)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, `
timeout: no answer within the bound (a stream: no SYN/ACK within %v, %v
  through the proxy); deadline: the phase ran out of time before all its
  echoes; died: the connection closed under the workload.
Server CPU is utime+stime from /proc/PID/stat of the server's own process
(10 ms resolution); RSS is VmRSS; live heap is HeapAlloc after a GC.
Goroutines per connection include the bench server's one reader per
connection. Idle go-raknet clients send a connected ping every 500 ms and
flush ACKs every 100 ms, so "idle" CPU is the cost of answering them.
`, cfg.ackWait, cfg.lossAckWait)
}
