package session

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrHandlerPanic is wrapped by the error Run returns when NewHandler,
// PreLogin or the Handler panicked, so a caller can tell a bug in a handler
// from a misbehaving peer.
var ErrHandlerPanic = errors.New("handler panicked")

// callNewHandler calls NewHandler, turning a panic into an error.
func (s *Session) callNewHandler() (h Handler, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, s.panicked("new handler", r)
		}
	}()
	h, err = s.newHandler(s)
	if err != nil {
		return nil, fmt.Errorf("new handler: %w", err)
	}
	return h, nil
}

// callPreLogin calls PreLogin, turning a panic into an error.
func (s *Session) callPreLogin(p Packet) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.panicked(fmt.Sprintf("pre-login %#x", p.ID), r)
		}
	}()
	if err := s.preLogin(s, p); err != nil {
		return fmt.Errorf("pre-login %#x: %w", p.ID, err)
	}
	return nil
}

// callPacket calls HandlePacket, turning a panic into an error. It is on the
// per-packet path, so it formats nothing unless something went wrong.
func (s *Session) callPacket(p Packet) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.panicked(fmt.Sprintf("handle packet %#x", p.ID), r)
		}
	}()
	if err := s.handler.HandlePacket(s, p); err != nil {
		return fmt.Errorf("handle packet %#x: %w", p.ID, err)
	}
	return nil
}

// callClose calls HandleClose, logging and swallowing a panic: the session
// is over either way.
func (s *Session) callClose(cause error) {
	defer func() {
		if r := recover(); r != nil {
			s.panicked("handle close", r)
		}
	}()
	s.handler.HandleClose(s, cause)
}

// panicked logs a recovered handler panic with its stack and returns it as
// an ErrHandlerPanic error, so a buggy handler ends its own session and
// nothing else.
func (s *Session) panicked(op string, r any) error {
	s.Log().Warn().Str("stack", string(debug.Stack())).Msgf("%s: handler panicked: %v", op, r)
	return fmt.Errorf("%s: %w: %v", op, ErrHandlerPanic, r)
}
