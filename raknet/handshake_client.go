package raknet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// initPhase is where a dial's offline handshake stands.
type initPhase uint8

const (
	// phaseProbe: OpenConnectionRequest1 probes, largest MTU first.
	phaseProbe initPhase = iota
	// phaseRequest2: OpenConnectionRequest2 fixes the MTU.
	phaseRequest2
	// phaseOpen: Reply2 arrived; the connected handshake follows.
	phaseOpen
)

func (p initPhase) String() string {
	switch p {
	case phaseProbe:
		return "probe"
	case phaseRequest2:
		return "request2"
	default:
		return "open"
	}
}

// initiator is the client side of the offline handshake as a pure state
// machine: it probes the MTU with OpenConnectionRequest1 like the vanilla
// client (each MTU a few times, largest first), falls back once to the
// server's RakNet version, echoes Reply1's cookie in
// OpenConnectionRequest2 and takes Reply2's MTU. The dial loop sends what
// poll returns, feeds it every offline datagram from the server and waits
// until the time poll names.
type initiator struct {
	server   netip.AddrPort // unmapped
	guid     int64
	proto    byte
	mtus     []int // to probe, largest first, within the dialer's cap
	attempts int   // tries per MTU before the next
	retry    time.Duration

	phase          initPhase
	idx, tries     int       // MTU being probed; tries sent of the current request
	due            time.Time // when the next request goes out; zero: now
	retriedVersion bool
	probed         int // the MTU whose probe was answered
	mtu            int // agreed so far
	req2           wire.OpenConnectionRequest2
	reply2         wire.OpenConnectionReply2
}

// newInitiator returns a handshake toward server offering proto, probing
// the MTUs of dialMTUs up to maxMTU.
func newInitiator(server netip.AddrPort, guid int64, proto byte, maxMTU, attempts int, retry time.Duration) *initiator {
	h := &initiator{server: key(server), guid: guid, proto: proto, attempts: attempts, retry: retry}
	for _, m := range dialMTUs {
		if m <= maxMTU {
			h.mtus = append(h.mtus, m)
		}
	}
	return h
}

// poll returns the request due at now, appended to dst (nil when none is
// due), and when to poll next. Once every MTU was probed the smallest is
// probed on, and Request2 is sent on, until the dial's context ends.
func (h *initiator) poll(dst []byte, now time.Time) ([]byte, time.Time) {
	if h.phase == phaseOpen {
		return nil, time.Time{}
	}
	if !h.due.IsZero() && now.Before(h.due) {
		return nil, h.due
	}
	if h.phase == phaseProbe && h.tries >= h.attempts && h.idx < len(h.mtus)-1 {
		h.idx, h.tries = h.idx+1, 0
	}
	h.tries++
	h.due = now.Add(h.retry)
	if h.phase == phaseProbe {
		req := wire.OpenConnectionRequest1{Protocol: h.proto, Size: udpPayload(h.mtus[h.idx], h.server)}
		return req.Append(dst), h.due
	}
	return h.req2.Append(dst), h.due
}

// failure returns why the handshake has not completed when the dial's
// context ended with err.
func (h *initiator) failure(err error) error {
	switch h.phase {
	case phaseProbe:
		return &handshakeError{"no reply to OPEN_CONNECTION_REQUEST_1", err}
	case phaseRequest2:
		return &handshakeError{"no reply to OPEN_CONNECTION_REQUEST_2", err}
	}
	return err
}

// handshakeError says which step of a dial went unanswered until its
// context ended. Like the context's error it wraps, it is a timeout when
// the deadline passed, so net.Error's Timeout reports it.
type handshakeError struct {
	msg string
	err error
}

func (e *handshakeError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }
func (e *handshakeError) Timeout() bool { return errors.Is(e.err, context.DeadlineExceeded) }

// handle takes an offline datagram from the server at now. done reports
// that Reply2 arrived: the MTU is final. A refusal or an incompatible
// version is an error.
func (h *initiator) handle(b []byte, now time.Time) (done bool, err error) {
	switch {
	case h.phase == phaseProbe && b[0] == wire.IDOpenConnectionReply1:
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(b); err != nil {
			return false, nil
		}
		h.probed = h.mtus[h.idx]
		h.mtu = clampMTU(int(m.MTU), h.probed)
		h.req2 = wire.OpenConnectionRequest2{ServerAddr: h.server, MTU: uint16(h.mtu), ClientGUID: h.guid}
		if m.Security {
			h.req2.HasCookie, h.req2.Cookie = true, m.Cookie
		}
		h.phase, h.tries, h.due = phaseRequest2, 0, time.Time{}
		return false, nil
	case h.phase == phaseProbe && b[0] == wire.IDIncompatibleProtocolVersion:
		var m wire.IncompatibleProtocolVersion
		if _, err := m.Decode(b); err != nil {
			return false, nil
		}
		if m.Protocol == h.proto && h.retriedVersion {
			// A late answer to a probe sent before the switch.
			return false, nil
		}
		if h.retriedVersion || (m.Protocol != 10 && m.Protocol != 11) || m.Protocol == h.proto {
			return false, fmt.Errorf("%w: server speaks %d", ErrIncompatibleProtocol, m.Protocol)
		}
		// Probe again at once in the server's version.
		h.retriedVersion, h.proto = true, m.Protocol
		h.tries, h.due = max(h.tries-1, 0), time.Time{}
		return false, nil
	case h.phase == phaseRequest2 && b[0] == wire.IDOpenConnectionReply2:
		if _, err := h.reply2.Decode(b); err != nil {
			return false, nil
		}
		h.mtu = lowerMTU(h.mtu, int(h.reply2.MTU))
		h.phase = phaseOpen
		return true, nil
	case h.phase != phaseOpen && wire.IsNotice(b[0]):
		return false, refusal(b[0])
	}
	return false, nil
}

// refusal maps an offline refusal to an error.
func refusal(id byte) error {
	switch id {
	case wire.IDNoFreeIncomingConnections:
		return fmt.Errorf("%w: server full", ErrConnectionRefused)
	case wire.IDAlreadyConnected:
		return fmt.Errorf("%w: already connected", ErrConnectionRefused)
	case wire.IDConnectionBanned:
		return fmt.Errorf("%w: banned", ErrConnectionRefused)
	default:
		return fmt.Errorf("%w: connected too recently", ErrConnectionRefused)
	}
}
