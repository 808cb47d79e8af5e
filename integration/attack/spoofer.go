package attack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
)

// Bounds every flood stays within, whatever it is asked.
const (
	// MaxDuration bounds how long a Spoofer sends.
	MaxDuration = 30 * time.Second
	// MaxLinger bounds how long a Spoofer listens after it stopped
	// sending.
	MaxLinger = 30 * time.Second
	// MaxCount bounds the datagrams one Spoofer sends.
	MaxCount = 10_000_000
	// DefaultGrace is how long after the last datagram a reply still
	// counts as an answer to the flood rather than as sent after it: the
	// listener may still be working through its socket buffer.
	DefaultGrace = 250 * time.Millisecond
	// batchSize is how many datagrams go in one sendmmsg or recvmmsg.
	batchSize = 64
	// pollInterval is how often the receiver looks at the clock when
	// nothing arrives, and the sender's pace when nothing is due.
	pollInterval = 20 * time.Millisecond
	// socketBuffer is the kernel buffer asked for on the flood socket, so
	// replies to thousands of sources are not lost before they are counted.
	socketBuffer = 8 << 20
)

// Spoofer floods Target with datagrams of one Shape from many spoofed
// source addresses, all sent through one UDP socket bound to 0.0.0.0:Port
// with IP_PKTINFO naming each source. Being bound to the wildcard, the
// same socket receives every reply the target sends to any source at that
// port, so the Report counts exactly what a spoofed victim would get.
//
// A Spoofer stops by itself: after Count datagrams or Duration, whichever
// comes first, then listens for Linger more. Run it once; it is not safe
// for concurrent use.
type Spoofer struct {
	// Target is the listener under attack; it must be in 127.0.0.0/8.
	Target netip.AddrPort
	// Sources are the spoofed addresses, used in turn (see Sources); they
	// must be in 127.0.0.0/8.
	Sources []netip.Addr
	// Port is the source port of every source; 0 picks a free one. A
	// non-zero port is bound with SO_REUSEADDR, so the flood can share a
	// live client's address (the client's own socket, being more specific,
	// then gets the replies, as it would on a real network).
	Port uint16
	// Shape builds each datagram.
	Shape Shape
	// Rate is datagrams per second over all sources; 0 sends as fast as
	// the socket takes them.
	Rate int
	// Count is the most datagrams sent; 0 means len(Sources).
	Count int
	// Duration is the longest the flood sends (at most MaxDuration);
	// required.
	Duration time.Duration
	// Grace is how long after the flood replies still count as during it;
	// 0 means DefaultGrace.
	Grace time.Duration
	// Linger is how long replies are listened for after the flood (at most
	// MaxLinger), counted in Report.After once Grace has passed.
	Linger time.Duration
	// Seed seeds the shape's randomness.
	Seed uint64
	// Progress, if set, is added the datagrams sent as the flood goes, so
	// that a caller can wait for it to be under way.
	Progress *atomic.Int64
}

// Counts are datagrams and their UDP payload bytes.
type Counts struct {
	Datagrams int
	Bytes     int
}

func (c *Counts) add(n int) { c.Datagrams++; c.Bytes += n }

func (c Counts) String() string { return fmt.Sprintf("%d datagrams/%d bytes", c.Datagrams, c.Bytes) }

// Report is what a flood sent and what came back to its sources.
type Report struct {
	// Sent is what the flood sent; SendErrors counts datagrams the socket
	// refused.
	Sent       Counts
	SendErrors int
	// Elapsed is how long the flood sent.
	Elapsed time.Duration
	// Received is every reply from the target to a spoofed source;
	// During and After split it at the end of the flood plus Grace.
	Received, During, After Counts
	// ByID splits Received by the reply's first byte (see IDName).
	ByID map[byte]Counts
	// Replied is how many sources got at least one reply, AfterSources
	// how many got one after the flood.
	Replied, AfterSources int
	// MaxPerSource is the most one source got.
	MaxPerSource Counts
	// MaxPrefixBytesPerSecond and MaxPrefixDatagramsPerSecond are the most
	// reply bytes and datagrams one /24 received in one second of the
	// flood (seconds counted from its start).
	MaxPrefixBytesPerSecond, MaxPrefixDatagramsPerSecond int
	// Strays are datagrams the socket read that were not a reply from the
	// target to a source.
	Strays int
}

// Amplification is reply bytes over sent bytes: above 1, the target sends
// a spoofed victim more than the attacker spent.
func (r *Report) Amplification() float64 {
	if r.Sent.Bytes == 0 {
		return 0
	}
	return float64(r.Received.Bytes) / float64(r.Sent.Bytes)
}

// Rate returns the datagrams sent per second.
func (r *Report) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Sent.Datagrams) / r.Elapsed.Seconds()
}

func (r *Report) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "sent %v in %v (%.0f/s, %d errors); replies %v (%.2fx), %d sources replied, most to one %v, "+
		"per /24 per second at most %d bytes/%d datagrams; after the flood %v to %d sources",
		r.Sent, r.Elapsed.Round(time.Millisecond), r.Rate(), r.SendErrors, r.Received, r.Amplification(), r.Replied,
		r.MaxPerSource, r.MaxPrefixBytesPerSecond, r.MaxPrefixDatagramsPerSecond, r.After, r.AfterSources)
	ids := make([]int, 0, len(r.ByID))
	for id := range r.ByID {
		ids = append(ids, int(id))
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&sb, "; %s %v", IDName(byte(id)), r.ByID[byte(id)])
	}
	if r.Strays > 0 {
		fmt.Fprintf(&sb, "; %d strays", r.Strays)
	}
	return sb.String()
}

// Run floods the target and returns the report once the flood and its
// linger are over or ctx ends.
func (s *Spoofer) Run(ctx context.Context) (*Report, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	pc, port, err := listenWildcard(s.Port)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	p := ipv4.NewPacketConn(pc)
	if err := p.SetControlMessage(ipv4.FlagDst, true); err != nil {
		return nil, fmt.Errorf("attack: IP_PKTINFO: %w", err)
	}
	rx := newReceiver(s.Sources, s.Target, port)
	var end atomic.Int64 // when the flood stopped, in UnixNano; 0 while it runs
	start := time.Now()
	rx.start = start
	var wg sync.WaitGroup
	wg.Go(func() { rx.run(ctx, p, &end, s.grace(), min(s.Linger, MaxLinger)) })
	r := s.send(ctx, p, port, start)
	end.Store(time.Now().UnixNano())
	wg.Wait()
	rx.report(r)
	return r, nil
}

func (s *Spoofer) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

func (s *Spoofer) check() error {
	if err := checkLoopback("target", s.Target.Addr()); err != nil {
		return err
	}
	if len(s.Sources) == 0 || s.Shape == nil || s.Duration <= 0 {
		return errors.New("attack: a Spoofer needs Sources, a Shape and a Duration")
	}
	for _, a := range s.Sources {
		if err := checkLoopback("source", a); err != nil {
			return err
		}
	}
	return nil
}

// listenWildcard binds 0.0.0.0:port (SO_REUSEADDR when port is chosen).
func listenWildcard(port uint16) (*net.UDPConn, uint16, error) {
	lc := net.ListenConfig{}
	if port != 0 {
		lc.Control = reuseAddr
	}
	c, err := lc.ListenPacket(context.Background(), "udp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return nil, 0, fmt.Errorf("attack: bind: %w", err)
	}
	uc := c.(*net.UDPConn)
	_ = uc.SetReadBuffer(socketBuffer)
	_ = uc.SetWriteBuffer(socketBuffer)
	return uc, uint16(uc.LocalAddr().(*net.UDPAddr).Port), nil
}

// send runs the flood on the caller's goroutine.
func (s *Spoofer) send(ctx context.Context, p *ipv4.PacketConn, port uint16, start time.Time) *Report {
	count := s.Count
	if count <= 0 {
		count = len(s.Sources)
	}
	count = min(count, MaxCount)
	stop := start.Add(min(s.Duration, MaxDuration))
	oob := make([][]byte, len(s.Sources))
	for i, a := range s.Sources {
		oob[i] = (&ipv4.ControlMessage{Src: a.AsSlice()}).Marshal()
	}
	dst := net.UDPAddrFromAddrPort(s.Target)
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	msgs := make([]ipv4.Message, batchSize)
	bufs := make([][]byte, batchSize)
	r := &Report{}
	sent := 0
	for sent < count {
		now := time.Now()
		if !now.Before(stop) || ctx.Err() != nil {
			break
		}
		due := count - sent
		if s.Rate > 0 {
			due = min(due, int(float64(s.Rate)*now.Sub(start).Seconds())+1-sent)
		}
		if due <= 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		n := min(due, batchSize)
		for j := range n {
			k := sent + j
			i := k % len(s.Sources)
			src := netip.AddrPortFrom(s.Sources[i], port)
			bufs[j] = s.Shape(bufs[j][:0], src, s.Target, k/len(s.Sources), rng)
			msgs[j] = ipv4.Message{Buffers: [][]byte{bufs[j]}, OOB: oob[i], Addr: dst}
		}
		for done := 0; done < n; {
			w, err := p.WriteBatch(msgs[done:n], 0)
			for j := done; j < done+w; j++ {
				r.Sent.add(len(bufs[j]))
			}
			if s.Progress != nil {
				s.Progress.Add(int64(w))
			}
			done += w
			if err != nil {
				// The datagram the kernel refused is skipped; the flood
				// goes on.
				r.SendErrors++
				done++
			}
		}
		sent += n
	}
	r.Elapsed = time.Since(start)
	return r
}

// receiver counts replies; it runs on its own goroutine and owns all its
// fields until run returns.
type receiver struct {
	target   netip.AddrPort
	port     uint16
	start    time.Time
	index    map[netip.Addr]int
	prefix   []int // source index → prefix index
	perSrc   []Counts
	afterSrc []bool
	// per prefix: the second being counted and its counts, and the max.
	prefixSec       []int
	prefixCur       []Counts
	maxPrefix       Counts
	received        Counts
	during, after   Counts
	byID            map[byte]Counts
	strays          int
	prefixesByValue map[netip.Prefix]int
}

func newReceiver(sources []netip.Addr, target netip.AddrPort, port uint16) *receiver {
	rx := &receiver{
		target: target, port: port, index: make(map[netip.Addr]int, len(sources)),
		prefix: make([]int, len(sources)), perSrc: make([]Counts, len(sources)), afterSrc: make([]bool, len(sources)),
		byID: make(map[byte]Counts), prefixesByValue: make(map[netip.Prefix]int),
	}
	for i, a := range sources {
		rx.index[a] = i
		pf := Prefix24(a)
		pi, ok := rx.prefixesByValue[pf]
		if !ok {
			pi = len(rx.prefixesByValue)
			rx.prefixesByValue[pf] = pi
		}
		rx.prefix[i] = pi
	}
	rx.prefixSec = make([]int, len(rx.prefixesByValue))
	rx.prefixCur = make([]Counts, len(rx.prefixesByValue))
	return rx
}

func (rx *receiver) run(ctx context.Context, p *ipv4.PacketConn, end *atomic.Int64, grace, linger time.Duration) {
	msgs := make([]ipv4.Message, batchSize)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, MaxUDPPayload)}
		msgs[i].OOB = ipv4.NewControlMessage(ipv4.FlagDst)
	}
	var cm ipv4.ControlMessage
	for {
		now := time.Now()
		if e := end.Load(); e != 0 && now.After(time.Unix(0, e).Add(max(linger, grace))) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		_ = p.SetReadDeadline(now.Add(pollInterval))
		n, err := p.ReadBatch(msgs, 0)
		if err != nil {
			continue
		}
		now = time.Now()
		e := end.Load()
		afterFlood := e != 0 && now.After(time.Unix(0, e).Add(grace))
		for j := range n {
			m := &msgs[j]
			if err := cm.Parse(m.OOB[:m.NN]); err != nil {
				rx.strays++
				continue
			}
			rx.count(m.Buffers[0][:m.N], m.Addr, cm.Dst, now, afterFlood)
		}
	}
}

func (rx *receiver) count(b []byte, from net.Addr, dst net.IP, now time.Time, afterFlood bool) {
	ua, ok := from.(*net.UDPAddr)
	if !ok || len(b) == 0 {
		rx.strays++
		return
	}
	if ap := ua.AddrPort(); netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) != rx.target {
		rx.strays++
		return
	}
	d, ok := netip.AddrFromSlice(dst)
	i, known := rx.index[d.Unmap()]
	if !ok || !known {
		rx.strays++
		return
	}
	n := len(b)
	rx.received.add(n)
	rx.perSrc[i].add(n)
	c := rx.byID[b[0]]
	c.add(n)
	rx.byID[b[0]] = c
	if afterFlood {
		rx.after.add(n)
		rx.afterSrc[i] = true
	} else {
		rx.during.add(n)
	}
	pi := rx.prefix[i]
	if sec := int(now.Sub(rx.start) / time.Second); sec != rx.prefixSec[pi] {
		rx.prefixSec[pi], rx.prefixCur[pi] = sec, Counts{}
	}
	rx.prefixCur[pi].add(n)
	rx.maxPrefix.Datagrams = max(rx.maxPrefix.Datagrams, rx.prefixCur[pi].Datagrams)
	rx.maxPrefix.Bytes = max(rx.maxPrefix.Bytes, rx.prefixCur[pi].Bytes)
}

func (rx *receiver) report(r *Report) {
	r.Received, r.During, r.After, r.ByID, r.Strays = rx.received, rx.during, rx.after, rx.byID, rx.strays
	r.MaxPrefixBytesPerSecond, r.MaxPrefixDatagramsPerSecond = rx.maxPrefix.Bytes, rx.maxPrefix.Datagrams
	for i, c := range rx.perSrc {
		if c.Datagrams > 0 {
			r.Replied++
		}
		if rx.afterSrc[i] {
			r.AfterSources++
		}
		if c.Bytes > r.MaxPerSource.Bytes {
			r.MaxPerSource = c
		}
	}
}
