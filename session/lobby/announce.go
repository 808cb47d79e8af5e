package lobby

// Announce says message in chat to every player in the lobby's world, as
// the server does when it starts draining before a restart. A lobby that
// has shut down says nothing.
func (l *Lobby) Announce(message string) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	ps := l.othersLocked(nil)
	l.mu.Unlock()
	l.broadcast(ps, systemText(sanitize(message)))
}
