package proxy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"
)

// SeedEnv names the environment variable that Seed reads, so a failing
// run's logged seed can be replayed: BASALT_PROXY_SEED=1234 go test ./...
const SeedEnv = "BASALT_PROXY_SEED"

// pcgStream is the second PCG word; only the seed varies between runs.
const pcgStream = 0x62617361_6c742d70 // "basalt-p"

// Seed returns the seed for a randomised test: the value of SeedEnv when it
// is set (decimal, or hex with 0x), otherwise a fresh random one. Tests log
// it with t.Logf("seed %d", seed). It is safe for concurrent use.
func Seed() (uint64, error) {
	s := os.Getenv(SeedEnv)
	if s == "" {
		return rand.Uint64(), nil
	}
	seed, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", SeedEnv, err)
	}
	return seed, nil
}

// RandomLoss builds Opts callbacks from one seeded PCG source: drop
// discards a datagram with probability lossRate, dup duplicates one with
// probability dupRate, and delayFn returns delay plus a uniform jitter in
// [-jitter, +jitter], never less than zero. Directions are treated alike.
//
// The three functions share one generator behind a mutex, so they are safe
// for concurrent use; a given seed replays exactly for a given order of
// calls. A zero rate or zero jitter consumes no randomness. RandomLoss
// panics if a rate lies outside [0, 1] or a duration is negative.
func RandomLoss(
	seed uint64, lossRate, dupRate float64, delay, jitter time.Duration,
) (
	drop func(Direction, []byte) bool,
	dup func(Direction, []byte) bool,
	delayFn func(Direction, []byte) time.Duration,
) {
	if !(lossRate >= 0 && lossRate <= 1) || !(dupRate >= 0 && dupRate <= 1) {
		panic(fmt.Sprintf("proxy: RandomLoss rates %v, %v outside [0, 1]",
			lossRate, dupRate))
	}
	if delay < 0 || jitter < 0 {
		panic(fmt.Sprintf("proxy: RandomLoss negative delay %v or jitter %v",
			delay, jitter))
	}
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, pcgStream))
	chance := func(rate float64) bool {
		if rate == 0 {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return r.Float64() < rate
	}
	drop = func(Direction, []byte) bool { return chance(lossRate) }
	dup = func(Direction, []byte) bool { return chance(dupRate) }
	delayFn = func(Direction, []byte) time.Duration {
		if jitter == 0 {
			return delay
		}
		mu.Lock()
		j := time.Duration(r.Int64N(2*int64(jitter)+1)) - jitter
		mu.Unlock()
		return max(delay+j, 0)
	}
	return drop, dup, delayFn
}
