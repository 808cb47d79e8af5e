package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// errTimeout, errDeadline and errDied are how a bounded workload ends
// early: no answer in time, the whole workload out of time, or the
// connection closed under it.
var (
	errTimeout  = errors.New("timeout")
	errDeadline = errors.New("deadline")
	errDied     = errors.New("died")
)

// reader moves a connection's packets onto a channel so that waits can be
// bounded: go-raknet connections do not support read deadlines. A
// connection has one reader for its life: a second would steal packets.
type reader struct {
	c    packetConn
	ch   chan []byte
	err  chan error
	stop chan struct{}
}

func newReader(c packetConn, buffer int) *reader {
	r := &reader{c: c, ch: make(chan []byte, buffer), err: make(chan error, 1), stop: make(chan struct{})}
	go r.run()
	return r
}

func (r *reader) run() {
	for {
		p, err := r.c.ReadPacket()
		if err != nil {
			r.err <- err
			return
		}
		select {
		case r.ch <- p:
		case <-r.stop:
			return
		}
	}
}

// next returns the next packet, waiting at most d.
func (r *reader) next(d time.Duration) ([]byte, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case p := <-r.ch:
		return p, nil
	case err := <-r.err:
		r.err <- err
		return nil, fmt.Errorf("%w: %w", errDied, err)
	case <-t.C:
		return nil, errTimeout
	}
}

// close stops delivering packets; the goroutine ends when the connection
// closes.
func (r *reader) close() { close(r.stop) }

// echoOpts bound an echo workload.
type echoOpts struct {
	N, Size, Window int
	// Timeout is the longest wait for any one echo.
	Timeout time.Duration
	// Deadline bounds the whole workload; zero means none.
	Deadline time.Time
}

// runEcho sends o.N data packets of o.Size bytes on r's connection, at most
// o.Window unanswered at a time, checks every echoed byte and the order,
// and returns the round-trip times.
func runEcho(r *reader, o echoOpts) ([]time.Duration, error) {
	if o.Size < minDataSize {
		return nil, fmt.Errorf("echo: size %d below %d", o.Size, minDataSize)
	}
	o.Window = max(o.Window, 1)
	c := r.c
	sent := make([]time.Time, o.N)
	rtts := make([]time.Duration, 0, o.N)
	buf := make([]byte, 0, o.Size)
	next := 0 // next sequence to send
	for want := 0; want < o.N; want++ {
		for next < o.N && next-want < o.Window {
			buf = appendData(buf[:0], uint32(next), o.Size)
			sent[next] = time.Now()
			if _, err := c.Write(buf); err != nil {
				return rtts, fmt.Errorf("%w: write packet %d: %w", errDied, next, err)
			}
			next++
		}
		wait, bounded := o.Timeout, false
		if left := time.Until(o.Deadline); !o.Deadline.IsZero() && left < wait {
			wait, bounded = max(left, 0), true
		}
		p, err := r.next(wait)
		if errors.Is(err, errTimeout) && bounded {
			err = errDeadline
		}
		if err != nil {
			return rtts, fmt.Errorf("echo %d of %d: %w", want, o.N, err)
		}
		rtts = append(rtts, time.Since(sent[want]))
		if err := checkData(p, uint32(want), o.Size); err != nil {
			return rtts, err
		}
	}
	return rtts, nil
}

// streamOpts bound a stream into a sink server.
type streamOpts struct {
	Size int
	// MaxBytes and Duration bound the sending: it stops at whichever
	// comes first.
	MaxBytes int64
	Duration time.Duration
	// AckWait bounds the wait for the sink's counters after the SYN.
	AckWait time.Duration
}

// streamResult is one stream's outcome.
type streamResult struct {
	Packets, Bytes       uint64 // sent
	AckPackets, AckBytes uint64 // counted by the sink
	Elapsed              time.Duration
	Err                  error // nil when the sink counted everything
}

// MBps returns the delivered rate in 10^6 bytes per second.
func (r streamResult) MBps() float64 {
	if r.Err != nil || r.Elapsed <= 0 {
		return 0
	}
	return float64(r.AckBytes) / r.Elapsed.Seconds() / 1e6
}

// status is "ok" or why the stream failed: timeout, died or lost.
func (r streamResult) status() string {
	switch {
	case r.Err == nil:
		return "ok"
	case errors.Is(r.Err, errTimeout):
		return "timeout"
	case errors.Is(r.Err, errDied):
		return "died"
	}
	return "lost"
}

// runStream writes data packets on r's connection as fast as Write accepts
// them, then sends SYN and checks the sink's counters against what was
// sent. The rate is measured from the first write to the ACK.
func runStream(r *reader, o streamOpts) streamResult {
	c := r.c
	var res streamResult
	buf := make([]byte, 0, o.Size)
	start := time.Now()
	stop := start.Add(o.Duration)
	for seq := uint32(0); int64(res.Bytes) < o.MaxBytes; seq++ {
		if seq%64 == 0 && time.Now().After(stop) {
			break
		}
		buf = appendData(buf[:0], seq, o.Size)
		if _, err := c.Write(buf); err != nil {
			res.Err = fmt.Errorf("%w: write after %d packets: %w", errDied, res.Packets, err)
			return res
		}
		res.Packets++
		res.Bytes += uint64(len(buf))
	}
	if _, err := c.Write(synPacket); err != nil {
		res.Err = fmt.Errorf("%w: write SYN: %w", errDied, err)
		return res
	}
	p, err := r.next(o.AckWait)
	if err != nil {
		res.Err = fmt.Errorf("wait for ACK after %d packets: %w", res.Packets, err)
		return res
	}
	res.Elapsed = time.Since(start)
	res.AckPackets, res.AckBytes, err = parseACK(p)
	if err != nil {
		res.Err = err
		return res
	}
	if res.AckPackets != res.Packets || res.AckBytes != res.Bytes {
		res.Err = fmt.Errorf("sink counted %d packets, %d bytes; sent %d, %d",
			res.AckPackets, res.AckBytes, res.Packets, res.Bytes)
	}
	return res
}

// cmdEcho is `bench echo`.
func cmdEcho(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:19132", "server address")
	n := fs.Int("n", 1000, "packets to send")
	size := fs.Int("size", 100, "packet size in bytes (at least 5)")
	window := fs.Int("window", 1, "packets in flight")
	implFlag := fs.String("impl", "basalt", "dialer: basalt or goraknet")
	timeout := fs.Duration("timeout", 5*time.Second, "longest wait for one echo")
	total := fs.Duration("deadline", 2*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	im, err := parseImpl(*implFlag)
	if err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n %d: want at least 1", *n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := dial(ctx, im, *addr)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("dialed %s with %s in %v\n", c.RemoteAddr(), im, time.Since(start).Round(time.Microsecond))
	r := newReader(c, *window+1)
	defer r.close()
	rtts, err := runEcho(r, echoOpts{N: *n, Size: *size, Window: *window, Timeout: *timeout, Deadline: time.Now().Add(*total)})
	l := summarise(rtts)
	fmt.Printf("echo %d x %d B: %v\n", *n, *size, l)
	if err != nil {
		return err
	}
	fmt.Println("ok: every byte echoed in order")
	return nil
}

// cmdPing is `bench ping`.
func cmdPing(args []string) error {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:19132", "server address")
	implFlag := fs.String("impl", "basalt", "basalt or goraknet")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	im, err := parseImpl(*implFlag)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	pong, err := ping(ctx, im, *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%s (%v)\n", pong, time.Since(start).Round(time.Microsecond))
	return nil
}
