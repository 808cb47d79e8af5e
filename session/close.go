package session

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// fail asks the session to end with err as its cause (nothing if err is
// nil), sending the Disconnect of a *DisconnectError that err wraps.
func (s *Session) fail(err error) {
	var last *Packet
	if de, ok := errors.AsType[*DisconnectError](err); ok {
		last = de.packet()
	}
	s.requestClose(err, last)
}

// finish does the closing: it sends what is buffered and the last packet
// (nothing when the client left), refuses every later write and closes
// the Conn. A write stuck on the
// transport is cut short by the watchdog, so finish takes at most about
// WriteTimeout plus the Conn's Close.
func (s *Session) finish() {
	s.lockWrite()
	var err error
	// When the client has left, what is buffered stays unsent: it would
	// only keep a transport's graceful close waiting for
	// acknowledgements that never come.
	if !errors.Is(s.cause, ErrClientLeft) {
		if s.last != nil {
			err = s.addLocked(*s.last)
		}
		if err == nil {
			err = s.flushLocked()
		}
	}
	s.writeClosed = true
	s.unlockWrite()
	if err != nil {
		if e := s.Log().Debug(); e.Enabled() {
			e.Err(err).Msg("final flush")
		}
	}
	s.closeConn()
}

// closeConn closes the Conn the first time; later calls wait for it.
func (s *Session) closeConn() {
	s.connOnce.Do(func() {
		if err := s.conn.Close(); err != nil {
			if e := s.Log().Debug(); e.Enabled() {
				e.Err(err).Msg("close connection")
			}
		}
	})
}

// requestClose asks the session to end the first time it is called,
// recording cause as the reason and last as the packet to send after what
// is buffered: it cancels Context, refuses further writes and wakes the
// goroutine that does the closing. It never blocks, and reports whether
// this call was the first.
func (s *Session) requestClose(cause error, last *Packet) bool {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.cause, s.last = cause, last
		s.closingNow.Store(true)
		if cause == nil {
			s.cancel(context.Canceled)
		} else {
			s.cancel(cause)
		}
		close(s.closing)
	})
	return first
}

// isClosing reports whether the session has been asked to end.
func (s *Session) isClosing() bool {
	return s.closingNow.Load()
}

// Disconnect asks the session to end with a Disconnect packet with reason
// DisconnectReasonKicked and message, which the client's disconnection
// screen shows: see DisconnectWith.
func (s *Session) Disconnect(message string) error {
	return s.DisconnectWith(DisconnectReasonKicked, message)
}

// DisconnectWith asks the session to end with a Disconnect packet with
// reason and message, sent after anything already buffered, and returns at
// once: the session's own goroutine flushes, closes the Conn gracefully so
// the packet is delivered before the transport closes, and Run then
// returns nil. Writes are refused from the moment it is called. It returns
// an error wrapping net.ErrClosed if the session was already ending.
func (s *Session) DisconnectWith(reason DisconnectReason, message string) error {
	if !s.requestClose(nil, disconnectPacket(reason, message)) {
		return fmt.Errorf("disconnect: %w", net.ErrClosed)
	}
	return nil
}

// Close asks the session to end and returns at once: the session's own
// goroutine flushes what is buffered and closes the Conn gracefully, and Run
// then returns nil. Done tells when that is over. Close is safe to call
// more than once and always returns nil.
func (s *Session) Close() error {
	s.requestClose(nil, nil)
	return nil
}

// Context returns a context cancelled as soon as the session starts to end,
// with the session's end cause (context.Canceled when this side closed it),
// for work a handler starts on the player's behalf.
func (s *Session) Context() context.Context {
	return s.ctx
}

// Done returns a channel closed when Run has returned: the Conn is closed
// and HandleClose has been called. It stays open for a session whose Run
// is never called.
func (s *Session) Done() <-chan struct{} {
	return s.done
}
