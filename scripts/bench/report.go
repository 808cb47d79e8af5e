package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// figure is one row of the table over every run: the median of each
// implementation's measurements and the median of the ratios, each ratio
// taken within one run.
type figure struct {
	b, g   val    // medians, or the first telling run's word when no run has a number
	bs, gs string // the cells as shown
	ratios []float64
	// runs is how many runs measured the row on either implementation.
	runs int
}

// median returns the median of v (the mean of the middle two for an even
// count); v must not be empty. It sorts v.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ratio returns basalt/go-raknet for one run's values: +Inf when basalt
// measured a positive number and go-raknet died or measured 0; ok is
// false when there is nothing to compare.
func ratio(b, g val) (float64, bool) {
	switch {
	case b.has && !b.word() && g.has && !g.word() && g.v != 0:
		return b.v / g.v, true
	case b.has && !b.word() && b.v > 0 && g.has && (g.word() || g.v == 0):
		return math.Inf(1), true
	}
	return 0, false
}

// medianRatio returns the median of f's ratios; ok is false when no run
// had one.
func (f figure) medianRatio() (float64, bool) {
	if len(f.ratios) == 0 {
		return 0, false
	}
	return median(slices.Clone(f.ratios)), true
}

func fmtRatio(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.2fx", x)
}

// isCount reports whether rw counts events (drops, failures), whose
// ratio means nothing: 0 against 3 is no speed-up.
func isCount(rw row) bool {
	for _, suffix := range []string{".late", ".drops", ".rcvbuf", ".inerr", ".memerr", ".fail"} {
		if strings.HasSuffix(rw.key, suffix) {
			return true
		}
	}
	return false
}

// aggregate combines row rw over the runs.
func aggregate(rw row, runs []runRecords) figure {
	var f figure
	var bn, gn []float64
	for _, recs := range runs {
		b, g := recs[implBasalt].get(rw.key), recs[implGoRakNet].get(rw.key)
		if b.set() || g.set() {
			f.runs++
		}
		if b.has && !b.word() {
			bn = append(bn, b.v)
		}
		if g.has && !g.word() {
			gn = append(gn, g.v)
		}
		if x, ok := ratio(b, g); ok && !isCount(rw) {
			f.ratios = append(f.ratios, x)
		}
	}
	side := func(im impl, nums []float64) (val, string) {
		if len(nums) > 0 {
			v := num(median(slices.Clone(nums)))
			s := fmt.Sprintf(rw.format, v.v)
			if isCount(rw) && len(runs) > 1 {
				// Counts: the median and every run's, as a single
				// bad run is what they are there to show.
				s += " [" + strings.Trim(fmt.Sprint(nums), "[]") + "]"
			}
			if len(nums) < len(runs) {
				s += fmt.Sprintf(" (%d/%d runs)", len(nums), len(runs))
			}
			return v, s
		}
		// No number: show the first run that failed a pass/fail row,
		// else the first run.
		pick := runs[0][im]
		for _, recs := range runs {
			if v := recs[im].get(rw.key); v.ok != nil && !*v.ok {
				pick = recs[im]
				break
			}
		}
		return cell(pick, rw)
	}
	f.b, f.bs = side(implBasalt, bn)
	f.g, f.gs = side(implGoRakNet, gn)
	return f
}

// cell is one record's value of rw as shown, falling back to the phase's
// failure.
func cell(r *record, rw row) (val, string) {
	v := r.get(rw.key)
	switch {
	case v.word():
		return v, v.s
	case v.has:
		return v, fmt.Sprintf(rw.format, v.v)
	}
	if s := r.status[rw.phase]; s != "" {
		return v, s
	}
	return v, "-"
}

// verdict checks f against rw's target: ratio targets against the median
// ratio.
func verdict(rw row, f figure) string {
	if rw.target == nil {
		return ""
	}
	b, g := f.b, f.g
	if rw.target.ratio {
		if x, ok := f.medianRatio(); ok {
			b, g = num(x), num(1)
			if math.IsInf(x, 1) {
				b, g = num(1), val{has: true, s: "died"}
			}
		}
	}
	switch pass, known := rw.target.check(b, g); {
	case !known:
		return "n/a"
	case pass:
		return "PASS"
	}
	return "FAIL"
}

// perRun lists f's ratios in run order.
func perRun(f figure) string {
	var parts []string
	for _, x := range f.ratios {
		parts = append(parts, fmtRatio(x))
	}
	return strings.Join(parts, " ")
}

func shown(cfg *runConfig, rw row) bool { return cfg.phases == nil || cfg.phases[rw.phase] }

func printTable(w io.Writer, cfg *runConfig, runs []runRecords) {
	fmt.Fprintf(w, "\nbasalt vs go-raknet v1.15.1 servers, same go-raknet client workload (lossy proxy seed %d, %v one-way delay)",
		cfg.seed, cfg.proxyDelay)
	if len(runs) > 1 {
		fmt.Fprintf(w, "; medians of %d runs, the ratio being the median of each run's ratio", len(runs))
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tbasalt\tgoraknet\tbasalt/goraknet\ttarget\t\tper run\t")
	last := ""
	for _, rw := range tableRows(cfg) {
		if !shown(cfg, rw) {
			continue
		}
		if rw.phase != last && last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t")
		}
		last = rw.phase
		f := aggregate(rw, runs)
		ratioS := ""
		if x, ok := f.medianRatio(); ok {
			ratioS = fmtRatio(x)
		}
		tgt := ""
		if rw.target != nil {
			tgt = rw.target.text
		}
		runsS := ""
		if len(runs) > 1 {
			runsS = perRun(f)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", rw.label, f.bs, f.gs, ratioS, tgt, verdict(rw, f), runsS)
	}
	_ = tw.Flush()
	fmt.Fprint(w, notes(cfg))
}

// headline is the short list of figures the markdown summary leads with.
func headline(cfg *runConfig) [][2]string {
	h := [][2]string{
		{"pong.cpu", "server CPU per pong"},
		{"echo.p50", "echo 100 B p50"},
		{"echo.p99", "echo 100 B p99"},
		{"idle.cpu", "idle connections server CPU"},
		{"idle.rss", "RSS per idle connection"},
	}
	for _, n := range cfg.tickClients {
		h = append(h, [2]string{tickKey(n) + ".cpu", fmt.Sprintf("%d clients game tick: server CPU per client", n)})
	}
	h = append(h, [2]string{"cap.n", "game-tick clients held (capacity)"}, [2]string{"cap.percore", "game-tick clients per core"})
	return h
}

// printMarkdown prints the headline figures as a markdown table of median
// ratios, then every figure.
func printMarkdown(w io.Writer, cfg *runConfig, runs []runRecords) {
	rows := tableRows(cfg)
	byKey := make(map[string]row, len(rows))
	for _, rw := range rows {
		byKey[rw.key] = rw
	}
	fmt.Fprintf(w, "\nbasalt vs go-raknet v1.15.1 servers, same go-raknet client workload; %d run(s), medians; lossy proxy seed %d\n\n",
		len(runs), cfg.seed)
	fmt.Fprintln(w, "| figure | basalt/go-raknet median | runs |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, h := range headline(cfg) {
		rw, ok := byKey[h[0]]
		if !ok || !shown(cfg, rw) {
			continue
		}
		f := aggregate(rw, runs)
		med := "-"
		if x, ok := f.medianRatio(); ok {
			med = fmtRatio(x)
		}
		fmt.Fprintf(w, "| %s | %s | %d: %s |\n", h[1], med, len(f.ratios), perRun(f))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| metric | basalt | go-raknet | basalt/go-raknet | target | | per run |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, rw := range rows {
		if !shown(cfg, rw) {
			continue
		}
		f := aggregate(rw, runs)
		ratioS := ""
		if x, ok := f.medianRatio(); ok {
			ratioS = fmtRatio(x)
		}
		tgt := ""
		if rw.target != nil {
			tgt = rw.target.text
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", rw.label, f.bs, f.gs, ratioS, tgt, verdict(rw, f), perRun(f))
	}
	fmt.Fprint(w, notes(cfg))
}

func notes(cfg *runConfig) string {
	return fmt.Sprintf(`
timeout: no answer within the bound (a stream: no SYN/ACK within %v, %v
  through the proxy); deadline: the phase ran out of time before all its
  echoes; died: the connection closed under the workload.
Server CPU is utime+stime from /proc/PID/stat of the server's own process
(10 ms resolution); RSS is VmRSS; live heap is HeapAlloc after a GC.
Goroutines per connection include the bench server's one reader per
connection. Idle go-raknet clients send a connected ping every 500 ms and
flush ACKs every 100 ms, so "idle" CPU is the cost of answering them.
Game tick: each client sends %d B every %v and the server echoes it;
figures cover %v of steady state. Datagrams are the server's, ACKs
included: go-raknet's counted at its socket, basalt's by its connections.
A tick unanswered %v after the window counts in the round trips with its
wait so far. Kernel drops are the server socket's (/proc/net/udp); the
UDP counters (/proc/net/snmp) cover every socket on the machine.
Capacity: the most game-tick clients a fresh server held for %v with the
round trip's p99 under %v, every tick answered, no kernel drop and the
clients sending at least %d ticks/s each (doubling from %d up to %d, then
bisecting; at most %d steps, a step failed on latency or drops run once
more); clients per core divides it by the server
CPU it took. The clients share the machine, so on a small one they can
be the limit (the log says which).
`, cfg.ackWait, cfg.lossAckWait, tickSize, tickInterval, cfg.tickDur, cfg.tickGrace,
		cfg.capDur, capP99, capMinTickRate, cfg.capStart, cfg.capMax, cfg.capSteps)
}
