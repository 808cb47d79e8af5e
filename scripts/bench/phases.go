package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basaltmc/basalt/integration/proxy"
)

// Every phase drives the same client workload, built on go-raknet's
// dialer, against the implementation under test.
const client = implGoRakNet

// handshakeDialers is how many goroutines dial at once in the handshake
// phase.
const handshakeDialers = 16

// dialTimeout bounds one dial; lossyDialTimeout one through the proxy.
const (
	dialTimeout      = 5 * time.Second
	lossyDialTimeout = 15 * time.Second
	// closeWait bounds the wait for go-raknet clients to finish closing:
	// their Close returns at once and the socket goes 1-5 s later.
	closeWait = 8 * time.Second
)

// dialClient dials the server at addr with the bench client.
func dialClient(addr string, timeout time.Duration) (packetConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dial(ctx, client, addr)
}

// closeAll closes conns and waits at most d for all of them to be gone.
// It returns how many were still open.
func closeAll(conns []packetConn, d time.Duration) int {
	for _, c := range conns {
		go c.Close() // a basalt Close waits for the peer's ACK
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for i, c := range conns {
		select {
		case <-connDone(c):
		case <-t.C:
			return len(conns) - i
		}
	}
	return 0
}

// cpuMeter measures a child's CPU time over an interval.
type cpuMeter struct {
	c     *child
	cpu   time.Duration
	start time.Time
}

func meterCPU(c *child) *cpuMeter {
	m := &cpuMeter{c: c, start: time.Now()}
	m.cpu, _ = c.cpu()
	return m
}

// used returns the CPU time used and the wall time passed since the meter
// started.
func (m *cpuMeter) used() (cpu, wall time.Duration, err error) {
	now, err := m.c.cpu()
	return now - m.cpu, time.Since(m.start), err
}

func statusOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errTimeout):
		return "timeout"
	case errors.Is(err, errDeadline):
		return "deadline"
	case errors.Is(err, errDied):
		return "died"
	}
	return "mismatch"
}

// Offline message layouts for the raw ping flood:
// UNCONNECTED_PING: 0x01 | time i64 | magic [16] | client GUID i64.
const (
	idUnconnectedPing = 0x01
	idUnconnectedPong = 0x1c
)

var offlineMagic = []byte{0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe,
	0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78}

// floodPings keeps window unconnected pings in flight to addr for d and
// counts the pongs. It sends the bytes go-raknet's Ping sends, from one
// socket: go-raknet's Ping opens a socket per ping and would measure the
// client rather than the server.
func floodPings(addr string, d time.Duration, window int) (int, time.Duration, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return 0, 0, err
	}
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	var g [8]byte
	_, _ = rand.Read(g[:])
	guid := binary.BigEndian.Uint64(g[:]) | 1<<63
	start := time.Now()
	msg := make([]byte, 0, 33)
	send := func() error {
		msg = append(msg[:0], idUnconnectedPing)
		msg = binary.BigEndian.AppendUint64(msg, uint64(time.Since(start).Milliseconds()))
		msg = append(msg, offlineMagic...)
		msg = binary.BigEndian.AppendUint64(msg, guid)
		_, err := conn.Write(msg)
		return err
	}
	refill := func() error {
		for range window {
			if err := send(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := refill(); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 1500)
	n := 0
	end := start.Add(d)
	for time.Now().Before(end) {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		k, err := conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Pings or pongs were dropped: put the window back.
				if err := refill(); err != nil {
					return n, time.Since(start), err
				}
				continue
			}
			continue // ECONNREFUSED from an earlier ping
		}
		if k > 0 && buf[0] == idUnconnectedPong {
			n++
			if err := send(); err != nil {
				return n, time.Since(start), err
			}
		}
	}
	return n, time.Since(start), nil
}

func phasePing(cfg *runConfig, im impl, r *record) error {
	c, err := startChild(im, modeEcho)
	if err != nil {
		return err
	}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	pong, err := ping(ctx, client, c.addr)
	if err != nil {
		r.set("pong.rate", note("no pong"))
		return fmt.Errorf("go-raknet ping: %w", err)
	}
	if !bytes.Equal(pong, pongData) {
		r.set("pong.rate", note("bad pong"))
		return fmt.Errorf("go-raknet ping: got %q, want %q", pong, pongData)
	}
	m := meterCPU(c)
	n, wall, err := floodPings(c.addr, cfg.pingDur, cfg.pingWindow)
	cpu, _, cerr := m.used()
	if err != nil {
		return err
	}
	if n == 0 {
		r.set("pong.rate", note("no pong"))
		return errors.New("no pongs")
	}
	r.set("pong.rate", num(float64(n)/wall.Seconds()))
	if cerr == nil {
		r.set("pong.cpu", num(float64(cpu.Microseconds())/float64(n)))
	}
	r.logf("%d pongs in %v, server CPU %v", n, wall.Round(time.Millisecond), cpu)
	return nil
}

func phaseHandshake(cfg *runConfig, im impl, r *record) error {
	c, err := startChild(im, modeEcho)
	if err != nil {
		return err
	}
	defer c.stop()
	var (
		mu       sync.Mutex
		durs     []time.Duration
		conns    []packetConn
		fails    int
		firstErr error
		budget   atomic.Int64
	)
	budget.Store(int64(cfg.hsMax))
	m := meterCPU(c)
	end := time.Now().Add(cfg.hsDur)
	var wg sync.WaitGroup
	for range handshakeDialers {
		wg.Go(func() {
			for time.Now().Before(end) && budget.Add(-1) >= 0 {
				t0 := time.Now()
				conn, err := dialClient(c.addr, dialTimeout)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					fails++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					durs = append(durs, d)
					conns = append(conns, conn)
				}
				mu.Unlock()
				if conn != nil {
					_ = conn.Close()
				}
			}
		})
	}
	wg.Wait()
	cpu, wall, _ := m.used()
	open := closeAll(conns, closeWait)
	l := summarise(durs)
	seq, err := sequentialDials(c.addr, cfg.hsSeq, cfg.hsDur)
	if err != nil {
		r.logf("sequential dials: %v", err)
	}
	ls := summarise(seq)
	if ls.N > 0 {
		r.set("hs1.p50", num(ms(ls.P50)))
		r.set("hs1.p99", num(ms(ls.P99)))
	}
	r.logf("one dialer at a time: %v", ls)
	r.set("hs.rate", num(float64(len(durs))/wall.Seconds()))
	r.set("hs.p50", num(ms(l.P50)))
	r.set("hs.p99", num(ms(l.P99)))
	r.set("hs.fail", num(float64(fails)))
	if len(durs) > 0 {
		r.set("hs.cpu", num(float64(cpu.Microseconds())/float64(len(durs))))
	}
	r.logf("%d handshakes in %v (%v), %d failed, server CPU %v, %d clients still closing",
		len(durs), wall.Round(time.Millisecond), l, fails, cpu, open)
	if firstErr != nil {
		r.logf("first dial error: %v", firstErr)
	}
	return nil
}

// sequentialDials dials n times, one at a time, for at most d: the
// handshake latency without queueing behind other dials.
func sequentialDials(addr string, n int, d time.Duration) ([]time.Duration, error) {
	var durs []time.Duration
	var conns []packetConn
	defer func() { closeAll(conns, closeWait) }()
	end := time.Now().Add(d)
	for range n {
		if time.Now().After(end) {
			break
		}
		t0 := time.Now()
		conn, err := dialClient(addr, dialTimeout)
		if err != nil {
			return durs, err
		}
		durs = append(durs, time.Since(t0))
		conns = append(conns, conn)
		_ = conn.Close()
	}
	return durs, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func phaseEcho(cfg *runConfig, im impl, r *record) error {
	c, err := startChild(im, modeEcho)
	if err != nil {
		return err
	}
	defer c.stop()
	conn, err := dialClient(c.addr, dialTimeout)
	if err != nil {
		r.set("echo.p50", note("no dial"))
		return err
	}
	defer closeAll([]packetConn{conn}, closeWait)
	rd := newReader(conn, 2)
	defer rd.close()
	deadline := time.Now().Add(cfg.echoLimit)
	if _, err := runEcho(rd, echoOpts{N: 50, Size: 100, Window: 1, Timeout: 5 * time.Second, Deadline: deadline}); err != nil {
		r.set("echo.p50", note(statusOf(err)))
		return fmt.Errorf("warm-up: %w", err)
	}
	var prof func()
	if cfg.profileDir != "" {
		prof = startProfile(cfg, c, "echo", im, r)
	}
	rtts, err := runEcho(rd, echoOpts{N: cfg.echoN, Size: 100, Window: 1, Timeout: 5 * time.Second, Deadline: deadline})
	if prof != nil {
		prof()
	}
	l := summarise(rtts)
	r.logf("echo 100 B: %v", l)
	if err != nil {
		r.set("echo.p50", note(statusOf(err)))
		r.set("echo.p99", note(statusOf(err)))
		return err
	}
	r.set("echo.p50", num(us(l.P50)))
	r.set("echo.p99", num(us(l.P99)))
	return nil
}

// phaseStream returns the phase for an unpaced stream of size-byte packets.
func phaseStream(size int, maxBytes func(*runConfig) int64) func(*runConfig, impl, *record) error {
	key := fmt.Sprintf("stream%d", size)
	return func(cfg *runConfig, im impl, r *record) error {
		c, err := startChild(im, modeSink)
		if err != nil {
			return err
		}
		defer c.stop()
		conn, err := dialClient(c.addr, dialTimeout)
		if err != nil {
			r.set(key+".ok", note("no dial"))
			return err
		}
		defer closeAll([]packetConn{conn}, closeWait)
		m := meterCPU(c)
		rd := newReader(conn, 4)
		defer rd.close()
		res := runStream(rd, streamOpts{Size: size, MaxBytes: maxBytes(cfg), Duration: cfg.streamDur, AckWait: cfg.ackWait})
		cpu, _, _ := m.used()
		recordStream(r, key, res)
		if res.Err == nil && res.Bytes > 0 {
			r.set(key+".cpu", num(ms(cpu)/(float64(res.Bytes)/1e6)))
		}
		r.logf("%d B stream: sent %d packets / %.1f MB, sink counted %d / %.1f MB in %v: %s (server CPU %v)",
			size, res.Packets, float64(res.Bytes)/1e6, res.AckPackets, float64(res.AckBytes)/1e6,
			res.Elapsed.Round(time.Millisecond), res.status(), cpu)
		if res.Err != nil {
			r.logf("stream: %v", res.Err)
		}
		return nil
	}
}

func recordStream(r *record, key string, res streamResult) {
	if res.Err != nil {
		r.set(key+".rate", val{has: true, s: res.status()})
		r.set(key+".ok", note(res.status()))
		return
	}
	r.set(key+".rate", num(res.MBps()))
	r.set(key+".ok", note("yes"))
}

func phaseMulti(cfg *runConfig, im impl, r *record) error {
	c, err := startChild(im, modeSink)
	if err != nil {
		return err
	}
	defer c.stop()
	conns := make([]packetConn, cfg.clients)
	var wg sync.WaitGroup
	var next atomic.Int64
	var dialFails atomic.Int64
	for range handshakeDialers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(conns) {
					return
				}
				conn, err := dialClient(c.addr, dialTimeout)
				if err != nil {
					dialFails.Add(1)
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
	defer closeAll(live, closeWait)
	m := meterCPU(c)
	start := time.Now()
	results := make([]streamResult, len(live))
	for i, conn := range live {
		wg.Go(func() {
			rd := newReader(conn, 4)
			defer rd.close()
			results[i] = runStream(rd, streamOpts{Size: 1024, MaxBytes: int64(cfg.clientPackets) * 1024,
				Duration: cfg.streamDur, AckWait: cfg.multiAckWait})
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu, _, _ := m.used()
	var ok int
	var acked uint64
	var last time.Duration
	var firstErr error
	for _, res := range results {
		if res.Err == nil {
			ok++
			acked += res.AckBytes
			last = max(last, res.Elapsed)
		} else if firstErr == nil {
			firstErr = res.Err
		}
	}
	if last > 0 {
		r.set("multi.rate", num(float64(acked)/last.Seconds()/1e6))
	} else {
		r.set("multi.rate", val{has: true, s: "died"})
	}
	r.set("multi.ok", note(fmt.Sprintf("%d/%d", ok, cfg.clients)))
	r.setOK("multi.ok", ok == cfg.clients)
	r.logf("%d clients (%d failed to dial): %d survived, %.1f MB acknowledged in %v, server CPU %v",
		cfg.clients, dialFails.Load(), ok, float64(acked)/1e6, wall.Round(time.Millisecond), cpu)
	if firstErr != nil {
		r.logf("first stream failure: %v", firstErr)
	}
	return nil
}

func phaseIdle(cfg *runConfig, im impl, r *record) error {
	c, err := startChild(im, modeEcho)
	if err != nil {
		return err
	}
	defer c.stop()
	time.Sleep(200 * time.Millisecond)
	before, err := c.sample()
	if err != nil {
		return err
	}

	dialStart := time.Now()
	end := dialStart.Add(cfg.idleDialLimit)
	var (
		mu       sync.Mutex
		conns    []packetConn
		fails    int
		firstErr error
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range 2 * handshakeDialers {
		wg.Go(func() {
			for time.Now().Before(end) && next.Add(1) <= int64(cfg.idle) {
				conn, err := dialClient(c.addr, dialTimeout)
				mu.Lock()
				if err != nil {
					fails++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					conns = append(conns, conn)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	dialWall := time.Since(dialStart)
	defer func() {
		if open := closeAll(conns, closeWait); open > 0 {
			r.logf("%d clients still closing after %v", open, closeWait)
		}
	}()
	r.logf("dialed %d connections in %v (%d failed)", len(conns), dialWall.Round(time.Millisecond), fails)
	if firstErr != nil {
		r.logf("first dial error: %v", firstErr)
	}
	if len(conns) == 0 {
		r.set("idle.conns", note("none"))
		return errors.New("no connections")
	}
	// Let handshakes, the first pings and the accept queue settle.
	time.Sleep(cfg.idleSettle)

	after, err := c.sample()
	if err != nil {
		return err
	}
	n := after.conns
	m := meterCPU(c)
	time.Sleep(cfg.idleDur)
	cpu, wall, err := m.used()
	if err != nil {
		return err
	}
	_, nAfter, _ := c.stats()
	if reasons, err := c.closes(); err == nil && len(reasons) > 0 {
		r.logf("server-side closes during the idle phase: %v", reasons)
	}
	alive := 0
	for _, conn := range conns {
		select {
		case <-connDone(conn):
		default:
			alive++
		}
	}
	if n <= 0 {
		r.set("idle.conns", note("0 held"))
		return errors.New("server holds no connections")
	}
	per := func(a, b int64) float64 { return float64(b-a) / float64(n) }
	r.set("idle.conns", num(float64(n)))
	r.set("idle.cpu", num(100*cpu.Seconds()/wall.Seconds()))
	r.set("idle.rss", num(per(before.rss, after.rss)/1024))
	r.set("idle.heap", num(per(before.heap, after.heap)/1024))
	r.set("idle.gor", num(per(before.goroutines, after.goroutines)))
	r.set("idle.alive", note(fmt.Sprintf("%d/%d", min(int64(alive), nAfter), len(conns))))
	r.setOK("idle.alive", alive == len(conns) && nAfter == int64(len(conns)))
	r.logf("server holds %d connections (%d after the idle period, %d clients alive); RSS %d -> %d KiB, live heap %d -> %d KiB, goroutines %d -> %d; CPU %v over %v",
		n, nAfter, alive, before.rss>>10, after.rss>>10, before.heap>>10, after.heap>>10, before.goroutines, after.goroutines, cpu, wall.Round(time.Millisecond))
	return nil
}

// phaseLoss returns the phase that runs the echo and the stream through the
// lossy proxy at rate.
func phaseLoss(rate float64) func(*runConfig, impl, *record) error {
	key := lossKey(rate)
	return func(cfg *runConfig, im impl, r *record) error {
		newProxy := func(addr string) (*proxy.Proxy, error) {
			drop, dup, delay := proxy.RandomLoss(cfg.seed, rate, 0, cfg.proxyDelay, cfg.proxyJitter)
			return proxy.New(proxy.Opts{RemoteAddr: addr, DropPacket: drop, DuplicatePacket: dup, DelayPacket: delay})
		}

		echo, err := startChild(im, modeEcho)
		if err != nil {
			return err
		}
		defer echo.stop()
		pe, err := newProxy(echo.addr)
		if err != nil {
			return err
		}
		defer pe.Close()
		conn, err := dialClient(pe.LocalAddr().String(), lossyDialTimeout)
		if err != nil {
			r.set(key+".p50", note("no dial"))
			r.logf("echo dial through proxy: %v", err)
		} else {
			rd := newReader(conn, 2)
			rtts, err := runEcho(rd, echoOpts{N: cfg.lossEchoN, Size: 100, Window: 1,
				Timeout: 10 * time.Second, Deadline: time.Now().Add(cfg.lossEchoLim)})
			l := summarise(rtts)
			r.logf("echo 100 B at %.0f%% loss: %v", rate*100, l)
			if err != nil {
				for _, p := range []string{".p50", ".p90", ".p99"} {
					r.set(key+p, note(statusOf(err)))
				}
				r.logf("echo: %v", err)
			} else {
				r.set(key+".p50", num(ms(l.P50)))
				r.set(key+".p90", num(ms(l.P90)))
				r.set(key+".p99", num(ms(l.P99)))
			}
			rd.close()
			closeAll([]packetConn{conn}, closeWait)
		}
		pe.Close()
		echo.stop()

		sink, err := startChild(im, modeSink)
		if err != nil {
			return err
		}
		defer sink.stop()
		ps, err := newProxy(sink.addr)
		if err != nil {
			return err
		}
		defer ps.Close()
		conn, err = dialClient(ps.LocalAddr().String(), lossyDialTimeout)
		if err != nil {
			r.set(key+".ok", note("no dial"))
			return fmt.Errorf("stream dial through proxy: %w", err)
		}
		defer closeAll([]packetConn{conn}, closeWait)
		rd := newReader(conn, 4)
		defer rd.close()
		res := runStream(rd, streamOpts{Size: 1024, MaxBytes: cfg.lossBytes, Duration: cfg.streamDur, AckWait: cfg.lossAckWait})
		recordStream(r, key, res)
		in, out := ps.Stats(proxy.Incoming), ps.Stats(proxy.Outgoing)
		r.logf("1 KiB stream at %.0f%% loss: sent %.1f MB, sink counted %.1f MB in %v: %s; proxy in %d/%d dropped, out %d/%d dropped",
			rate*100, float64(res.Bytes)/1e6, float64(res.AckBytes)/1e6, res.Elapsed.Round(time.Millisecond), res.status(),
			in.Dropped, in.Received, out.Dropped, out.Received)
		if res.Err != nil {
			r.logf("stream: %v", res.Err)
		}
		return nil
	}
}

func lossKey(rate float64) string { return fmt.Sprintf("loss%g", rate*100) }
