package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Disconnect messages for sessions the server ends because the client broke
// a limit or sent a login it cannot take.
const (
	loginTimeoutMessage     = "Login timed out."
	preLoginTooLargeMessage = "Your login data is too large for this server (is your skin very large?)."
	tooLargeMessage         = "Packet too large."
	budgetMessage           = "Too much data sent too fast."
	invalidLoginMessage     = "Invalid login."
)

// phase is where a session stands in the pre-game protocol.
type phase uint8

const (
	// phaseNetworkSettings waits for RequestNetworkSettings.
	phaseNetworkSettings phase = iota
	// phaseLogin waits for Login; batches carry a compression id.
	phaseLogin
	// phaseHandshake waits for ClientToServerHandshake; batches are
	// encrypted.
	phaseHandshake
	// phasePlaying hands every packet to the handler.
	phasePlaying
)

// String returns the phase's name.
func (p phase) String() string {
	switch p {
	case phaseNetworkSettings:
		return "network settings"
	case phaseLogin:
		return "login"
	case phaseHandshake:
		return "handshake"
	case phasePlaying:
		return "playing"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Run serves the session until it ends: the client goes away or sends a
// batch that does not decode or a login that is refused, the handler
// returns an error or panics, the session is closed, or ctx is done. It
// flushes what is buffered (and the Disconnect, if one is due), closes the
// Conn, calls HandleClose if NewHandler made a handler, and returns only
// once every goroutine it started has stopped; Done is closed then. The
// error is nil when this side closed the session (Close, Disconnect, the
// gate), context.Cause(ctx) when ctx ended it, and otherwise what went
// wrong, wrapping the *DisconnectError a handler returned. Run panics if
// called twice.
func (s *Session) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		panic("session: Run called twice")
	}
	defer close(s.done)
	var wg sync.WaitGroup
	wg.Go(func() { s.control(ctx) })
	s.fail(s.serve())
	wg.Wait()
	// Every write is refused by now, so no watchdog is armed again.
	s.watchdogs.Wait()
	if s.handler != nil {
		s.callClose(s.cause)
	}
	if s.cause != nil {
		s.Log().Debug().Err(s.cause).Msg("session ended")
	}
	return s.cause
}

// serve reads batches and dispatches their packets until the session must
// end, and returns why (nil when it was closed on purpose).
func (s *Session) serve() error {
	s.dec.budget = newTokenBucket(preLoginDecompressRate, s.dec.maxSize, s.dec.clock())
	budgetLoggedIn := false
	for {
		if s.isClosing() {
			return nil
		}
		b, err := s.conn.ReadPacket()
		if s.isClosing() {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read batch: %w", err)
		}
		s.stats.wireBytesIn.Add(uint64(len(b)))
		if !budgetLoggedIn && s.loggedIn {
			// The player logged in during an earlier batch: the batches
			// from here on get the logged-in cap and a fresh budget.
			budgetLoggedIn = true
			s.dec.maxSize = s.maxSize
			s.dec.budget = newTokenBucket(decompressRate, s.maxSize, s.dec.clock())
		}
		s.dec.compressed = s.phase != phaseNetworkSettings
		s.batchEncrypted = s.dec.crypt != nil
		pks, err := s.dec.decode(b)
		if err != nil {
			return s.refuse(err)
		}
		s.stats.batchesIn.Add(1)
		s.stats.packetsIn.Add(uint64(len(pks)))
		s.stats.bytesIn.Add(uint64(s.dec.size))
		for _, p := range pks {
			if err := s.dispatch(p); err != nil {
				return err
			}
			if s.isClosing() {
				return nil
			}
		}
		s.dec.release()
	}
}

// dispatch hands p to the handler once the player has logged in, and
// before that to PreLogin and the session's own handler of its id. A
// Disconnect from the client ends the session in any phase.
func (s *Session) dispatch(p Packet) error {
	if s.phase == phasePlaying {
		if p.ID == IDDisconnect {
			// The player is leaving: the handler hears of it in
			// HandleClose.
			return handleDisconnect(s, p.Payload)
		}
		return s.callPacket(p)
	}
	if s.preLogin != nil {
		if err := s.callPreLogin(p); err != nil {
			return err
		}
		if s.isClosing() {
			return nil
		}
	}
	if h := preLoginHandlers[p.ID]; h != nil {
		return h(s, p.Payload)
	}
	return nil
}

// preLoginHandler handles one packet of the pre-game protocol.
type preLoginHandler func(s *Session, payload []byte) error

// preLoginHandlers maps the ids of the packets a client sends before it has
// logged in to their handlers. A nil handler means the packet is
// deliberately ignored; packets missing from the map are ignored too, since
// a client may send more than the login needs.
var preLoginHandlers = map[uint32]preLoginHandler{
	IDRequestNetworkSettings:  handleRequestNetworkSettings,
	IDLogin:                   handleLogin,
	IDClientToServerHandshake: handleClientToServerHandshake,
	IDDisconnect:              handleDisconnect,
	// The client reporting a packet of ours it could not read. Nothing sent
	// before login is worth answering.
	IDPacketViolationWarning: nil,
	// Sent after PlayStatus LoginSuccess, which only the login's end
	// sends; one that comes earlier is early and harmless.
	IDClientCacheStatus: nil,
}

// refuse ends the session over a batch that broke a size or budget limit,
// telling the client why, and returns err. Any other decode error (a bad
// checksum among them) ends it without a word: a client that sends
// malformed batches is not one a message would help.
func (s *Session) refuse(err error) error {
	var msg string
	switch {
	case errors.Is(err, ErrDecompressionBudget):
		msg = budgetMessage
	case errors.Is(err, ErrTooLarge) && !s.loggedIn:
		msg = preLoginTooLargeMessage
		err = fmt.Errorf("%w before login", err)
	case errors.Is(err, ErrTooLarge):
		msg = tooLargeMessage
	default:
		return err
	}
	s.requestClose(err, disconnectPacket(DisconnectReasonBadPacket, msg))
	return err
}

// completeLogin ends the pre-game protocol: the player is logged in, the
// login deadline stops, the Conn is promoted, PlayStatus LoginSuccess is
// buffered and NewHandler makes the handler of the packets to come.
func (s *Session) completeLogin() error {
	s.identity.Store(s.pending)
	s.pending = nil
	s.phase = phasePlaying
	s.loggedIn = true
	close(s.loginDone)
	if p, ok := s.conn.(promoter); ok {
		p.Promote()
	}
	ps := playStatus{Status: PlayStatusLoginSuccess}
	if err := s.WritePacket(IDPlayStatus, ps.Append(nil)); err != nil {
		if s.isClosing() {
			return nil
		}
		return fmt.Errorf("login success: %w", err)
	}
	h, err := s.callNewHandler()
	if err != nil {
		return err
	}
	if h == nil {
		if s.isClosing() {
			return nil // NewHandler disconnected the player itself
		}
		return errors.New("new handler: returned no handler and no error")
	}
	s.handler = h
	// LoginSuccess and what NewHandler wrote leave now, not a flush
	// interval later.
	if err := s.Flush(); err != nil && !s.isClosing() {
		return fmt.Errorf("login success: %w", err)
	}
	return nil
}

// control sends buffered packets FlushInterval after the first of a batch
// was written, ends the session at the login deadline unless the player
// has logged in, and when ctx is done, and does the closing once the
// session is asked to end. Its two timers are stopped when it returns, and
// the login deadline as soon as the player logs in, so a session leaves
// nothing behind.
func (s *Session) control(ctx context.Context) {
	t := time.NewTimer(s.interval)
	t.Stop()
	defer t.Stop()
	var lt *time.Timer
	var loginC <-chan time.Time
	loginDone := s.loginDone
	if s.loginTimeout > 0 {
		lt = time.NewTimer(s.loginTimeout)
		defer lt.Stop()
		loginC = lt.C
	} else {
		loginDone = nil // no deadline to stop
	}
	for {
		select {
		case <-s.kick:
			t.Reset(s.interval)
		case <-t.C:
			if err := s.Flush(); err != nil && !errors.Is(err, net.ErrClosed) {
				s.requestClose(err, nil)
			}
		case <-loginDone:
			lt.Stop()
			loginC, loginDone = nil, nil
		case <-loginC:
			err := fmt.Errorf("%w after %v", ErrLoginTimeout, s.loginTimeout)
			s.requestClose(err, disconnectPacket(DisconnectReasonTimeout, loginTimeoutMessage))
			loginC, loginDone = nil, nil
		case <-ctx.Done():
			s.requestClose(context.Cause(ctx), nil)
		case <-s.closing:
			s.finish()
			return
		}
	}
}
