package raknet

import (
	"errors"
	"net"

	"github.com/basaltmc/basalt/raknet/internal/reliability"
)

// Errors callers branch on. Errors returned by public methods are
// *net.OpError values wrapping these; use errors.Is.
var (
	// ErrPeerClosed reports that the peer sent DisconnectionNotification.
	// It comes wrapped together with net.ErrClosed.
	ErrPeerClosed = errors.New("connection closed by peer")
	// ErrPeerTimeout reports that the peer went silent for longer than the
	// configured timeout. It comes wrapped together with net.ErrClosed.
	ErrPeerTimeout = errors.New("peer timed out")
	// ErrListenerClosed is returned by Accept after Close. It wraps
	// net.ErrClosed.
	ErrListenerClosed = &wrapped{msg: "use of closed listener", err: net.ErrClosed}
	// ErrBufferTooSmall is returned by Read when a packet does not fit.
	ErrBufferTooSmall = errors.New("buffer too small for packet")
	// ErrConnectionRefused is returned by Dial when the server refuses the
	// connection (full, banned, already connected or recently connected).
	ErrConnectionRefused = errors.New("connection refused")
	// ErrIncompatibleProtocol is returned by Dial when the server speaks no
	// RakNet protocol version the dialer supports.
	ErrIncompatibleProtocol = errors.New("incompatible RakNet protocol version")

	// ErrMessageTooLarge is returned by a write of a message over the
	// size limit (8 MiB).
	ErrMessageTooLarge = reliability.ErrMessageTooLarge
	// ErrEmptyMessage is returned by a write of an empty message, which
	// RakNet cannot carry.
	ErrEmptyMessage = reliability.ErrEmptyMessage
	// ErrInvalidChannel is returned by a write on an ordering channel
	// outside 0-31.
	ErrInvalidChannel = reliability.ErrInvalidChannel
	// ErrInvalidReliability is returned by a write with a Reliability
	// outside the RakNet ones.
	ErrInvalidReliability = reliability.ErrReliability
)

// wrapped is an error with its own text that also matches err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// closedBy returns an error that matches both net.ErrClosed and reason.
func closedBy(reason error) error {
	return &wrapped{msg: reason.Error(), err: errors.Join(net.ErrClosed, reason)}
}
