package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/basaltmc/basalt/raknet"
)

// mode is what a bench server does with the packets it receives.
type mode string

const (
	// modeEcho writes every packet back on the same connection.
	modeEcho mode = "echo"
	// modeSink counts packets and bytes and answers SYN with ACK.
	modeSink mode = "sink"
)

func parseMode(s string) (mode, error) {
	switch mode(s) {
	case modeEcho, modeSink:
		return mode(s), nil
	}
	return "", fmt.Errorf("unknown -mode %q: want echo or sink", s)
}

// handlerWait bounds how long server.Close waits for connection handlers:
// a go-raknet connection only lets go of ReadPacket once its own timers
// notice the close.
const handlerWait = 2 * time.Second

// server is an echo or sink server on one implementation. Its methods are
// safe for concurrent use.
type server struct {
	l    packetListener
	mode mode

	mu     sync.Mutex
	conns  map[packetConn]struct{}
	closed bool

	wg     sync.WaitGroup
	active atomic.Int64 // connections with a running handler
	total  atomic.Uint64

	reasonMu sync.Mutex
	reasons  map[string]int // why connections ended, by closeReason

	// counter counts a go-raknet listener's datagrams at its socket; nil
	// for basalt, whose connections count their own.
	counter *countingConn
	// endedIn and endedOut are the datagrams of basalt connections that
	// have ended, so that the totals do not fall when one does.
	endedIn, endedOut atomic.Uint64

	prof profiler

	// resid is how long echoes were held, ReadPacket to Write returning;
	// sched0 is the scheduling-latency histogram at the last reset.
	resid   residence
	schedMu sync.Mutex
	sched0  *metrics.Float64Histogram
}

// serve starts a server of implementation im in mode m on addr.
func serve(im impl, m mode, addr string) (*server, error) {
	l, counter, err := listen(im, addr)
	if err != nil {
		return nil, err
	}
	s := &server{l: l, mode: m, conns: make(map[packetConn]struct{}), reasons: make(map[string]int), counter: counter}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *server) addr() string { return s.l.Addr().String() }

func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.l.accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.active.Add(1)
		s.total.Add(1)
		go s.handle(c)
	}
}

func (s *server) handle(c packetConn) {
	defer func() {
		_ = c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		if bc, ok := c.(*raknet.Conn); ok {
			st := bc.Stats()
			s.endedIn.Add(st.DatagramsReceived)
			s.endedOut.Add(st.DatagramsSent)
		}
		s.mu.Unlock()
		s.active.Add(-1)
		s.wg.Done()
	}()
	var packets, n uint64
	var ack []byte
	for {
		p, err := c.ReadPacket()
		if err != nil {
			s.reasonMu.Lock()
			s.reasons[closeReason(err)]++
			s.reasonMu.Unlock()
			return
		}
		switch {
		case s.mode == modeEcho:
			t0 := time.Now()
			if _, err := c.Write(p); err != nil {
				return
			}
			s.resid.add(time.Since(t0))
		case isSYN(p):
			ack = appendACK(ack[:0], packets, n)
			if _, err := c.Write(ack); err != nil {
				return
			}
		default:
			packets++
			n += uint64(len(p))
		}
	}
}

// Close stops the listener, closes every connection and waits a bounded
// time for the handlers to return.
func (s *server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]packetConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := s.l.Close()
	var cw sync.WaitGroup
	for _, c := range conns {
		cw.Add(1)
		go func() {
			defer cw.Done()
			_ = c.Close()
		}()
	}
	done := make(chan struct{})
	go func() {
		cw.Wait()
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(handlerWait):
	}
	return err
}

// statsLine is the control channel's answer: the process's goroutines and
// the server's open connections.
func (s *server) statsLine() string {
	return fmt.Sprintf("stats goroutines=%d conns=%d accepted=%d",
		runtime.NumGoroutine(), s.active.Load(), s.total.Load())
}

// datagrams returns how many datagrams the server has received and sent
// on its connections. go-raknet's are counted at the socket, offline
// messages included; basalt's are the sum of its connections' own
// counters (ACKs and NACKs included), as wrapping its socket would take
// it off its allocation-free *net.UDPConn path.
func (s *server) datagrams() (in, out uint64) {
	if s.counter != nil {
		return s.counter.in.Load(), s.counter.out.Load()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, out = s.endedIn.Load(), s.endedOut.Load()
	for c := range s.conns {
		if bc, ok := c.(*raknet.Conn); ok {
			st := bc.Stats()
			in += st.DatagramsReceived
			out += st.DatagramsSent
		}
	}
	return in, out
}

// datagramsLine answers the "dgrams" command.
func (s *server) datagramsLine() string {
	in, out := s.datagrams()
	return fmt.Sprintf("dgrams in=%d out=%d", in, out)
}

// startProfile starts writing a CPU profile to path, ending any profile
// already being written.
func (s *server) startProfile(path string) error { return s.prof.start(path) }

// stopProfile ends the CPU profile being written, if any.
func (s *server) stopProfile() error { return s.prof.stop() }

// profiler writes the process's CPU profile on command. Its methods are
// safe for concurrent use; the zero value writes none.
type profiler struct {
	mu sync.Mutex
	f  *os.File // the CPU profile being written, if any
}

// start starts writing a CPU profile to path, ending any profile already
// being written.
func (p *profiler) start(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.stopLocked()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	p.f = f
	return nil
}

// stop ends the CPU profile being written, if any.
func (p *profiler) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

func (p *profiler) stopLocked() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	return err
}

// closeReason names why a read failed in one word.
func closeReason(err error) string {
	switch {
	case errors.Is(err, raknet.ErrPeerTimeout):
		return "peer-timeout"
	case errors.Is(err, raknet.ErrPeerClosed):
		return "peer-closed"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	return "other"
}

// reasonsLine reports why connections ended so far.
func (s *server) reasonsLine() string {
	s.reasonMu.Lock()
	defer s.reasonMu.Unlock()
	keys := slices.Sorted(maps.Keys(s.reasons))
	var b strings.Builder
	b.WriteString("closes")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, s.reasons[k])
	}
	return b.String()
}

// heapLine collects garbage and reports the live heap.
func heapLine() string {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("heap live=%d sys=%d", ms.HeapAlloc, ms.Sys)
}

// cmdServer is `bench server`. It prints "listening ADDR" once the socket is
// bound. With -control it also reads commands from stdin, one per line
// ("stats", "heap"), answers each with one line on stdout and exits when
// stdin closes; that is how `bench run` drives its child servers.
// "closes" reports why connections ended, "dgrams" the datagrams received
// and sent, "profile PATH" starts a CPU profile and "profile stop" ends
// it. SIGUSR1 prints the stats line too.
func cmdServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:19132", "UDP address to listen on")
	modeFlag := fs.String("mode", "echo", "echo or sink")
	implFlag := fs.String("impl", "basalt", "basalt or goraknet")
	control := fs.Bool("control", false, "read commands from stdin and exit at EOF")
	fs.IntVar(&basaltSockets, "sockets", envInt("BENCH_SOCKETS", 1), "basalt: SO_REUSEPORT sockets to listen on (default $BENCH_SOCKETS, which `bench run` passes on to its servers, or 1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	im, err := parseImpl(*implFlag)
	if err != nil {
		return err
	}
	m, err := parseMode(*modeFlag)
	if err != nil {
		return err
	}
	if v := envInt("BENCH_SERVER_GOGC", 0); v != 0 {
		debug.SetGCPercent(v)
	}
	s, err := serve(im, m, *addr)
	if err != nil {
		return err
	}
	defer s.Close()
	defer s.stopProfile()

	var outMu sync.Mutex
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintln(os.Stdout, line)
	}
	say("listening " + s.addr())

	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	notifyStats(sig)
	defer signal.Stop(sig)

	eof := make(chan error, 1)
	if *control {
		go func() { eof <- readControl(os.Stdin, s, say) }()
	}
	for {
		select {
		case v := <-sig:
			if isStatsSignal(v) {
				say(s.statsLine())
				continue
			}
			return nil
		case err := <-eof:
			return err
		}
	}
}

// basaltSockets is how many sockets a basalt bench server listens on.
var basaltSockets = 1

// envInt returns the integer in environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// readControl answers control commands from r until it ends.
func readControl(r io.Reader, s *server, say func(string)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch sc.Text() {
		case "stats":
			say(s.statsLine())
		case "heap":
			say(heapLine())
		case "closes":
			say(s.reasonsLine())
		case "dgrams":
			say(s.datagramsLine())
		case "resid":
			say(s.residLine())
		case "resid reset":
			s.residReset()
			say(resultLine("residreset", nil))
		case "profile stop":
			say(resultLine("profile", s.stopProfile()))
		default:
			if path, ok := strings.CutPrefix(sc.Text(), "profile "); ok {
				say(resultLine("profile", s.startProfile(path)))
				continue
			}
			say("error unknown command " + sc.Text())
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// resultLine is "NAME ok" or "NAME error MESSAGE" for a command's outcome.
func resultLine(name string, err error) string {
	if err != nil {
		return name + " error " + err.Error()
	}
	return name + " ok"
}
