package query

import (
	"errors"
	"net/netip"
	"time"
)

// ErrBadToken is returned by Answer for a stat request whose token was not
// issued to its sender's address, or has expired.
var ErrBadToken = errors.New("query: bad challenge token")

// Responder answers Query requests. A handshake gets a token bound to the
// sender's address; a stat request gets a reply only with a valid token,
// which proves the address, so a forged source can be made to receive at
// most a handshake reply: 16 bytes for a 7-byte request, 2.3 times the
// payload and 1.3 times the datagram with its IPv4 and UDP headers (1.2
// with IPv6's).
//
// A Responder is safe for concurrent use if Status is. Its fields must not
// change once it is in use.
type Responder struct {
	// Tokens issues and checks the challenge tokens. It must be set.
	Tokens *Tokens
	// Status returns what a stat reply says. It is called for each stat
	// request with a valid token, and never for any other. It must be set.
	Status func() Status
}

// Answer appends the reply to the request req from from to dst and returns
// it. A datagram it refuses, malformed or a stat request with a bad token,
// gets dst back unchanged and an error: ErrBadToken, ErrNotQuery,
// ErrUnknownType, or one wrapping io.ErrUnexpectedEOF. Refusing allocates
// nothing, and neither does answering a handshake. Answer never keeps req.
//
// Its signature is that of raknet.ListenConfig.Query.
func (r *Responder) Answer(dst, req []byte, from netip.AddrPort, now time.Time) ([]byte, error) {
	var q Request
	if _, err := q.Decode(req); err != nil {
		return dst, err
	}
	if q.Type == TypeHandshake {
		return AppendHandshake(dst, q.SessionID, r.Tokens.Issue(from, now)), nil
	}
	if !r.Tokens.Verify(from, q.Token, now) {
		return dst, ErrBadToken
	}
	st := r.Status()
	if q.Full {
		return AppendFullStat(dst, q.SessionID, &st), nil
	}
	return AppendBasicStat(dst, q.SessionID, &st), nil
}
