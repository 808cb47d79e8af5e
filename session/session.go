package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Conn is the transport a Session runs over. raknet.Conn satisfies it. A
// Conn that also has a Promote() method is told, through it, when the
// player has logged in (see SetIdentity).
type Conn interface {
	// ReadPacket returns the next 0xfe batch the peer sent.
	ReadPacket() ([]byte, error)
	// Write sends b as one batch, reliably and in order. As io.Writer
	// requires, it must not keep b after returning.
	Write(b []byte) (int, error)
	// Close delivers what was written, then closes the connection. It must
	// unblock a pending ReadPacket.
	Close() error
	// RemoteAddr returns the peer's address.
	RemoteAddr() net.Addr
}

// promoter is a Conn that treats a connection differently once its player
// has logged in. raknet.Conn, for one, gives a connection a much smaller
// share of the listener's memory budget before Promote than after. The
// session calls Promote once, when SetIdentity first accepts a player, and
// never for a session whose Login was refused.
type promoter interface {
	Promote()
}

// DefaultFlushInterval is how long a written packet waits, at most, for
// others to share its batch unless Config says otherwise: 50 ms, one game
// tick, as gophertunnel flushes.
const DefaultFlushInterval = 50 * time.Millisecond

// DefaultLoginTimeout is how long a client has, from the start of Run, to
// log in unless Config says otherwise: 10 s, as PocketMine-MP allows. A
// Login of a few MiB crosses a slow mobile link in a few seconds, and until
// then the connection holds a session and its pre-login share of the
// transport's memory without having proven anything.
const DefaultLoginTimeout = 10 * time.Second

// Disconnect messages for sessions the server ends because the client broke
// a limit.
const (
	loginTimeoutMessage     = "Login timed out."
	preLoginTooLargeMessage = "Your login data is too large for this server (is your skin very large?)."
	tooLargeMessage         = "Packet too large."
	budgetMessage           = "Too much data sent too fast."
)

// ErrHandlerPanic is wrapped by the error Run returns when the Handler
// panicked, so a caller can tell a bug in a handler from a misbehaving peer.
var ErrHandlerPanic = errors.New("handler panicked")

// ErrLoginTimeout is wrapped by the error Run returns when the player did
// not log in (see SetIdentity) within Config.LoginTimeout.
var ErrLoginTimeout = errors.New("login timed out")

// Config configures a Session. Its zero value is ready to use: the default
// GateHandler, no logging, batches of 4 MiB before login and 16 MiB after, a
// 10 s login deadline and a 50 ms flush interval.
type Config struct {
	// Handler receives the session's events. Nil means GateHandler{}.
	Handler Handler
	// Log receives the session's messages, with the remote address as
	// context. Nil discards them.
	Log *zerolog.Logger
	// MaxDecompressedSize caps the decompressed size of an incoming batch in
	// bytes once the player has logged in; a bigger batch ends the session
	// with a Disconnect. Zero or less means DefaultMaxDecompressedSize.
	MaxDecompressedSize int
	// MaxPreLoginSize caps the decompressed size of an incoming batch in
	// bytes until the player has logged in (SetIdentity); a bigger batch
	// ends the session with a Disconnect. Zero or less means
	// DefaultMaxPreLoginSize, and it is never more than
	// MaxDecompressedSize.
	MaxPreLoginSize int
	// LoginTimeout is how long after Run starts the player has to log in
	// (SetIdentity) before the session ends with a Disconnect ("Login timed
	// out.") and Run returns an error wrapping ErrLoginTimeout. Zero means
	// DefaultLoginTimeout; negative means no deadline.
	LoginTimeout time.Duration
	// FlushInterval is the longest a written packet is buffered before its
	// batch is sent. Zero or less means DefaultFlushInterval.
	FlushInterval time.Duration
}

// Session is one client's packet loop over a Conn: it decodes the batches the
// client sends into packets for the Handler and batches the packets the
// handler writes. Create it with New and drive it with Run. Its methods are
// safe for concurrent use; closing it from any goroutine is safe and ends
// Run.
//
// Until the player has logged in (SetIdentity) a session is held to less:
// batches decompress to at most Config.MaxPreLoginSize, with a budget of
// about that much decompression in all, and the login must come within
// Config.LoginTimeout. Afterwards batches may reach
// Config.MaxDecompressedSize, within a budget of 32 MiB of decompression a
// second. A client that breaks a limit is sent a Disconnect saying so and
// the session ends; Run's error wraps ErrTooLarge, ErrDecompressionBudget or
// ErrLoginTimeout.
type Session struct {
	conn     Conn
	handler  Handler
	interval time.Duration
	baseLog  zerolog.Logger
	log      atomic.Pointer[zerolog.Logger]
	identity atomic.Pointer[Identity]
	// compressed mirrors enc.compressed for the reading side.
	compressed atomic.Bool
	running    atomic.Bool

	// loggedIn is set by the first SetIdentity, which also closes
	// loginDone to stop the login deadline.
	loggedIn     atomic.Bool
	loginDone    chan struct{}
	loginTimeout time.Duration // 0: no deadline
	// maxSize is the batch cap once logged in; dec.maxSize is the cap in
	// force.
	maxSize int

	// dec is owned by the goroutine running Run.
	dec batchDecoder

	writeMu     sync.Mutex
	enc         batchEncoder // guarded by writeMu
	writeClosed bool         // guarded by writeMu
	// kick wakes the flush loop when the first packet of a batch is
	// buffered, so an idle session has no timer running.
	kick chan struct{}

	closeOnce sync.Once
	closed    chan struct{}
	cause     error // written once inside closeOnce
	closeErr  error // written once inside closeOnce
}

// New returns a Session over conn configured by cfg. It starts nothing: call
// Run. New panics if conn is nil.
func New(conn Conn, cfg Config) *Session {
	if conn == nil {
		panic("session: New with nil Conn")
	}
	s := &Session{
		conn:      conn,
		handler:   cfg.Handler,
		interval:  cfg.FlushInterval,
		baseLog:   zerolog.Nop(),
		kick:      make(chan struct{}, 1),
		closed:    make(chan struct{}),
		loginDone: make(chan struct{}),
	}
	if s.handler == nil {
		s.handler = GateHandler{}
	}
	if s.interval <= 0 {
		s.interval = DefaultFlushInterval
	}
	s.maxSize = cfg.MaxDecompressedSize
	if s.maxSize <= 0 {
		s.maxSize = DefaultMaxDecompressedSize
	}
	s.dec.maxSize = cfg.MaxPreLoginSize
	if s.dec.maxSize <= 0 {
		s.dec.maxSize = DefaultMaxPreLoginSize
	}
	s.dec.maxSize = min(s.dec.maxSize, s.maxSize)
	switch {
	case cfg.LoginTimeout == 0:
		s.loginTimeout = DefaultLoginTimeout
	case cfg.LoginTimeout > 0:
		s.loginTimeout = cfg.LoginTimeout
	}
	if cfg.Log != nil {
		s.baseLog = *cfg.Log
	}
	if a := conn.RemoteAddr(); a != nil {
		s.baseLog = s.baseLog.With().Str("raddr", a.String()).Logger()
	}
	s.log.Store(&s.baseLog)
	return s
}

// Run serves the session until it ends: the client goes away or sends a
// batch that does not decode, the handler returns an error or panics, the
// session is closed, or ctx is done. It calls HandleOpen first and
// HandleClose exactly once at the end, closes the Conn, and returns only once
// every goroutine it started has stopped. The error is nil when this side
// closed the session (Close, Disconnect), context.Cause(ctx) when ctx ended
// it, and otherwise what went wrong. Run panics if called twice.
func (s *Session) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		panic("session: Run called twice")
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.flushLoop(ctx) })
	s.closeWith(s.serve(), nil)
	wg.Wait()
	s.callClose(s.cause)
	if s.cause != nil {
		s.Log().Debug().Err(s.cause).Msg("session ended")
	}
	return s.cause
}

// serve runs the handler over incoming batches until the session must end,
// and returns why (nil when it was closed on purpose).
func (s *Session) serve() error {
	s.dec.budget = newTokenBucket(preLoginDecompressRate, s.dec.maxSize, s.dec.clock())
	if err := s.callOpen(); err != nil {
		return err
	}
	loggedIn := false
	for {
		b, err := s.conn.ReadPacket()
		if s.isClosed() {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read batch: %w", err)
		}
		if !loggedIn && s.loggedIn.Load() {
			// The player logged in during an earlier batch: the batches
			// from here on get the logged-in cap and a fresh budget.
			loggedIn = true
			s.dec.maxSize = s.maxSize
			s.dec.budget = newTokenBucket(decompressRate, s.maxSize, s.dec.clock())
		}
		s.dec.compressed = s.compressed.Load()
		pks, err := s.dec.decode(b)
		if err != nil {
			return s.refuse(err, loggedIn)
		}
		for _, p := range pks {
			if err := s.callPacket(p); err != nil {
				return err
			}
			if s.isClosed() {
				return nil
			}
		}
		s.dec.release()
	}
}

// refuse ends the session over a batch that broke a size or budget limit,
// telling the client why, and returns err. Any other decode error ends it
// without a word: a client that sends malformed batches is not one a
// message would help.
func (s *Session) refuse(err error, loggedIn bool) error {
	var msg string
	switch {
	case errors.Is(err, ErrDecompressionBudget):
		msg = budgetMessage
	case errors.Is(err, ErrTooLarge) && !loggedIn:
		msg = preLoginTooLargeMessage
		err = fmt.Errorf("%w before login", err)
	case errors.Is(err, ErrTooLarge):
		msg = tooLargeMessage
	default:
		return err
	}
	s.closeWith(err, disconnectPacket(DisconnectReasonBadPacket, msg))
	return err
}

// disconnectPacket returns a Disconnect packet with reason and message.
func disconnectPacket(reason DisconnectReason, message string) *Packet {
	pk := disconnect{Reason: reason, Message: message}
	return &Packet{ID: IDDisconnect, Payload: pk.Append(nil)}
}

// flushLoop sends buffered packets FlushInterval after the first of a batch
// was written, ends the session at the login deadline unless the player has
// logged in, and closes the session when ctx is done. Its two timers are
// stopped when it returns, and the login deadline as soon as the player
// logs in, so a session leaves nothing behind.
func (s *Session) flushLoop(ctx context.Context) {
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
				s.closeWith(err, nil)
				return
			}
		case <-loginDone:
			lt.Stop()
			loginC, loginDone = nil, nil
		case <-loginC:
			if !s.loggedIn.Load() {
				err := fmt.Errorf("%w after %v", ErrLoginTimeout, s.loginTimeout)
				s.closeWith(err, disconnectPacket(DisconnectReasonTimeout, loginTimeoutMessage))
				return
			}
			loginC, loginDone = nil, nil
		case <-ctx.Done():
			s.closeWith(context.Cause(ctx), nil)
			return
		case <-s.closed:
			return
		}
	}
}

// callOpen calls HandleOpen, turning a panic into an error.
func (s *Session) callOpen() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.panicked("handle open", r)
		}
	}()
	if err := s.handler.HandleOpen(s); err != nil {
		return fmt.Errorf("handle open: %w", err)
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

// WritePacket buffers a packet with the given id (0 to 0x3ff) and payload for
// the next batch, which is sent within FlushInterval or by Flush. The
// payload is copied, so the caller may reuse it. It returns an error wrapping
// net.ErrClosed once the session is closed.
func (s *Session) WritePacket(id uint32, payload []byte) error {
	p := Packet{ID: id, Payload: payload}
	if err := p.validate(); err != nil {
		return fmt.Errorf("write packet: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.writeClosed {
		return fmt.Errorf("write packet: %w", net.ErrClosed)
	}
	return s.addLocked(p)
}

// addLocked buffers p, sending the pending batch first if it is full.
func (s *Session) addLocked(p Packet) error {
	full := s.enc.count == maxPacketsPerBatch ||
		s.enc.count > 0 && len(s.enc.pending)+len(p.Payload) > maxPendingSize
	if full {
		if err := s.flushLocked(); err != nil {
			return err
		}
	}
	if s.enc.count == 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	s.enc.add(p)
	return nil
}

// Flush sends the buffered packets now, as one batch. It returns an error
// wrapping net.ErrClosed once the session is closed.
func (s *Session) Flush() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.writeClosed {
		return fmt.Errorf("flush: %w", net.ErrClosed)
	}
	return s.flushLocked()
}

// flushLocked encodes and writes the pending batch, if any.
func (s *Session) flushLocked() error {
	if s.enc.count == 0 {
		return nil
	}
	b, err := s.enc.encode()
	if err == nil {
		_, err = s.conn.Write(b)
		if err != nil {
			err = fmt.Errorf("write batch: %w", err)
		}
	}
	s.enc.release()
	return err
}

// EnableCompression flushes whatever is buffered as it stands, then switches
// both directions to the post-NetworkSettings batch format: every batch
// carries a compression id, and outgoing batches of threshold bytes or more
// are compressed with DEFLATE (0 never compresses). A handler calls it right
// after writing NetworkSettings, so that packet leaves uncompressed and the
// next batch read is expected compressed. It returns an error wrapping
// net.ErrClosed once the session is closed.
func (s *Session) EnableCompression(threshold uint16) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.writeClosed {
		return fmt.Errorf("enable compression: %w", net.ErrClosed)
	}
	if err := s.flushLocked(); err != nil {
		return fmt.Errorf("enable compression: %w", err)
	}
	s.enc.compressed = true
	s.enc.threshold = int(threshold)
	s.compressed.Store(true)
	return nil
}

// CompressionEnabled reports whether EnableCompression has been called, that
// is whether NetworkSettings has been sent.
func (s *Session) CompressionEnabled() bool {
	return s.compressed.Load()
}

// Disconnect sends the client a Disconnect packet with reason
// DisconnectReasonKicked and message, which its disconnection screen shows,
// then closes the session: see DisconnectWith.
func (s *Session) Disconnect(message string) error {
	return s.DisconnectWith(DisconnectReasonKicked, message)
}

// DisconnectWith sends the client a Disconnect packet with reason and
// message after anything already buffered, flushes, and closes the Conn
// gracefully so the packet is delivered before the transport closes. Run
// then returns nil. It returns an error wrapping net.ErrClosed if the
// session was already closed, and otherwise the error of writing or closing.
func (s *Session) DisconnectWith(reason DisconnectReason, message string) error {
	first, err := s.closeWith(nil, disconnectPacket(reason, message))
	if !first {
		return fmt.Errorf("disconnect: %w", net.ErrClosed)
	}
	return err
}

// Close flushes what is buffered and closes the Conn gracefully, ending Run,
// which then returns nil. It waits for a Conn.Write in progress, so it is as
// prompt as the transport's writes. It returns the error of flushing or
// closing the first time and nil after.
func (s *Session) Close() error {
	first, err := s.closeWith(nil, nil)
	if !first {
		return nil
	}
	return err
}

// closeWith ends the session the first time it is called, recording cause
// as the reason: it buffers last (if not nil), flushes, refuses further
// writes and closes the Conn. It reports whether this call closed the
// session, and the error of that close.
func (s *Session) closeWith(cause error, last *Packet) (first bool, err error) {
	s.closeOnce.Do(func() {
		first = true
		s.writeMu.Lock()
		var werr error
		if last != nil {
			werr = s.addLocked(*last)
		}
		if werr == nil {
			werr = s.flushLocked()
		}
		s.writeClosed = true
		s.writeMu.Unlock()
		s.cause = cause
		close(s.closed)
		s.closeErr = errors.Join(werr, s.conn.Close())
	})
	return first, s.closeErr
}

// isClosed reports whether the session has been closed.
func (s *Session) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// Identity returns the identity set by SetIdentity, and false before then.
func (s *Session) Identity() (Identity, bool) {
	if id := s.identity.Load(); id != nil {
		return *id, true
	}
	return Identity{}, false
}

// SetIdentity records who the client is, typically from ParseLogin, and adds
// the player's name and UUID to the session's logger. The first call also
// marks the player logged in: the login deadline stops, the batches after
// the current one get the logged-in size cap and decompression budget, and
// the Conn, if it has a Promote method, is told the connection now carries
// a player. A handler calls it once it accepts a Login, and never for one it
// refuses.
func (s *Session) SetIdentity(id Identity) {
	s.identity.Store(&id)
	l := s.baseLog.With().Str("player", id.DisplayName).Str("uuid", id.UUID.String()).Logger()
	s.log.Store(&l)
	if !s.loggedIn.CompareAndSwap(false, true) {
		return
	}
	close(s.loginDone)
	if p, ok := s.conn.(promoter); ok {
		p.Promote()
	}
}

// RemoteAddr returns the client's address, as the Conn reports it.
func (s *Session) RemoteAddr() net.Addr {
	return s.conn.RemoteAddr()
}

// Log returns the session's logger, which carries the remote address and,
// once known, the player. The caller must not modify it.
func (s *Session) Log() *zerolog.Logger {
	return s.log.Load()
}
