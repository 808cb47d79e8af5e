package attack

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// EchoConn is what an EchoProbe needs of a connection to an echo server:
// a go-raknet *Conn and a raknet *Conn both have it.
type EchoConn interface {
	ReadPacket() ([]byte, error)
	Write(b []byte) (int, error)
}

// EchoSize is the size of an EchoProbe's messages: 0xfe, the message's
// number (u32, big endian), then zeros.
const EchoSize = 64

// EchoProbe measures an honest client's round trips through an echo
// server while an attack runs: it writes numbered messages and reads their
// echoes on a goroutine of its own (a go-raknet connection has no read
// deadline), which ends when the connection is closed. Run is not safe
// for concurrent use.
type EchoProbe struct {
	c       EchoConn
	replies chan uint32
	done    chan struct{}
	next    uint32
}

// NewEchoProbe starts reading c's echoes. Close c to stop it; Done is
// closed when it has stopped.
func NewEchoProbe(c EchoConn) *EchoProbe {
	p := &EchoProbe{c: c, replies: make(chan uint32, 1024), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			b, err := c.ReadPacket()
			if err != nil {
				return
			}
			if len(b) >= 5 {
				select {
				case p.replies <- binary.BigEndian.Uint32(b[1:]):
				default:
				}
			}
		}
	}()
	return p
}

// Done is closed when the probe's reader has stopped.
func (p *EchoProbe) Done() <-chan struct{} { return p.done }

// Run sends n echoes, one every interval, each waited for up to timeout,
// and stops early when stop is closed (nil: never).
func (p *EchoProbe) Run(n int, interval, timeout time.Duration, stop <-chan struct{}) EchoResult {
	var r EchoResult
	pace := time.NewTicker(interval)
	defer pace.Stop()
	msg := make([]byte, EchoSize)
	msg[0] = 0xfe
	for range n {
		select {
		case <-stop:
			return r.sorted()
		default:
		}
		id := p.next
		p.next++
		binary.BigEndian.PutUint32(msg[1:], id)
		start := time.Now()
		r.Sent++
		if _, err := p.c.Write(msg); err != nil {
			r.Lost++
			continue
		}
		deadline := time.NewTimer(timeout)
	wait:
		for {
			select {
			case got := <-p.replies:
				if got == id {
					r.RTTs = append(r.RTTs, time.Since(start))
					break wait
				}
			case <-deadline.C:
				r.Lost++
				break wait
			}
		}
		deadline.Stop()
		select {
		case <-pace.C:
		case <-stop:
			return r.sorted()
		}
	}
	return r.sorted()
}

// EchoResult is what a Run measured.
type EchoResult struct {
	// RTTs are the round trips of the echoes that came back, sorted.
	RTTs []time.Duration
	// Sent counts the echoes sent; Lost, those not back in time (or not
	// written).
	Sent, Lost int
}

func (r EchoResult) sorted() EchoResult { slices.Sort(r.RTTs); return r }

// Quantile returns the q quantile of the round trips, 0 if none.
func (r EchoResult) Quantile(q float64) time.Duration {
	if len(r.RTTs) == 0 {
		return 0
	}
	return r.RTTs[min(len(r.RTTs)-1, int(q*float64(len(r.RTTs))))]
}

func (r EchoResult) String() string {
	return fmt.Sprintf("%d echoes, %d lost, p50 %v, p99 %v, max %v", r.Sent, r.Lost,
		r.Quantile(0.5).Round(10*time.Microsecond), r.Quantile(0.99).Round(10*time.Microsecond), r.Quantile(1).Round(10*time.Microsecond))
}

// EchoServerConn is what Echo needs of a server's connection.
type EchoServerConn interface {
	EchoConn
	Close() error
}

// Echo writes back every message c reads until reading or writing fails,
// then closes c: the server side of an EchoProbe.
func Echo(c EchoServerConn) {
	defer c.Close()
	for {
		b, err := c.ReadPacket()
		if err != nil {
			return
		}
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}
