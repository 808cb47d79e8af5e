package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The game-tick workload: every client sends one tickSize-byte packet
// every tickInterval to the echo server, which sends it back, as a
// Bedrock session exchanges one batch per 50 ms game tick.
const (
	tickSize     = 1024
	tickInterval = 50 * time.Millisecond
	// tickRing is how many ticks a client remembers the send time of:
	// 51 s of ticks, more than any phase lasts.
	tickRing = 1024
	// tickDialers is how many goroutines dial the clients at once.
	tickDialers = 32
)

// tickKey is the record key prefix of the n-client tick phase.
func tickKey(n int) string { return fmt.Sprintf("tick%d", n) }

// tickClient is one client of the tick phase: a sender goroutine, which
// writes a packet every tick and notes when, and a reader goroutine,
// which takes the echoes in order and records their round trips.
type tickClient struct {
	conn packetConn
	base time.Time // sent times are durations since base
	// sent holds each tick's send time by sequence modulo tickRing; sends
	// is the number of ticks sent. Both are written by the sender.
	sent  [tickRing]atomic.Int64
	sends atomic.Uint32

	mu sync.Mutex
	// window is the span of send times, since base, whose round trips
	// are recorded; frozen stops the recording at the cut-off.
	w0, w1 time.Duration
	frozen bool
	next   uint32 // next sequence expected back
	rtts   []time.Duration
	bad    int   // echoes that were not the packet expected
	err    error // why the reader stopped
}

// sender writes a tick every tickInterval, first after offset, until stop
// is closed or a write fails.
func (c *tickClient) sender(offset time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(offset)
	defer t.Stop()
	select {
	case <-stop:
		return
	case <-t.C:
	}
	tk := time.NewTicker(tickInterval)
	defer tk.Stop()
	buf := make([]byte, 0, tickSize)
	for seq := uint32(0); ; seq++ {
		buf = appendData(buf[:0], seq, tickSize)
		c.sent[seq%tickRing].Store(int64(time.Since(c.base)))
		c.sends.Store(seq + 1)
		if _, err := c.conn.Write(buf); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-tk.C:
		}
	}
}

// reader takes echoes until the connection closes.
func (c *tickClient) reader() {
	for {
		p, err := c.conn.ReadPacket()
		now := time.Since(c.base)
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.mu.Unlock()
			return
		}
		if checkData(p, c.next, tickSize) != nil {
			c.bad++
		}
		if !c.frozen {
			at := time.Duration(c.sent[c.next%tickRing].Load())
			if at >= c.w0 && at < c.w1 {
				c.rtts = append(c.rtts, now-at)
			}
		}
		c.next++
		c.mu.Unlock()
	}
}

// setWindow starts recording the round trips of ticks sent from w0 on.
func (c *tickClient) setWindow(w0, w1 time.Duration) {
	c.mu.Lock()
	c.w0, c.w1 = w0, w1
	c.mu.Unlock()
}

// waiting reports whether a tick sent before w1 is still unanswered.
func (c *tickClient) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	n := c.sends.Load()
	return c.next < n && time.Duration(c.sent[c.next%tickRing].Load()) < c.w1
}

// sentIn returns how many ticks were sent in the window.
func (c *tickClient) sentIn() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, k := c.sends.Load(), 0
	for seq := n - min(n, tickRing); seq < n; seq++ {
		if at := time.Duration(c.sent[seq%tickRing].Load()); at >= c.w0 && at < c.w1 {
			k++
		}
	}
	return k
}

// freeze stops the recording at cut and returns the round trips, with
// every tick of the window still unanswered counted as its wait until
// cut, and how many those were.
func (c *tickClient) freeze(cut time.Duration) (rtts []time.Duration, unanswered, bad int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
	n := c.sends.Load()
	for seq := c.next; seq < n && n-seq <= tickRing; seq++ {
		at := time.Duration(c.sent[seq%tickRing].Load())
		if at >= c.w0 && at < c.w1 {
			c.rtts = append(c.rtts, cut-at)
			unanswered++
		}
	}
	return c.rtts, unanswered, c.bad
}

// tickSnapshot is what the tick phase reads at the start and the end of
// its measurement window.
type tickSnapshot struct {
	at          time.Time
	cpu, client time.Duration // server's and this process's CPU time
	in, out     int64         // server datagrams
	drops       int64         // the server socket's kernel drops
	udp         udpCounters
	errs        []error
}

func takeTickSnapshot(c *child, port uint16) tickSnapshot {
	s := tickSnapshot{at: time.Now()}
	var err error
	if s.cpu, err = c.cpu(); err != nil {
		s.errs = append(s.errs, err)
	}
	if s.client, err = procCPU(os.Getpid()); err != nil {
		s.errs = append(s.errs, err)
	}
	if s.in, s.out, err = c.datagrams(); err != nil {
		s.errs = append(s.errs, err)
	}
	if s.drops, err = socketDrops(port); err != nil {
		s.errs = append(s.errs, err)
	}
	if s.udp, err = readUDPCounters(); err != nil {
		s.errs = append(s.errs, err)
	}
	return s
}

// clientAddr is the source address of tick client i: perAddr clients
// share each of 127.0.1.1, 127.0.1.2, … (250 addresses, then they wrap).
func clientAddr(i, perAddr int) netip.Addr {
	k := i / max(perAddr, 1) % 250
	return netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + k)})
}

// phaseTick returns the game-tick phase for n clients.
func phaseTick(n int) func(*runConfig, impl, *record) error {
	key := tickKey(n)
	return func(cfg *runConfig, im impl, r *record) error {
		c, err := startChild(im, modeEcho)
		if err != nil {
			return err
		}
		defer c.stop()
		ap, err := netip.ParseAddrPort(c.addr)
		if err != nil {
			return fmt.Errorf("server address %q: %w", c.addr, err)
		}

		// Dial every client, from perAddr clients per source address.
		dialStart := time.Now()
		end := dialStart.Add(cfg.tickDialLimit)
		conns := make([]packetConn, n)
		var (
			next      atomic.Int64
			dialFails atomic.Int64
			firstErr  atomic.Value
			wg        sync.WaitGroup
		)
		for range tickDialers {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= n || time.Now().After(end) {
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
					conn, err := dialFrom(ctx, client, c.addr, clientAddr(i, cfg.tickPerAddr))
					cancel()
					if err != nil {
						dialFails.Add(1)
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					conns[i] = conn
				}
			})
		}
		wg.Wait()
		var live []packetConn
		for _, conn := range conns {
			if conn != nil {
				live = append(live, conn)
			}
		}
		r.logf("dialed %d of %d clients in %v (%d failed)", len(live), n,
			time.Since(dialStart).Round(time.Millisecond), dialFails.Load())
		if err, ok := firstErr.Load().(error); ok {
			r.logf("first dial error: %v", err)
		}
		defer func() {
			if open := closeAll(live, closeWait); open > 0 {
				r.logf("%d clients still closing after %v", open, closeWait)
			}
		}()
		if len(live) == 0 {
			r.set(key+".cpu", note("no dial"))
			return errors.New("no client connected")
		}

		// Every client ticks, the first ticks of each spread evenly over
		// one interval, as real sessions are not in step.
		base := time.Now()
		stop := make(chan struct{})
		clients := make([]*tickClient, len(live))
		var senders sync.WaitGroup
		for i, conn := range live {
			tc := &tickClient{conn: conn, base: base}
			clients[i] = tc
			go tc.reader()
			offset := tickInterval * time.Duration(i) / time.Duration(len(live))
			senders.Go(func() { tc.sender(offset, stop) })
		}
		stopSenders := sync.OnceFunc(func() { close(stop); senders.Wait() })
		defer stopSenders()

		time.Sleep(cfg.tickSettle)
		w0 := time.Since(base)
		for _, tc := range clients {
			tc.setWindow(w0, w0+cfg.tickDur)
		}
		var prof func()
		if cfg.profileDir != "" {
			prof = startProfile(cfg, c, key, im, r)
		}
		s0 := takeTickSnapshot(c, ap.Port())
		time.Sleep(cfg.tickDur)
		s1 := takeTickSnapshot(c, ap.Port())
		if prof != nil {
			prof()
		}
		stopSenders()

		// Wait, bounded, for the echoes of the window's ticks.
		graceEnd := time.Now().Add(cfg.tickGrace)
		for time.Now().Before(graceEnd) {
			waiting := false
			for _, tc := range clients {
				if tc.waiting() {
					waiting = true
					break
				}
			}
			if !waiting {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cut := time.Since(base)
		var all []time.Duration
		var unanswered, bad, died, sent int
		for _, tc := range clients {
			sent += tc.sentIn()
			rtts, u, b := tc.freeze(cut)
			all = append(all, rtts...)
			unanswered += u
			bad += b
			tc.mu.Lock()
			if tc.err != nil {
				died++
			}
			tc.mu.Unlock()
		}

		for _, err := range append(s0.errs, s1.errs...) {
			r.logf("counter: %v", err)
		}
		wall := s1.at.Sub(s0.at)
		per := float64(len(live)) * wall.Seconds()
		cpu := s1.cpu - s0.cpu
		in, out := s1.in-s0.in, s1.out-s0.out
		l := summarise(all)
		r.set(key+".cpu", num(us(cpu)/per))
		r.set(key+".dg", num(float64(in+out)/per))
		r.set(key+".dgin", num(float64(in)/per))
		r.set(key+".dgout", num(float64(out)/per))
		if l.N > 0 {
			r.set(key+".p50", num(ms(l.P50)))
			r.set(key+".p99", num(ms(l.P99)))
		}
		r.set(key+".sent", num(float64(sent)/float64(len(live))/(cfg.tickDur.Seconds())))
		r.set(key+".late", num(float64(unanswered)))
		r.set(key+".drops", num(float64(s1.drops-s0.drops)))
		r.set(key+".rcvbuf", num(float64(s1.udp.RcvbufErrors-s0.udp.RcvbufErrors)))
		r.set(key+".inerr", num(float64(s1.udp.InErrors-s0.udp.InErrors)))
		r.set(key+".memerr", num(float64(s1.udp.MemErrors-s0.udp.MemErrors)))
		r.set(key+".ok", note(fmt.Sprintf("%d/%d", len(live)-died, n)))
		r.setOK(key+".ok", died == 0 && len(live) == n && bad == 0)
		r.logf("%d clients x %d B every %v for %v: server CPU %v (%.1f%% of a core), client CPU %.0f%% of a core; "+
			"%.1f ticks/s per client sent; server datagrams in %d out %d (%.1f + %.1f /s per client); round trips %v, %d unanswered within %v, %d bad; "+
			"kernel drops: server socket %d, all UDP RcvbufErrors %d InErrors %d MemErrors %d",
			len(live), tickSize, tickInterval, wall.Round(time.Millisecond), cpu, 100*cpu.Seconds()/wall.Seconds(),
			100*(s1.client-s0.client).Seconds()/wall.Seconds(),
			float64(sent)/per, in, out, float64(in)/per, float64(out)/per, l, unanswered, cfg.tickGrace, bad,
			s1.drops-s0.drops, s1.udp.RcvbufErrors-s0.udp.RcvbufErrors, s1.udp.InErrors-s0.udp.InErrors,
			s1.udp.MemErrors-s0.udp.MemErrors)
		return nil
	}
}
