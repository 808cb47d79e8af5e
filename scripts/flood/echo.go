package main

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	goraknet "github.com/sandertv/go-raknet"
)

// echoResult is what a run of echoes measured.
type echoResult struct {
	rtts []time.Duration // sorted
	sent int
}

func (e echoResult) String() string {
	if len(e.rtts) == 0 {
		return fmt.Sprintf("0 of %d back", e.sent)
	}
	q := func(f float64) time.Duration {
		return e.rtts[min(len(e.rtts)-1, int(f*float64(len(e.rtts))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("%d of %d back, p50 %v, p99 %v", len(e.rtts), e.sent, q(0.5), q(0.99))
}

// echoer measures echoes on one connection, read by one goroutine that
// ends when the connection closes.
type echoer struct {
	c       *goraknet.Conn
	replies chan uint32
	next    uint32
}

func newEchoer(c *goraknet.Conn) *echoer {
	e := &echoer{c: c, replies: make(chan uint32, 1024)}
	go func() {
		for {
			b, err := c.ReadPacket()
			if err != nil {
				return
			}
			if len(b) >= 5 {
				select {
				case e.replies <- binary.BigEndian.Uint32(b[1:]):
				default:
				}
			}
		}
	}()
	return e
}

// echo sends n numbered messages, one every interval, each waited for up
// to timeout.
func (ec *echoer) echo(n int, interval, timeout time.Duration) echoResult {
	c, replies := ec.c, ec.replies
	var e echoResult
	msg := make([]byte, 64)
	msg[0] = 0xfe
	for range n {
		id := ec.next
		ec.next++
		binary.BigEndian.PutUint32(msg[1:], id)
		start := time.Now()
		e.sent++
		if _, err := c.Write(msg); err != nil {
			continue
		}
		deadline := time.After(timeout)
	wait:
		for {
			select {
			case got := <-replies:
				if got == id {
					e.rtts = append(e.rtts, time.Since(start))
					break wait
				}
			case <-deadline:
				break wait
			}
		}
		time.Sleep(interval)
	}
	slices.Sort(e.rtts)
	return e
}
