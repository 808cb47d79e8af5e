//go:build race

package integration

// raceEnabled reports whether the race detector is on: it slows every
// goroutine several times over, so bounds on how long a join takes under
// an attack are scaled by raceSlowdown.
const raceEnabled = true
