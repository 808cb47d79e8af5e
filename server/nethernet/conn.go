package nethernet

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/basaltmc/basalt/session"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/pion/webrtc/v4"
)

// maxLinger bounds how long Close waits for what was written to leave
// before it tears the peer connection down.
const maxLinger = time.Second

// Conn is one NetherNet connection, accepted by a Listener. It is a
// session.TransportConn: batches carry no 0xfe header, no Bedrock
// encryption runs over it (DTLS protects it) and it reports the key the
// client proved in its offer, if any.
type Conn struct {
	c      *gonn.Conn
	remote net.Addr
	once   sync.Once
	done   func() // tells the Listener the connection is gone
}

var _ session.TransportConn = (*Conn)(nil)

// newConn wraps c, whose client sent its offer from offer and its first
// valid ICE check from check (either invalid if unknown).
func newConn(c *gonn.Conn, offer netip.Addr, check netip.AddrPort, done func()) *Conn {
	return &Conn{c: c, remote: remoteAddr(c.RemoteAddr(), offer, check), done: done}
}

// remoteAddr returns the client's address, which IP bans and logs see: the
// remote candidate of the selected ICE pair, unless it is a relay's (a
// TURN server's address, which every client of the relay shares); with no
// pair selected yet, the address the client's first ICE check came from,
// unless a relay candidate's; otherwise the address its offer came from
// (the signalling connection's, or the one a trusted proxy named); and
// go-nethernet's Addr, which names no IP, only if none is known.
func remoteAddr(ra net.Addr, offer netip.Addr, check netip.AddrPort) net.Addr {
	a, ok := ra.(*gonn.Addr)
	if !ok {
		return ra
	}
	if sc := a.SelectedCandidate; sc != nil && sc.Typ != webrtc.ICECandidateTypeRelay {
		if ip, err := netip.ParseAddr(sc.Address); err == nil {
			return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip.Unmap(), sc.Port))
		}
	}
	if a.SelectedCandidate == nil && check.IsValid() && !isRelay(a.Candidates, check) {
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(check.Addr().Unmap(), check.Port()))
	}
	if offer.IsValid() {
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(offer.Unmap(), 0))
	}
	return ra
}

// isRelay reports whether ap is the address of one of the relay
// candidates cs.
func isRelay(cs []webrtc.ICECandidate, ap netip.AddrPort) bool {
	for _, c := range cs {
		if c.Typ != webrtc.ICECandidateTypeRelay || c.Port != ap.Port() {
			continue
		}
		if ip, err := netip.ParseAddr(c.Address); err == nil && ip.Unmap() == ap.Addr().Unmap() {
			return true
		}
	}
	return false
}

// ReadPacket returns the next message the client sent on the reliable data
// channel: one batch.
func (c *Conn) ReadPacket() ([]byte, error) { return c.c.ReadPacket() }

// Write sends b as one message on the reliable data channel.
func (c *Conn) Write(b []byte) (int, error) { return c.c.Write(b) }

// Close closes the peer connection. SCTP offers no way to wait for the
// peer's acknowledgement of what was written through go-nethernet, so
// Close first lingers a few round trips (at most maxLinger, less if the
// peer goes away) so the last batch, a Disconnect typically, arrives.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		linger := min(maxLinger, 4*c.c.Latency()+100*time.Millisecond)
		t := time.NewTimer(linger)
		select {
		case <-t.C:
		case <-c.c.Context().Done():
		}
		t.Stop()
		err = c.c.Close()
		c.done()
	})
	return err
}

// RemoteAddr returns the client's address: of the ICE candidate pair the
// connection uses, or where the client was seen when that is a relay's or
// there is none (see remoteAddr).
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// Transport says that NetherNet frames and encrypts batches itself and
// which key the client proved.
func (c *Conn) Transport() session.Transport {
	return session.Transport{Name: "nethernet", Framed: true, Secure: true, PublicKey: c.c.PublicKey()}
}

// NetStats reports the connection's round-trip time, the one figure
// go-nethernet measures.
func (c *Conn) NetStats() session.NetStats {
	return session.NetStats{RTT: 2 * c.c.Latency()}
}
