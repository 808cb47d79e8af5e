package session

import (
	"fmt"
	"io"
)

// DisconnectReason is the reason code of a Disconnect packet, a zigzag
// varint32 on the wire. It picks the error code the client's disconnection
// screen shows. The numbering is Mojang's, as gophertunnel v1.62.0 lists it.
type DisconnectReason int32

// Disconnect reasons a server commonly sends.
const (
	// DisconnectReasonUnknown gives no reason.
	DisconnectReasonUnknown DisconnectReason = 0
	// DisconnectReasonVersionMismatch refuses an incompatible client.
	DisconnectReasonVersionMismatch DisconnectReason = 8
	// DisconnectReasonServerFull refuses a client because the server is
	// full.
	DisconnectReasonServerFull DisconnectReason = 25
	// DisconnectReasonTimeout ends a session that took too long, as one
	// that did not log in by the deadline.
	DisconnectReasonTimeout DisconnectReason = 32
	// DisconnectReasonOutdatedServer says the server is older than the
	// client.
	DisconnectReasonOutdatedServer DisconnectReason = 34
	// DisconnectReasonOutdatedClient says the client is older than the
	// server.
	DisconnectReasonOutdatedClient DisconnectReason = 35
	// DisconnectReasonDisconnected is a plain disconnection.
	DisconnectReasonDisconnected DisconnectReason = 41
	// DisconnectReasonInvalidPlayer refuses a login whose player data is
	// invalid.
	DisconnectReasonInvalidPlayer DisconnectReason = 42
	// DisconnectReasonNotAllowed refuses a player who may not join, as a ban
	// or whitelist would.
	DisconnectReasonNotAllowed DisconnectReason = 45
	// DisconnectReasonNotAuthenticated refuses a player whose Xbox Live
	// sign-in could not be verified, or whose Login is not bound to the
	// key its transport proved.
	DisconnectReasonNotAuthenticated DisconnectReason = 46
	// DisconnectReasonKicked removes a player on the server's initiative;
	// Session.Disconnect uses it.
	DisconnectReasonKicked DisconnectReason = 55
	// DisconnectReasonShutdown says the server is shutting down.
	DisconnectReasonShutdown DisconnectReason = 68
	// DisconnectReasonBadPacket ends a session whose client sent a batch
	// beyond a size or decompression limit.
	DisconnectReasonBadPacket DisconnectReason = 90
)

// String returns the reason's name.
func (r DisconnectReason) String() string {
	switch r {
	case DisconnectReasonUnknown:
		return "Unknown"
	case DisconnectReasonVersionMismatch:
		return "VersionMismatch"
	case DisconnectReasonServerFull:
		return "ServerFull"
	case DisconnectReasonTimeout:
		return "Timeout"
	case DisconnectReasonOutdatedServer:
		return "OutdatedServer"
	case DisconnectReasonOutdatedClient:
		return "OutdatedClient"
	case DisconnectReasonDisconnected:
		return "Disconnected"
	case DisconnectReasonInvalidPlayer:
		return "InvalidPlayer"
	case DisconnectReasonNotAllowed:
		return "NotAllowed"
	case DisconnectReasonNotAuthenticated:
		return "NotAuthenticated"
	case DisconnectReasonKicked:
		return "Kicked"
	case DisconnectReasonShutdown:
		return "Shutdown"
	case DisconnectReasonBadPacket:
		return "BadPacket"
	}
	return fmt.Sprintf("DisconnectReason(%d)", int32(r))
}

// disconnect is the Disconnect packet (0x05), laid out as in gophertunnel
// v1.62.0's disconnect.go:
//
//	reason                    varint32 (zigzag)
//	hide disconnection screen bool
//	message                   string   only when the screen is shown
//	filtered message          string   only when the screen is shown
type disconnect struct {
	Reason     DisconnectReason
	HideScreen bool
	Message    string
	// FilteredMessage replaces Message on clients with the profanity filter
	// on, when it is not empty.
	FilteredMessage string
}

// Append appends the packet's fields to b.
func (m *disconnect) Append(b []byte) []byte {
	b = appendVarint32(b, int32(m.Reason))
	b = appendBool(b, m.HideScreen)
	if !m.HideScreen {
		b = appendString(b, m.Message)
		b = appendString(b, m.FilteredMessage)
	}
	return b
}

// Decode reads the packet's fields from b and returns the bytes consumed.
func (m *disconnect) Decode(b []byte) (int, error) {
	reason, off, err := readVarint32(b)
	if err != nil {
		return 0, fmt.Errorf("decode DISCONNECT: reason: %w", err)
	}
	if off == len(b) {
		return 0, fmt.Errorf("decode DISCONNECT: %w", io.ErrUnexpectedEOF)
	}
	hide, err := readBool(b[off])
	if err != nil {
		return 0, fmt.Errorf("decode DISCONNECT: hide screen: %w", err)
	}
	off++
	*m = disconnect{Reason: DisconnectReason(reason), HideScreen: hide}
	if hide {
		return off, nil
	}
	msg, n, err := readString(b[off:])
	if err != nil {
		return 0, fmt.Errorf("decode DISCONNECT: message: %w", err)
	}
	off += n
	filtered, n, err := readString(b[off:])
	if err != nil {
		return 0, fmt.Errorf("decode DISCONNECT: filtered message: %w", err)
	}
	m.Message, m.FilteredMessage = msg, filtered
	return off + n, nil
}

// DisconnectError ends a session with a Disconnect packet that the client
// shows on its disconnection screen. NewHandler, PreLogin or a Handler
// method returns one, or an error wrapping one, to refuse or remove a
// player: the session sends the Disconnect after whatever is buffered, then
// closes, and Run's error wraps the DisconnectError. It is a plain value,
// safe to share.
type DisconnectError struct {
	// Reason picks the error code the client shows.
	Reason DisconnectReason
	// Message is the text the client shows.
	Message string
}

// Error returns the reason and the message.
func (e *DisconnectError) Error() string {
	return fmt.Sprintf("disconnect (%v): %s", e.Reason, e.Message)
}

// packet returns the Disconnect packet e stands for.
func (e *DisconnectError) packet() *Packet {
	return disconnectPacket(e.Reason, e.Message)
}

// Kick returns a *DisconnectError with DisconnectReasonKicked and message,
// for a handler to return: return session.Kick("Banned.").
func Kick(message string) error {
	return &DisconnectError{Reason: DisconnectReasonKicked, Message: message}
}

// disconnectPacket returns a Disconnect packet with reason and message.
func disconnectPacket(reason DisconnectReason, message string) *Packet {
	pk := disconnect{Reason: reason, Message: message}
	return &Packet{ID: IDDisconnect, Payload: pk.Append(nil)}
}
