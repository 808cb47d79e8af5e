package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// `bench floor` measures what the game-tick traffic costs a Go server
// that does nothing but move datagrams: a child process reads a plain UDP
// socket in one goroutine, hands every large datagram to a goroutine of
// its peer over a channel, as a RakNet stack hands a message to the
// connection's reader, and that goroutine writes it back (and, with
// -acks, a 12-byte datagram after it, as an ACK). The clients send what
// go-raknet's do in the tick phases: a 1 KiB datagram every 50 ms and
// small ones (its ACKs and pings) at -extra per second. No RakNet, no
// reliability, no timers: its server CPU per client is the floor of the
// tick phases' figure on this machine, the cost of the Go runtime's
// wake-ups, the goroutine hand-offs and the kernel's loopback path.

const floorSmall = 12 // bytes of an ACK-sized datagram

// cmdFloor is `bench floor`.
func cmdFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	clients := fs.Int("clients", 100, "clients, each on its own socket")
	dur := fs.Duration("duration", 5*time.Second, "measured time, after a second of settling")
	acks := fs.Bool("acks", true, "the server writes a 12-byte datagram after every echo")
	extra := fs.Int("extra", 12, "small datagrams per second each client sends besides its ticks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clients < 1 || *clients > 20000 || *dur <= 0 || *dur > 5*time.Minute || *extra < 0 || *extra > 1000 {
		return errors.New("want 1 to 20000 clients, a duration up to 5m and 0 to 1000 extra datagrams/s")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "floor-server", fmt.Sprintf("-acks=%v", *acks))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(childWait):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("floor server: %w", err)
	}
	addr, err := netip.ParseAddrPort(strings.TrimSpace(strings.TrimPrefix(line, "listening ")))
	if err != nil {
		return fmt.Errorf("floor server said %q: %w", line, err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, got atomic.Int64
	// Round trips of the ticks echoed while measuring: each tick carries
	// its send time in its first 8 bytes.
	var measuring atomic.Bool
	var rttMu sync.Mutex
	var rtts []time.Duration
	socks := make([]*net.UDPConn, 0, *clients)
	defer func() {
		close(stop)
		for _, s := range socks {
			_ = s.Close()
		}
		wg.Wait()
	}()
	for i := range *clients {
		s, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr))
		if err != nil {
			return err
		}
		socks = append(socks, s)
		offset := tickInterval * time.Duration(i) / time.Duration(*clients)
		wg.Go(func() { floorClient(s, offset, *extra, stop, &sent) })
		wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, err := s.Read(buf)
				if err != nil {
					return
				}
				got.Add(1)
				if n == tickSize && measuring.Load() {
					rtt := time.Duration(time.Now().UnixNano() - int64(binary.LittleEndian.Uint64(buf)))
					rttMu.Lock()
					rtts = append(rtts, rtt)
					rttMu.Unlock()
				}
			}
		})
	}
	time.Sleep(time.Second)
	cpu0, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	s0, g0, t0 := sent.Load(), got.Load(), time.Now()
	measuring.Store(true)
	time.Sleep(*dur)
	measuring.Store(false)
	cpu1, err := procCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	rttMu.Lock()
	slices.Sort(rtts)
	p50, p99 := percentile(rtts, 50), percentile(rtts, 99)
	nRTT := len(rtts)
	rttMu.Unlock()
	wall := time.Since(t0)
	per := float64(*clients) * wall.Seconds()
	fmt.Printf("floor: %d clients, acks %v, %d extra/s: server CPU %.1f us/s per client (%.1f%% of a core); datagrams per client per second: %.1f in, %.1f out; tick round trips n=%d p50=%v p99=%v\n",
		*clients, *acks, *extra, us(cpu1-cpu0)/per, 100*(cpu1-cpu0).Seconds()/wall.Seconds(),
		float64(sent.Load()-s0)/per, float64(got.Load()-g0)/per, nRTT, p50, p99)
	return nil
}

// floorClient sends a tick every tickInterval, first after offset, and
// extra small datagrams per second between them, until stop.
func floorClient(s *net.UDPConn, offset time.Duration, extra int, stop <-chan struct{}, sent *atomic.Int64) {
	select {
	case <-stop:
		return
	case <-time.After(offset):
	}
	tick := make([]byte, tickSize)
	small := make([]byte, floorSmall)
	tk := time.NewTicker(tickInterval)
	defer tk.Stop()
	var ec <-chan time.Time
	if extra > 0 {
		et := time.NewTicker(time.Second / time.Duration(extra))
		defer et.Stop()
		ec = et.C
	}
	for {
		b := tick
		select {
		case <-stop:
			return
		case <-tk.C:
			binary.LittleEndian.PutUint64(tick, uint64(time.Now().UnixNano()))
		case <-ec:
			b = small
		}
		if _, err := s.Write(b); err != nil {
			return
		}
		sent.Add(1)
	}
}

// cmdFloorServer is the child of `bench floor`: it prints "listening
// ADDR" and serves until stdin closes.
func cmdFloorServer(args []string) error {
	fs := flag.NewFlagSet("floor-server", flag.ContinueOnError)
	acks := fs.Bool("acks", true, "write a 12-byte datagram after every echo")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	_ = pc.SetReadBuffer(4 << 20)
	fmt.Println("listening " + pc.LocalAddr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = pc.Close()
	}()
	peers := make(map[netip.AddrPort]chan []byte)
	defer func() {
		for _, ch := range peers {
			close(ch)
		}
	}()
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			return nil
		}
		if n <= floorSmall {
			continue // an ACK or ping: read and dropped
		}
		ch, ok := peers[from]
		if !ok {
			ch = make(chan []byte, 64)
			peers[from] = ch
			go floorPeer(pc, from, ch, *acks)
		}
		select {
		case ch <- append([]byte(nil), buf[:n]...):
		default: // the peer's goroutine is behind: dropped, as a full queue would
		}
	}
}

// floorPeer writes back every message it is handed.
func floorPeer(pc *net.UDPConn, to netip.AddrPort, ch <-chan []byte, acks bool) {
	ack := make([]byte, floorSmall)
	for b := range ch {
		if _, err := pc.WriteToUDPAddrPort(b, to); err != nil {
			return
		}
		if acks {
			if _, err := pc.WriteToUDPAddrPort(ack, to); err != nil {
				return
			}
		}
	}
}
