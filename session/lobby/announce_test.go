package lobby

import "testing"

// Announce reaches every player in the world, its control characters
// made spaces so it stays one line.
func TestAnnounce(t *testing.T) {
	w := newWorld(t, Config{})
	a := w.dial(t, "Alex")
	b := w.dial(t, "Steve")
	// Alex hears Steve join: both are in the world.
	expectText(t, a, "Steve joined the lobby")
	w.lobby.Announce("Restarting\nsoon.")
	expectText(t, a, "Restarting soon.")
	expectText(t, b, "Restarting soon.")
}
