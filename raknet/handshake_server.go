package raknet

import (
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// errShortProbe refuses an OpenConnectionRequest1 padded below MinMTU.
var errShortProbe = errors.New("OPEN_CONNECTION_REQUEST_1 probes below the minimum MTU")

// responder is the server side of the offline handshake as a pure
// function of a request and what the listener knows: unconnected ping →
// pong, OpenConnectionRequest1 → Reply1 (or IncompatibleProtocolVersion),
// OpenConnectionRequest2 → a decision the listener carries out. It does no
// I/O and keeps no state of its own, so every rule is a unit-testable
// decision. Replies are appended to the caller's buffer.
type responder struct {
	guid      int64
	protocols []byte // accepted RakNet protocol versions; the first is ours
	maxMTU    int
	// cookies signs Reply1's cookie; nil sends none (tests of the rest).
	cookies *guard.Cookies
}

// minCookieProtocol is the first RakNet protocol version whose clients are
// sent a cookie. Clients of protocol 10 in use (rust-raknet and
// jsp-raknet, the backends of PrismarineJS bedrock-protocol) read
// OpenConnectionReply1 as if it had no security field, so a cookie would
// corrupt the MTU they read; they are admitted without one, into the
// small pool of unproven handshakes.
const minCookieProtocol = 11

// pong answers an unconnected ping (0x01, or 0x02 which is answered only
// while open reports free slots) with data as the pong's payload. It
// returns dst unchanged when nothing is to be sent.
func (r *responder) pong(dst, b, data []byte, open bool) ([]byte, error) {
	var m wire.UnconnectedPing
	if _, err := m.Decode(b); err != nil {
		return dst, err
	}
	if m.OpenConnections && !open {
		return dst, nil
	}
	pong := wire.UnconnectedPong{Time: m.Time, ServerGUID: r.guid, Data: data}
	return pong.Append(dst), nil
}

// reply1 answers OpenConnectionRequest1 from a peer: Reply1 granting the
// probed MTU (the padded size plus the IP and UDP headers) within our
// bounds, or IncompatibleProtocolVersion naming our version.
func (r *responder) reply1(dst, b []byte, from netip.AddrPort, now time.Time) ([]byte, error) {
	var m wire.OpenConnectionRequest1
	if _, err := m.Decode(b); err != nil {
		return dst, err
	}
	if probedMTU(m.Size, from) < MinMTU {
		// No real client probes below the minimum MTU; answering would
		// send more than such a request carries.
		return dst, errShortProbe
	}
	if !slices.Contains(r.protocols, m.Protocol) {
		reply := wire.IncompatibleProtocolVersion{Protocol: r.protocols[0], ServerGUID: r.guid}
		return reply.Append(dst), nil
	}
	reply := wire.OpenConnectionReply1{ServerGUID: r.guid, MTU: uint16(clampMTU(probedMTU(m.Size, from), r.maxMTU))}
	if r.cookies != nil && m.Protocol >= minCookieProtocol {
		reply.Security, reply.Cookie = true, r.cookies.Issue(key(from), m.Protocol, now)
	}
	return reply.Append(dst), nil
}

// r2Action is what the listener does with an OpenConnectionRequest2.
type r2Action uint8

const (
	// r2Accept: create the connection and send the reply.
	r2Accept r2Action = iota
	// r2Resend: a retried request of the live connection: send its reply
	// again.
	r2Resend
	// r2Replace: another client process on the address of a connection
	// still in its handshake (a client restarted at once): the old one is
	// closed, the new one accepted.
	r2Replace
	// r2AlreadyConnected: another GUID at the address of an established
	// connection, which stays: AlreadyConnected. A client that restarted
	// on the same port gets in once the old connection timed out.
	r2AlreadyConnected
	// r2Full: no room: NoFreeIncomingConnections.
	r2Full
	// r2PerIPFull: the peer's IP has as many established connections as
	// it may: NoFreeIncomingConnections.
	r2PerIPFull
	// r2RateLimited: the peer's IP started too many handshakes lately:
	// nothing is answered.
	r2RateLimited
	// r2Drop: the pool of unproven handshakes is full: nothing is
	// answered.
	r2Drop
)

func (a r2Action) String() string {
	switch a {
	case r2Accept:
		return "accept"
	case r2Resend:
		return "resend"
	case r2Replace:
		return "replace"
	case r2AlreadyConnected:
		return "already-connected"
	case r2Full:
		return "full"
	case r2PerIPFull:
		return "per-ip-full"
	case r2RateLimited:
		return "rate-limited"
	default:
		return "drop"
	}
}

// peerView is what the listener knows of a live connection from the
// requesting address.
type peerView struct {
	guid        int64  // the GUID its OpenConnectionRequest2 named
	reply2      []byte // the Reply2 it was sent
	established bool
}

// r2State is what the listener knows when an OpenConnectionRequest2
// arrives.
type r2State struct {
	// unprovenFull reports that the pool of handshakes admitted without
	// a cookie is full.
	unprovenFull bool
	// live is the connection already at the peer's address, if any.
	live *peerView
	// full reports that established connections are at their cap;
	// pendingFull that the pool of handshakes the request would join is.
	full, pendingFull bool
	// ipFull reports that the peer's IP has as many established
	// connections as it may.
	ipFull bool
	// ipRate, if set, charges the peer's IP for a handshake and reports
	// whether its rate allowed it. It is called only for a proven request
	// about to be accepted, so that a retry or a refusal costs nothing.
	ipRate func() bool
}

// r2Decision is the responder's answer to an OpenConnectionRequest2.
type r2Decision struct {
	action r2Action
	// proven is set when the request echoed a valid cookie: the client
	// receives at its address. An unproven request joins the pool of
	// unproven handshakes.
	proven bool
	mtu    int   // the MTU granted (r2Accept, r2Replace)
	guid   int64 // the client's GUID
	// reply is the datagram to send, appended to the caller's buffer:
	// Reply2 (r2Accept, r2Replace, and a copy of the stored one for
	// r2Resend), AlreadyConnected or NoFreeIncomingConnections; empty
	// for r2Drop and r2RateLimited.
	reply []byte
}

// count adds a decision that creates no connection to the counters it
// belongs to; st is the state it was made in.
func (d *r2Decision) count(n *counters, st *r2State) {
	switch d.action {
	case r2Full:
		n.refused.Add(1)
		if !st.full {
			n.poolFull.Add(1)
		}
	case r2AlreadyConnected:
		n.alreadyConnected.Add(1)
	case r2Drop:
		n.poolFull.Add(1)
	case r2PerIPFull, r2RateLimited:
		n.perIPLimited.Add(1)
	}
}

// check2 decodes an OpenConnectionRequest2 from a peer at now and checks
// its cookie: proven when it echoes one we issued for the address (or
// when no cookies are issued), badCookie when it carries another. One
// without a cookie is neither.
func (r *responder) check2(b []byte, from netip.AddrPort, now time.Time) (m wire.OpenConnectionRequest2, proven, badCookie bool, err error) {
	if _, err := m.Decode(b); err != nil {
		return m, false, false, err
	}
	if r.cookies == nil {
		return m, true, false, nil
	}
	if !m.HasCookie {
		return m, false, false, nil
	}
	for _, p := range r.protocols {
		if p >= minCookieProtocol && r.cookies.Verify(key(from), p, m.Cookie, now) {
			return m, true, false, nil
		}
	}
	return m, false, true, nil
}

// request2 decides what a checked OpenConnectionRequest2 from a peer
// leads to. One without a cookie is admitted only into the pool of
// unproven handshakes, and never displaces a connection; the per-IP cap
// and rate apply to proven ones.
func (r *responder) request2(dst []byte, m *wire.OpenConnectionRequest2, proven bool, from netip.AddrPort, st r2State) r2Decision {
	d := r2Decision{guid: m.ClientGUID, action: r2Accept, proven: proven}
	switch {
	case st.live != nil && st.live.guid == m.ClientGUID:
		// A retried request: answered the same way.
		d.action, d.reply = r2Resend, append(dst, st.live.reply2...)
		return d
	case st.live != nil && (st.live.established || !proven):
		// An established connection is never displaced by a request, nor
		// any connection by an unproven one.
		reply := wire.Notice{ID: wire.IDAlreadyConnected, ServerGUID: r.guid}
		d.action, d.reply = r2AlreadyConnected, reply.Append(dst)
		return d
	case st.live != nil:
		// The replaced handshake leaves its room in the pool to this one.
		d.action, st.pendingFull = r2Replace, false
	case proven && st.ipFull:
		reply := wire.Notice{ID: wire.IDNoFreeIncomingConnections, ServerGUID: r.guid}
		d.action, d.reply = r2PerIPFull, reply.Append(dst)
		return d
	}
	if !proven && st.unprovenFull {
		// An unproven address gets no reply it could be reflected with.
		d.action, d.reply = r2Drop, dst
		return d
	}
	if st.full || (proven && st.pendingFull) {
		reply := wire.Notice{ID: wire.IDNoFreeIncomingConnections, ServerGUID: r.guid}
		d.action, d.reply = r2Full, reply.Append(dst)
		return d
	}
	if proven && st.ipRate != nil && !st.ipRate() {
		d.action, d.reply = r2RateLimited, dst
		return d
	}
	d.mtu = clampMTU(int(m.MTU), r.maxMTU)
	reply := wire.OpenConnectionReply2{ServerGUID: r.guid, ClientAddr: key(from), MTU: uint16(d.mtu)}
	d.reply = reply.Append(dst)
	return d
}
