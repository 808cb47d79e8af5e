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

// tickResult is what one game-tick run measured.
type tickResult struct {
	n, live, died, dialFails int
	wall                     time.Duration // measurement window
	cpu, client              time.Duration // server's and client's CPU in the window
	in, out                  int64         // server datagrams in the window
	sent                     int           // ticks the clients sent in the window
	lat                      latencies     // round trips of the window's ticks
	unanswered, bad          int
	drops                    int64 // the server socket's kernel drops
	udp                      udpCounters
	// resid is the server's figures for the window: residence of an echo
	// (ReadPacket returned to Write returned) and its process's
	// scheduling latencies, in µs; nil if it could not say.
	resid map[string]int64
	// clientSched is this (client) process's scheduling latencies in the
	// window: p50, p99, p99.9.
	clientSched []time.Duration
}

// perClient returns x per client per second of the window.
func (t tickResult) perClient(x float64) float64 {
	return x / float64(max(t.live, 1)) / max(t.wall.Seconds(), 1e-9)
}

// held reports whether the server held the load: every client dialed and
// survived, sent its ticks (the client machine kept up), had every one
// answered within p99 and lost nothing to the kernel; why says what
// failed.
func (t tickResult) held(p99 time.Duration) (ok bool, why string) {
	switch {
	case t.live < t.n:
		return false, fmt.Sprintf("%d of %d dialed", t.live, t.n)
	case t.died > 0:
		return false, fmt.Sprintf("%d connections died", t.died)
	case t.perClient(float64(t.sent)) < capMinTickRate:
		return false, fmt.Sprintf("clients sent only %.1f ticks/s each (the client side is the limit)", t.perClient(float64(t.sent)))
	case t.drops > 0:
		return false, fmt.Sprintf("%d kernel drops", t.drops)
	case t.unanswered > 0:
		return false, fmt.Sprintf("%d ticks unanswered", t.unanswered)
	case t.lat.N == 0 || t.lat.P99 >= p99:
		return false, fmt.Sprintf("p99 %v", t.lat.P99.Round(time.Millisecond/10))
	}
	return true, ""
}

func (t tickResult) String() string {
	cpu := t.cpu.Seconds() / max(t.wall.Seconds(), 1e-9)
	split := ""
	if t.resid != nil {
		split = fmt.Sprintf("; server echo Write p50=%dus p99=%dus p99.9=%dus (n=%d), server goroutine wake-up p50=%dus p99=%dus p99.9=%dus",
			t.resid["p50"], t.resid["p99"], t.resid["p999"], t.resid["n"],
			t.resid["sched_p50"], t.resid["sched_p99"], t.resid["sched_p999"])
	}
	if len(t.clientSched) == 3 {
		split += fmt.Sprintf("; client goroutine wake-up p50=%v p99=%v p99.9=%v", t.clientSched[0], t.clientSched[1], t.clientSched[2])
	}
	return fmt.Sprintf("%d clients x %d B every %v for %v: server CPU %v (%.1f%% of a core), client CPU %.0f%% of a core; "+
		"%.1f ticks/s per client sent; server datagrams in %d out %d (%.1f + %.1f /s per client); round trips %v, %d unanswered, %d bad; "+
		"kernel drops: server socket %d, all UDP RcvbufErrors %d InErrors %d MemErrors %d%s",
		t.live, tickSize, tickInterval, t.wall.Round(time.Millisecond), t.cpu, 100*cpu,
		100*t.client.Seconds()/max(t.wall.Seconds(), 1e-9),
		t.perClient(float64(t.sent)), t.in, t.out, t.perClient(float64(t.in)), t.perClient(float64(t.out)), t.lat, t.unanswered, t.bad,
		t.drops, t.udp.RcvbufErrors, t.udp.InErrors, t.udp.MemErrors, split)
}

// tickTiming is how long one game-tick run settles, measures and waits for
// the last echoes.
type tickTiming struct {
	settle, dur, grace, dialLimit time.Duration
}

// runTick runs n game-tick clients against a fresh server of im and
// measures dur of steady state. A CPU profile is written when prof is not
// empty (the phase key). It fails only when no client connected.
func runTick(cfg *runConfig, im impl, n int, tt tickTiming, prof string, r *record) (tickResult, error) {
	res := tickResult{n: n}
	c, err := startChild(im, modeEcho)
	if err != nil {
		return res, err
	}
	defer c.stop()
	ap, err := netip.ParseAddrPort(c.addr)
	if err != nil {
		return res, fmt.Errorf("server address %q: %w", c.addr, err)
	}

	// Dial every client, from perAddr clients per source address.
	dialStart := time.Now()
	end := dialStart.Add(tt.dialLimit)
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
	res.live, res.dialFails = len(live), int(dialFails.Load())
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
		return res, errors.New("no client connected")
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

	time.Sleep(tt.settle)
	w0 := time.Since(base)
	for _, tc := range clients {
		tc.setWindow(w0, w0+tt.dur)
	}
	var stopProf func()
	if prof != "" && cfg.profileDir != "" {
		stopProf = startProfile(cfg, c, prof, im, r)
	}
	residErr := c.resetResid()
	clientSched0 := schedHist()
	s0 := takeTickSnapshot(c, ap.Port())
	time.Sleep(tt.dur)
	s1 := takeTickSnapshot(c, ap.Port())
	_, res.clientSched = schedDelta(clientSched0, schedHist(), 50, 99, 99.9)
	if residErr == nil {
		res.resid, residErr = c.resid()
	}
	if residErr != nil {
		r.logf("server residence: %v", residErr)
		res.resid = nil
	}
	if stopProf != nil {
		stopProf()
	}
	stopSenders()

	// Wait, bounded, for the echoes of the window's ticks.
	graceEnd := time.Now().Add(tt.grace)
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
	for _, tc := range clients {
		res.sent += tc.sentIn()
		rtts, u, b := tc.freeze(cut)
		all = append(all, rtts...)
		res.unanswered += u
		res.bad += b
		tc.mu.Lock()
		if tc.err != nil {
			res.died++
		}
		tc.mu.Unlock()
	}
	for _, err := range append(s0.errs, s1.errs...) {
		r.logf("counter: %v", err)
	}
	res.wall = s1.at.Sub(s0.at)
	res.cpu, res.client = s1.cpu-s0.cpu, s1.client-s0.client
	res.in, res.out = s1.in-s0.in, s1.out-s0.out
	res.lat = summarise(all)
	res.drops = s1.drops - s0.drops
	res.udp = udpCounters{
		RcvbufErrors: s1.udp.RcvbufErrors - s0.udp.RcvbufErrors,
		InErrors:     s1.udp.InErrors - s0.udp.InErrors,
		MemErrors:    s1.udp.MemErrors - s0.udp.MemErrors,
	}
	return res, nil
}

// phaseTick returns the game-tick phase for n clients.
func phaseTick(n int) func(*runConfig, impl, *record) error {
	key := tickKey(n)
	return func(cfg *runConfig, im impl, r *record) error {
		t, err := runTick(cfg, im, n, tickTiming{cfg.tickSettle, cfg.tickDur, cfg.tickGrace, cfg.tickDialLimit}, key, r)
		if err != nil {
			if t.live == 0 {
				r.set(key+".cpu", note("no dial"))
			}
			return err
		}
		r.set(key+".cpu", num(t.perClient(us(t.cpu))))
		r.set(key+".dg", num(t.perClient(float64(t.in+t.out))))
		r.set(key+".dgin", num(t.perClient(float64(t.in))))
		r.set(key+".dgout", num(t.perClient(float64(t.out))))
		if t.lat.N > 0 {
			r.set(key+".p50", num(ms(t.lat.P50)))
			r.set(key+".p99", num(ms(t.lat.P99)))
		}
		if t.resid != nil {
			r.set(key+".wp99", num(float64(t.resid["p99"])/1000))
			r.set(key+".swp99", num(float64(t.resid["sched_p99"])/1000))
		}
		if len(t.clientSched) == 3 {
			r.set(key+".cwp99", num(ms(t.clientSched[1])))
		}
		r.set(key+".sent", num(t.perClient(float64(t.sent))))
		r.set(key+".late", num(float64(t.unanswered)))
		r.set(key+".drops", num(float64(t.drops)))
		r.set(key+".rcvbuf", num(float64(t.udp.RcvbufErrors)))
		r.set(key+".inerr", num(float64(t.udp.InErrors)))
		r.set(key+".memerr", num(float64(t.udp.MemErrors)))
		r.set(key+".ok", note(fmt.Sprintf("%d/%d", t.live-t.died, n)))
		r.setOK(key+".ok", t.died == 0 && t.live == n && t.bad == 0)
		r.logf("%v", t)
		return nil
	}
}
