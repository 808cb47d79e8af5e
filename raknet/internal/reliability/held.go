package reliability

// heldBudget counts the messages delivered and kept but not yet consumed
// (the connection's read queue) against their bounds. The bounds are
// exact, but for one exception: a message is always deliverable when
// nothing is held, or one larger than the byte bound would wedge the
// connection.
type heldBudget struct {
	msgs, bytes       int
	maxMsgs, maxBytes int
}

// fits reports whether one more message of size bytes may be delivered.
func (h *heldBudget) fits(size int) bool {
	return h.msgs == 0 || (h.msgs < h.maxMsgs && h.bytes+size <= h.maxBytes)
}

// take counts a delivered message of size bytes that was kept.
func (h *heldBudget) take(size int) {
	h.msgs++
	h.bytes += size
}

// claim takes size bytes if they fit and reports whether they did.
func (h *heldBudget) claim(size int) bool {
	if !h.fits(size) {
		return false
	}
	h.take(size)
	return true
}

// release counts a kept message of size bytes as consumed.
func (h *heldBudget) release(size int) {
	h.msgs = max(0, h.msgs-1)
	h.bytes = max(0, h.bytes-size)
}
