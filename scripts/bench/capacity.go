package main

import (
	"fmt"
	"strings"
	"time"
)

// The capacity phase: the most game-tick clients (tickSize bytes both
// ways every tickInterval) a server holds with the round trip's p99 under
// capP99, every tick answered and nothing dropped by the kernel, found by
// a bounded search of short game-tick runs on fresh servers.
const (
	capP99 = 50 * time.Millisecond
	// capMinTickRate is the ticks per second each client must have sent
	// (of 20) for a step to count: below it the client side, sharing the
	// machine, is what fell behind.
	capMinTickRate = 18
)

// capTiming is one step of the search: short, as a step only has to tell
// held from not held.
func capTiming(cfg *runConfig) tickTiming {
	return tickTiming{settle: cfg.tickSettle, dur: cfg.capDur, grace: cfg.tickGrace, dialLimit: cfg.tickDialLimit}
}

// capProbe is one step of the search.
type capProbe struct {
	n  int
	ok bool
}

// searchCapacity returns the largest n in [lo, hi] for which held(n) is
// true, taking held to be monotone: it doubles n from lo until a step
// fails or reaches hi, then bisects between the last step held and the
// first not, until they are within a tenth of each other (and at least
// capGrain apart) or maxSteps steps ran. best is 0 when lo is not held.
func searchCapacity(lo, hi, maxSteps int, held func(n int) bool) (best int, probes []capProbe) {
	try := func(n int) bool {
		ok := held(n)
		probes = append(probes, capProbe{n, ok})
		return ok
	}
	lo, hi = max(lo, 1), max(hi, lo)
	fail := 0 // the smallest n seen not held, 0 for none
	for n := lo; len(probes) < maxSteps; n = min(2*n, hi) {
		if !try(n) {
			fail = n
			break
		}
		best = n
		if n == hi {
			return best, probes
		}
	}
	if best == 0 {
		return 0, probes
	}
	for fail > 0 && len(probes) < maxSteps && fail-best > max(best/10, capGrain) {
		n := best + (fail-best)/2
		if try(n) {
			best = n
		} else {
			fail = n
		}
	}
	return best, probes
}

// capGrain is the finest step of the search, in clients; capAttempts is
// how many runs a step has to show the server holds the load.
const (
	capGrain    = 10
	capAttempts = 2
)

// phaseCapacity searches the capacity of one implementation.
func phaseCapacity(cfg *runConfig, im impl, r *record) error {
	type stepCost struct {
		cpu  time.Duration
		wall time.Duration
	}
	costs := make(map[int]stepCost)
	best, probes := searchCapacity(cfg.capStart, cfg.capMax, cfg.capSteps, func(n int) bool {
		// A step the server failed on latency or drops is run once more
		// before it counts as not held: on a shared machine one spike of
		// someone else's load is enough to fail a p99.
		for attempt := 1; attempt <= capAttempts; attempt++ {
			t, err := runTick(cfg, im, n, capTiming(cfg), "", r)
			if err != nil {
				r.logf("capacity %d clients: %v", n, err)
				return false
			}
			ok, why := t.held(capP99)
			verdict := "held"
			if !ok {
				verdict = "not held: " + why
			}
			r.logf("capacity %d clients (attempt %d): %s; %v", n, attempt, verdict, t)
			if ok {
				costs[n] = stepCost{t.cpu, t.wall}
				return true
			}
			if t.live < t.n || t.died > 0 || t.perClient(float64(t.sent)) < capMinTickRate {
				return false // not the server's latency: no retry
			}
		}
		return false
	})
	steps := make([]string, len(probes))
	for i, p := range probes {
		mark := "x"
		if p.ok {
			mark = "ok"
		}
		steps[i] = fmt.Sprintf("%d %s", p.n, mark)
	}
	r.logf("capacity: %d clients (steps: %s)", best, strings.Join(steps, ", "))
	if best == 0 {
		r.set("cap.n", note(fmt.Sprintf("< %d", max(cfg.capStart, 1))))
		return nil
	}
	r.set("cap.n", num(float64(best)))
	if c := costs[best]; c.wall > 0 && c.cpu > 0 {
		cores := c.cpu.Seconds() / c.wall.Seconds()
		r.set("cap.cpu", num(100*cores))
		r.set("cap.percore", num(float64(best)/cores))
	}
	return nil
}

// capLimit bounds the capacity phase: every step at its longest.
func capLimit(c *runConfig) time.Duration {
	run := c.tickDialLimit + c.tickSettle + c.capDur + c.tickGrace + closeWait + 2*childWait
	return time.Duration(c.capSteps*capAttempts)*run + 30*time.Second
}
