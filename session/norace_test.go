//go:build !race

package session

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
