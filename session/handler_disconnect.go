package session

import (
	"errors"
	"fmt"
)

// ErrClientLeft is wrapped by the error Run returns when the client ended
// the session with a Disconnect of its own (a *LeaveError): the player
// left, nothing went wrong.
var ErrClientLeft = errors.New("client left")

// LeaveError is the error Run returns, and HandleClose gets, when the client
// sent a Disconnect: the player left on its own, with the reason and
// message its packet gave. It wraps ErrClientLeft. It is a plain value,
// safe to share.
type LeaveError struct {
	// Reason is the reason code the client sent.
	Reason DisconnectReason
	// Message is the message the client sent; empty when it sent none.
	Message string
}

// Error returns "client left", with the client's message, or its reason
// when it gave no message.
func (e *LeaveError) Error() string {
	if e.Message != "" {
		return "client left: " + e.Message
	}
	return fmt.Sprintf("client left (%v)", e.Reason)
}

// Unwrap returns ErrClientLeft.
func (e *LeaveError) Unwrap() error { return ErrClientLeft }

// handleDisconnect ends the session at once when the client sends a
// Disconnect, in any phase: the player is leaving, so Run returns a
// *LeaveError with the client's reason, and the session sends nothing more
// (no Disconnect of its own) before it closes the Conn. A Disconnect whose
// fields do not read is still a leave, with no reason: the client is
// going either way, and the packet's bytes are the client's business.
// The handler never sees the packet; its HandleClose gets the
// *LeaveError.
func handleDisconnect(s *Session, payload []byte) error {
	var dc disconnect
	le := &LeaveError{}
	if _, err := dc.Decode(payload); err == nil {
		le.Reason, le.Message = dc.Reason, dc.Message
	} else if e := s.Log().Debug(); e.Enabled() {
		e.Err(err).Msg("client's disconnect")
	}
	s.requestClose(le, nil)
	return nil
}
