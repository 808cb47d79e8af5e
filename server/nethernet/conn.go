package nethernet

import (
	"net"
	"sync"
	"time"

	"github.com/basaltmc/basalt/session"
	gonn "github.com/df-mc/go-nethernet"
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

// newConn wraps c, whose peer is at the address of its selected candidate.
func newConn(c *gonn.Conn, done func()) *Conn {
	var remote net.Addr = c.RemoteAddr()
	if a, ok := remote.(*gonn.Addr); ok && a.SelectedCandidate != nil {
		remote = &net.UDPAddr{IP: net.ParseIP(a.SelectedCandidate.Address), Port: int(a.SelectedCandidate.Port)}
	}
	return &Conn{c: c, remote: remote, done: done}
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

// RemoteAddr returns the client's UDP address, of the ICE candidate pair
// the connection uses.
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
