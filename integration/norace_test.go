//go:build !race

package integration

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
