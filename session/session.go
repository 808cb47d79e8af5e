package session

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Conn is the transport a Session runs over. raknet.Conn satisfies it. A
// Conn that also has a Promote() method is told, through it, when the
// player has logged in; one with a NetStats() NetStats method backs
// Session.NetStats.
type Conn interface {
	// ReadPacket returns the next 0xfe batch the peer sent. The slice is
	// the session's until the next ReadPacket: the session decrypts it in
	// place.
	ReadPacket() ([]byte, error)
	// Write sends b as one batch, reliably and in order. As io.Writer
	// requires, it must not keep b after returning. It may block while the
	// peer does not take data; the session bounds that wait with
	// Config.WriteTimeout.
	Write(b []byte) (int, error)
	// Close delivers what was written, then closes the connection. It must
	// unblock a pending ReadPacket and a pending Write, and be safe to call
	// while one is in progress.
	Close() error
	// RemoteAddr returns the peer's address.
	RemoteAddr() net.Addr
}

// promoter is a Conn that treats a connection differently once its player
// has logged in. raknet.Conn, for one, gives a connection a much smaller
// share of the listener's memory budget before Promote than after. The
// session calls Promote once, when the login completes, and never for a
// session whose login was refused.
type promoter interface {
	Promote()
}

// Defaults for zero Config fields.
const (
	// DefaultFlushInterval is how long a written packet waits, at most,
	// for others to share its batch: 50 ms, one game tick, as
	// gophertunnel flushes.
	DefaultFlushInterval = 50 * time.Millisecond
	// DefaultLoginTimeout is how long a client has, from the start of Run,
	// to log in: 10 s, as PocketMine-MP allows. A Login of a few MiB
	// crosses a slow mobile link in a few seconds, and until then the
	// connection holds a session and its pre-login share of the
	// transport's memory without having proven anything.
	DefaultLoginTimeout = 10 * time.Second
	// DefaultWriteTimeout is how long a write may wait on a transport that
	// does not take data: 5 s, longer than any pause of a client that is
	// still reading, short enough that a stuck one does not hold its
	// slot for long.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultCompressionThreshold is the smallest batch both sides
	// compress, in bytes, as announced in NetworkSettings.
	DefaultCompressionThreshold = 512
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

// ErrHandlerPanic is wrapped by the error Run returns when NewHandler,
// PreLogin or the Handler panicked, so a caller can tell a bug in a handler
// from a misbehaving peer.
var ErrHandlerPanic = errors.New("handler panicked")

// ErrLoginTimeout is wrapped by the error Run returns when the player did
// not log in within Config.LoginTimeout.
var ErrLoginTimeout = errors.New("login timed out")

// ErrWriteTimeout is wrapped by the error Run returns when a write to the
// Conn did not complete within Config.WriteTimeout: the client stopped
// reading.
var ErrWriteTimeout = errors.New("write timed out")

// Config configures a Session. Its zero value is ready to use: the gate
// (Gate(DefaultGateMessage)), every protocol in Protocols, batches of 512 bytes
// or more compressed, no encryption, no logging, batches of 4 MiB before
// login and 16 MiB after, a 10 s login deadline, a 50 ms flush interval and
// a 5 s write timeout.
type Config struct {
	// NewHandler is called once per session, on the session's goroutine,
	// when the player has logged in: network settings negotiated, protocol
	// accepted, Login parsed, with Encryption the handshake done, and
	// PlayStatus LoginSuccess buffered, so whatever NewHandler writes
	// (ResourcePacksInfo, typically) follows it. s.Identity() is set. It
	// returns the session's handler; an error ends the session, and a
	// *DisconnectError (see Kick) is shown to the client first. Nil means
	// Gate(DefaultGateMessage).
	NewHandler func(s *Session) (Handler, error)
	// AcceptedProtocols lists the client protocols let in. Empty means
	// every protocol in Protocols. A client older than the newest listed is sent
	// PlayStatus LoginFailedClient, any other PlayStatus LoginFailedServer,
	// as vanilla servers do; the check runs at RequestNetworkSettings and
	// again at Login.
	AcceptedProtocols []int32
	// CompressionThreshold is announced in NetworkSettings: batches this
	// size or larger are compressed (with DEFLATE). 0 means
	// DefaultCompressionThreshold.
	CompressionThreshold uint16
	// Encryption runs the Bedrock encryption handshake after Login
	// (ServerToClientHandshake, ClientToServerHandshake), then encrypts
	// every batch both ways with AES-256-CTR and a SHA-256 checksum, as
	// BDS does. A Login without a usable identity public key is then
	// refused.
	Encryption bool
	// ServerKey is the P-384 key the handshake is signed and derived with.
	// Nil means one key made the first time a session needs it and shared
	// by every session of the process after. New panics for a key on
	// another curve.
	ServerKey *ecdsa.PrivateKey
	// VerifyLogin, if set, checks every Login before the session goes on
	// (online mode): it gets the identity ParseLogin read and the signed
	// request, and returns the identity the session keeps, Verified set
	// for a proven one. It runs on the session's goroutine, after the
	// protocol check and before the encryption handshake, which then uses
	// the returned IdentityPublicKey; the login deadline still runs. An
	// error refuses the player: the *DisconnectError it wraps is shown,
	// otherwise NotSignedInMessage (DisconnectReasonNotAuthenticated). Nil
	// accepts every Login unverified (offline mode).
	VerifyLogin func(s *Session, id Identity, req LoginRequest) (Identity, error)
	// PreLogin, if set, sees every packet the client sends before
	// NewHandler is called (RequestNetworkSettings, Login,
	// ClientToServerHandshake and anything else), raw, before the session
	// handles it; p.Payload is valid only until it returns. An error ends
	// the session (a *DisconnectError is shown first), a panic too. It is
	// for proxies and tools, and is called on the session's goroutine.
	PreLogin func(s *Session, p Packet) error
	// Log receives the session's messages, with the remote address as
	// context. Nil discards them.
	Log *zerolog.Logger
	// MaxDecompressedSize caps the decompressed size of an incoming batch in
	// bytes once the player has logged in; a bigger batch ends the session
	// with a Disconnect. Zero or less means DefaultMaxDecompressedSize.
	MaxDecompressedSize int
	// MaxPreLoginSize caps the decompressed size of an incoming batch in
	// bytes until the player has logged in; a bigger batch ends the
	// session with a Disconnect. Zero or less means DefaultMaxPreLoginSize,
	// and it is never more than MaxDecompressedSize.
	MaxPreLoginSize int
	// LoginTimeout is how long after Run starts the player has to log in
	// (the handshake done, when Encryption is on) before the session ends
	// with a Disconnect ("Login timed out.") and Run returns an error
	// wrapping ErrLoginTimeout. Zero means DefaultLoginTimeout; negative
	// means no deadline.
	LoginTimeout time.Duration
	// FlushInterval is the longest a written packet is buffered before its
	// batch is sent. Zero or less means DefaultFlushInterval.
	FlushInterval time.Duration
	// WriteTimeout bounds how long a write to the Conn may wait on a
	// transport that does not take data (a client that stopped reading):
	// past it the session ends and Run's error wraps ErrWriteTimeout, so
	// WritePacket and Flush never block much longer. Zero or less means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
}

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

// Session is one client's packet loop over a Conn. It runs the pre-game
// protocol itself (network settings, protocol check, Login, with
// Config.Encryption the encryption handshake), then hands every game packet
// of the logged-in player to the Handler Config.NewHandler made for it, and
// batches the packets written. Create it with New and drive it with Run.
// Its methods are safe for concurrent use; Close, Disconnect and
// DisconnectWith only ask the session to end, which it does on its own
// goroutines (Done tells when).
//
// Until the player has logged in a session is held to less: batches
// decompress to at most Config.MaxPreLoginSize, with a budget of about that
// much decompression in all, and the login must come within
// Config.LoginTimeout. Afterwards batches may reach
// Config.MaxDecompressedSize, within a budget of 32 MiB of decompression a
// second. A client that breaks a limit is sent a Disconnect saying so and
// the session ends; Run's error wraps ErrTooLarge, ErrDecompressionBudget or
// ErrLoginTimeout.
type Session struct {
	conn         Conn
	newHandler   func(*Session) (Handler, error)
	preLogin     func(*Session, Packet) error
	verify       func(*Session, Identity, LoginRequest) (Identity, error)
	accepted     []int32
	threshold    uint16
	encryption   bool
	transport    Transport
	serverKey    *ecdsa.PrivateKey // nil: processKey
	interval     time.Duration
	writeTimeout time.Duration
	loginTimeout time.Duration // 0: no deadline
	// maxSize is the batch cap once logged in; dec.maxSize is the cap in
	// force.
	maxSize int

	baseLog  zerolog.Logger
	log      atomic.Pointer[zerolog.Logger]
	identity atomic.Pointer[Identity]
	protocol atomic.Int32
	running  atomic.Bool
	stats    counters

	// Owned by the goroutine running Run.
	phase   phase
	handler Handler // nil until NewHandler returned one
	dec     batchDecoder
	// batchEncrypted reports whether the batch being dispatched was
	// encrypted.
	batchEncrypted bool
	// pending is the identity of the Login, published (Identity) once the
	// login completes.
	pending *Identity
	// skipped holds the IDs of the packets Skip has logged.
	skipped skippedIDs
	// loggedIn is set when the login completes, which also closes
	// loginDone to stop the login deadline.
	loggedIn  bool
	loginDone chan struct{}

	// writeMu guards the write side. It is a channel of one token rather
	// than a sync.Mutex so that a writer waiting behind one stuck on the
	// transport is blocked durably in testing/synctest's terms, and fake
	// time runs on to the watchdog.
	writeMu     chan struct{}
	enc         batchEncoder // guarded by writeMu
	writeClosed bool         // guarded by writeMu
	// watchdog ends the session when a Conn.Write outlasts writeTimeout;
	// it is armed around every Write, under writeMu. watchdogs counts
	// the arming that may still run its function, so Run can wait for it.
	watchdog  *time.Timer
	watchdogs sync.WaitGroup
	// kick wakes the flush loop when the first packet of a batch is
	// buffered, so an idle session has no timer running.
	kick chan struct{}

	ctx    context.Context
	cancel context.CancelCauseFunc
	// closeOnce records the first request to end the session: its cause
	// and the packet to send last. closing is closed then, and closingNow
	// set, so writes after it are refused and the Disconnect stays last.
	closeOnce  sync.Once
	closing    chan struct{}
	closingNow atomic.Bool
	cause      error   // written once inside closeOnce
	last       *Packet // written once inside closeOnce
	connOnce   sync.Once
	done       chan struct{}
}

// New returns a Session over conn configured by cfg. It starts nothing: call
// Run. New panics if conn is nil or cfg.ServerKey is not a P-384 key.
func New(conn Conn, cfg Config) *Session {
	if conn == nil {
		panic("session: New with nil Conn")
	}
	if cfg.ServerKey != nil && cfg.ServerKey.Curve != elliptic.P384() {
		panic("session: Config.ServerKey is not a P-384 key")
	}
	s := &Session{
		conn:         conn,
		newHandler:   cfg.NewHandler,
		preLogin:     cfg.PreLogin,
		verify:       cfg.VerifyLogin,
		accepted:     slices.Clone(cfg.AcceptedProtocols),
		threshold:    cfg.CompressionThreshold,
		encryption:   cfg.Encryption,
		serverKey:    cfg.ServerKey,
		interval:     cfg.FlushInterval,
		writeTimeout: cfg.WriteTimeout,
		baseLog:      zerolog.Nop(),
		kick:         make(chan struct{}, 1),
		writeMu:      make(chan struct{}, 1),
		closing:      make(chan struct{}),
		done:         make(chan struct{}),
		loginDone:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.transport = transportOf(conn)
	if s.transport.Secure {
		s.encryption = false // the transport encrypts
	}
	s.dec.framed = s.transport.Framed
	s.enc.framed = s.transport.Framed
	if s.newHandler == nil {
		s.newHandler = Gate(DefaultGateMessage)
	}
	if len(s.accepted) == 0 {
		s.accepted = KnownProtocols()
	}
	if s.threshold == 0 {
		s.threshold = DefaultCompressionThreshold
	}
	if s.interval <= 0 {
		s.interval = DefaultFlushInterval
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = DefaultWriteTimeout
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

// fail asks the session to end with err as its cause (nothing if err is
// nil), sending the Disconnect of a *DisconnectError that err wraps.
func (s *Session) fail(err error) {
	var last *Packet
	if de, ok := errors.AsType[*DisconnectError](err); ok {
		last = de.packet()
	}
	s.requestClose(err, last)
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

// Identity returns who the client said it is in its Login, and false until
// the login has completed (with Config.Encryption, until the handshake is
// done): it is set when NewHandler is called.
func (s *Session) Identity() (Identity, bool) {
	if id := s.identity.Load(); id != nil {
		return *id, true
	}
	return Identity{}, false
}

// setIdentity records who the client is, for Identity once the login
// completes, and adds the player's name and UUID to the session's logger.
func (s *Session) setIdentity(id Identity) {
	s.pending = &id
	l := s.baseLog.With().Str("player", id.DisplayName).Str("uuid", id.UUID.String()).Logger()
	s.log.Store(&l)
}

// Protocol returns the client's network protocol as its
// RequestNetworkSettings stated it, and 0 before then.
func (s *Session) Protocol() int32 {
	return s.protocol.Load()
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
