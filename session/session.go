package session

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

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
