package session

import (
	"crypto/ecdsa"
	"errors"
	"time"

	"github.com/rs/zerolog"
)

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
