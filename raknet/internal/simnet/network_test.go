package simnet

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// listen opens a socket on n that is closed when the test ends.
func listen(t *testing.T, n *Network, network, address string) *Conn {
	t.Helper()
	pc, err := n.ListenPacket(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return pc.(*Conn)
}

// arrival is a datagram as a reader saw it.
type arrival struct {
	at   time.Duration // since the test's start
	from netip.AddrPort
	b    []byte
}

// collect reads from c in a goroutine until it is closed and returns a
// function that stops it and returns what it read.
func collect(t *testing.T, c *Conn, t0 time.Time) func() []arrival {
	t.Helper()
	var got []arrival
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			got = append(got, arrival{time.Since(t0), from, bytes.Clone(buf[:n])})
		}
	}()
	return func() []arrival {
		_ = c.Close()
		<-done
		return got
	}
}

func send(t *testing.T, c *Conn, to *Conn, b []byte) {
	t.Helper()
	if _, err := c.WriteTo(b, to.LocalAddr()); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name   string
		delay  time.Duration
		sendAt []time.Duration
	}{
		{"none", 0, []time.Duration{0, 0, 5 * time.Millisecond}},
		{"20ms", 20 * time.Millisecond, []time.Duration{0, 0, 5 * time.Millisecond}},
		{"1s", time.Second, []time.Duration{0, 300 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := New(Config{})
				n.SetConditions(Conditions{Delay: tc.delay})
				a := listen(t, n, "udp4", "127.0.0.1:0")
				b := listen(t, n, "udp4", "127.0.0.1:0")
				t0 := time.Now()
				stop := collect(t, b, t0)
				for i, at := range tc.sendAt {
					time.Sleep(at - time.Since(t0))
					send(t, a, b, []byte{byte(i)})
				}
				time.Sleep(tc.delay + time.Second)
				got := stop()
				if len(got) != len(tc.sendAt) {
					t.Fatalf("got %d datagrams, want %d", len(got), len(tc.sendAt))
				}
				for i, g := range got {
					if want := tc.sendAt[i] + tc.delay; g.at != want || g.b[0] != byte(i) || g.from != a.AddrPort() {
						t.Errorf("datagram %d: got %d from %v at %v, want %d from %v at %v", i, g.b[0], g.from, g.at, i, a.AddrPort(), want)
					}
				}
			})
		})
	}
}

func TestBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		// 1000 bytes take exactly 1 ms at 1 MB/s.
		n.SetConditions(Conditions{Delay: 10 * time.Millisecond, Bandwidth: 1e6, QueueBytes: 2500})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		t0 := time.Now()
		stop := collect(t, b, t0)
		p := make([]byte, 1000)
		for i := range 4 {
			p[0] = byte(i)
			send(t, a, b, p)
		}
		// After 1.5 ms the first has left and the second is on the wire:
		// one more fits behind it.
		time.Sleep(1500 * time.Microsecond)
		p[0] = 4
		send(t, a, b, p)
		time.Sleep(time.Second)
		got := stop()
		want := []struct {
			id byte
			at time.Duration
		}{
			// 2 and 3 did not fit behind 2000 queued bytes.
			{0, 11 * time.Millisecond},
			{1, 12 * time.Millisecond},
			{4, 13 * time.Millisecond},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d datagrams, want %d", len(got), len(want))
		}
		for i, w := range want {
			if got[i].b[0] != w.id || got[i].at != w.at {
				t.Errorf("datagram %d: got %d at %v, want %d at %v", i, got[i].b[0], got[i].at, w.id, w.at)
			}
		}
		if s := a.Stats(); s.QueueDropped != 2 || s.Sent != 5 {
			t.Errorf("got %d sent, %d queue drops, want 5, 2", s.Sent, s.QueueDropped)
		}
	})
}

func TestBandwidthIdleLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		n.SetConditions(Conditions{Bandwidth: 1e6})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		t0 := time.Now()
		stop := collect(t, b, t0)
		send(t, a, b, make([]byte, 500))
		// A link that went idle starts the next datagram at once.
		time.Sleep(10 * time.Millisecond)
		send(t, a, b, make([]byte, 2000))
		time.Sleep(time.Second)
		got := stop()
		if len(got) != 2 || got[0].at != 500*time.Microsecond || got[1].at != 12*time.Millisecond {
			t.Fatalf("got %v, want arrivals at 500µs and 12ms", got)
		}
	})
}

func TestLoss(t *testing.T) {
	const sent = 4000
	for _, seed := range []uint64{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			run := func(seed uint64) []bool {
				n := New(Config{Seed: seed, RecvBuffer: 1 << 30})
				n.SetConditions(Conditions{Loss: 0.1})
				a := listen(t, n, "udp4", "127.0.0.1:0")
				b := listen(t, n, "udp4", "127.0.0.1:0")
				for i := range sent {
					send(t, a, b, []byte{byte(i), byte(i >> 8)})
				}
				time.Sleep(time.Millisecond)
				arrived := make([]bool, sent)
				buf := make([]byte, 2)
				for range b.Stats().Delivered {
					if _, _, err := b.ReadFrom(buf); err != nil {
						t.Fatal(err)
					}
					arrived[int(buf[0])|int(buf[1])<<8] = true
				}
				s := n.Stats()
				// 10% of 4000 is 400 with a standard deviation of 19:
				// five of them either way.
				if s.Lost < 305 || s.Lost > 495 || s.Lost+s.Delivered != sent {
					t.Errorf("seed %d: got %d lost, %d delivered of %d, want 305-495 lost and the rest delivered", seed, s.Lost, s.Delivered, sent)
				}
				return arrived
			}
			first, again := run(seed), run(seed)
			for i := range first {
				if first[i] != again[i] {
					t.Fatalf("seed %d: datagram %d arrived %v, then %v: want the same losses", seed, i, first[i], again[i])
				}
			}
		})
	}
}

func TestJitterReorders(t *testing.T) {
	tests := []struct {
		name    string
		jitter  time.Duration
		reorder bool
	}{
		{"no jitter", 0, false},
		{"jitter", 20 * time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := New(Config{Seed: 7})
				n.SetConditions(Conditions{Delay: 30 * time.Millisecond, Jitter: tc.jitter})
				a := listen(t, n, "udp4", "127.0.0.1:0")
				b := listen(t, n, "udp4", "127.0.0.1:0")
				t0 := time.Now()
				stop := collect(t, b, t0)
				for i := range 100 {
					send(t, a, b, []byte{byte(i)})
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Second)
				got := stop()
				if len(got) != 100 {
					t.Fatalf("got %d datagrams, want 100", len(got))
				}
				reordered := 0
				for i, g := range got {
					sentAt := time.Duration(g.b[0]) * time.Millisecond
					if g.at < sentAt+30*time.Millisecond || g.at > sentAt+30*time.Millisecond+tc.jitter {
						t.Errorf("datagram %d: arrived at %v, want within [%v, %v]", g.b[0], g.at, sentAt+30*time.Millisecond, sentAt+30*time.Millisecond+tc.jitter)
					}
					if i > 0 && g.b[0] < got[i-1].b[0] {
						reordered++
					}
				}
				if (reordered > 0) != tc.reorder {
					t.Errorf("got %d datagrams out of order, want reordering %v", reordered, tc.reorder)
				}
			})
		})
	}
}

func TestDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{Seed: 1})
		n.SetConditions(Conditions{Duplicate: 1, Delay: 5 * time.Millisecond})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		stop := collect(t, b, time.Now())
		for i := range 10 {
			send(t, a, b, []byte{byte(i)})
		}
		time.Sleep(time.Second)
		got := stop()
		count := make(map[byte]int)
		for _, g := range got {
			count[g.b[0]]++
		}
		for i := range byte(10) {
			if count[i] != 2 {
				t.Errorf("datagram %d: got %d copies, want 2", i, count[i])
			}
		}
		if s := n.Stats(); s.Sent != 10 || s.Duplicated != 10 || s.Delivered != 20 {
			t.Errorf("got %d sent, %d duplicated, %d delivered, want 10, 10, 20", s.Sent, s.Duplicated, s.Delivered)
		}
	})
}

func TestDropFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		c := listen(t, n, "udp4", "127.0.0.1:0")
		var seen []netip.AddrPort
		// Only the link from a to b drops; c's datagrams pass.
		n.SetLink(a.AddrPort(), b.AddrPort(), Conditions{Drop: func(from, to netip.AddrPort, p []byte) bool {
			seen = append(seen, from, to)
			_ = n.Stats() // the network's lock is not held
			return p[0] == 'x'
		}})
		stop := collect(t, b, time.Now())
		send(t, a, b, []byte("xa"))
		send(t, a, b, []byte("ya"))
		send(t, c, b, []byte("xc"))
		time.Sleep(time.Millisecond)
		got := stop()
		if len(got) != 2 || string(got[0].b) != "ya" || string(got[1].b) != "xc" {
			t.Fatalf("got %v, want ya then xc", got)
		}
		if len(seen) != 4 || seen[0] != a.AddrPort() || seen[1] != b.AddrPort() {
			t.Errorf("got Drop calls for %v, want two for %v -> %v", seen, a.AddrPort(), b.AddrPort())
		}
		if s := a.Stats(); s.Filtered != 1 || s.Sent != 2 {
			t.Errorf("got %d filtered of %d, want 1 of 2", s.Filtered, s.Sent)
		}
		n.ClearLink(a.AddrPort(), b.AddrPort())
		send(t, a, b, []byte("xa"))
		if s := a.Stats(); s.Filtered != 1 {
			t.Errorf("after ClearLink: got %d filtered, want 1", s.Filtered)
		}
	})
}

func TestRecvBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{RecvBuffer: 3000})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		for i := range 5 {
			send(t, a, b, bytes.Repeat([]byte{byte(i)}, 1000))
		}
		time.Sleep(time.Nanosecond)
		if s := b.Stats(); s.Delivered != 3 || s.DeliveredBytes != 3000 || s.BufferDropped != 2 {
			t.Errorf("got %d delivered (%d bytes), %d dropped, want 3 (3000), 2", s.Delivered, s.DeliveredBytes, s.BufferDropped)
		}
		buf := make([]byte, 1000)
		if _, _, err := b.ReadFrom(buf); err != nil || buf[0] != 0 {
			t.Fatalf("got %d, %v, want datagram 0", buf[0], err)
		}
		// Reading made room for exactly one more.
		send(t, a, b, bytes.Repeat([]byte{5}, 1000))
		send(t, a, b, bytes.Repeat([]byte{6}, 1000))
		time.Sleep(time.Nanosecond)
		var ids []byte
		_ = b.SetReadDeadline(time.Now().Add(time.Millisecond))
		for {
			if _, _, err := b.ReadFrom(buf); err != nil {
				break
			}
			ids = append(ids, buf[0])
		}
		_ = b.SetReadDeadline(time.Time{})
		if !bytes.Equal(ids, []byte{1, 2, 5}) {
			t.Errorf("got datagrams %v, want [1 2 5]", ids)
		}
		// A datagram larger than the buffer still fits an empty one.
		if err := b.SetReadBuffer(100); err != nil {
			t.Fatal(err)
		}
		send(t, a, b, make([]byte, 500))
		time.Sleep(time.Nanosecond)
		if k, _, err := b.ReadFrom(buf); err != nil || k != 500 {
			t.Errorf("got %d bytes, %v, want 500", k, err)
		}
		if s := n.Stats(); s.BufferDropped != 3 {
			t.Errorf("got %d buffer drops, want 3", s.BufferDropped)
		}
	})
}

func TestTruncate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		long := []byte("0123456789abcdef")
		send(t, a, b, long)
		send(t, a, b, []byte("next"))
		buf := make([]byte, 10)
		k, from, err := b.ReadFrom(buf)
		if err != nil || k != 10 || string(buf[:k]) != "0123456789" {
			t.Fatalf("got %q, %v, want the first 10 bytes", buf[:k], err)
		}
		if ua, ok := from.(*net.UDPAddr); !ok || ua.AddrPort() != a.AddrPort() {
			t.Errorf("got sender %v, want *net.UDPAddr %v", from, a.AddrPort())
		}
		// The rest of a truncated datagram is gone, as with UDP.
		if k, _, err := b.ReadFrom(buf); err != nil || string(buf[:k]) != "next" {
			t.Errorf("got %q, %v, want next", buf[:k], err)
		}
		// An empty buffer takes a datagram whole, as zero bytes.
		send(t, a, b, []byte("gone"))
		send(t, a, b, []byte("last"))
		if k, _, err := b.ReadFrom(nil); err != nil || k != 0 {
			t.Errorf("got %d, %v, want 0, nil", k, err)
		}
		if k, _, err := b.ReadFrom(buf); err != nil || string(buf[:k]) != "last" {
			t.Errorf("got %q, %v, want last", buf[:k], err)
		}
	})
}

func TestReadDeadline(t *testing.T) {
	type step struct {
		at       time.Duration // when to set
		deadline time.Duration // relative to t0; -1 clears
	}
	tests := []struct {
		name  string
		steps []step
		want  time.Duration // when the blocked read fails
	}{
		{"fixed", []step{{0, 50 * time.Millisecond}}, 50 * time.Millisecond},
		{"moved later", []step{{0, 50 * time.Millisecond}, {20 * time.Millisecond, 100 * time.Millisecond}}, 100 * time.Millisecond},
		{"moved earlier", []step{{0, 100 * time.Millisecond}, {20 * time.Millisecond, 30 * time.Millisecond}}, 30 * time.Millisecond},
		{"moved to the past", []step{{0, 100 * time.Millisecond}, {20 * time.Millisecond, 10 * time.Millisecond}}, 20 * time.Millisecond},
		{"cleared then set", []step{{0, 50 * time.Millisecond}, {20 * time.Millisecond, -1}, {200 * time.Millisecond, 300 * time.Millisecond}}, 300 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := New(Config{})
				c := listen(t, n, "udp4", "127.0.0.1:0")
				t0 := time.Now()
				set := func(s step) {
					var dl time.Time
					if s.deadline >= 0 {
						dl = t0.Add(s.deadline)
					}
					if err := c.SetReadDeadline(dl); err != nil {
						t.Fatal(err)
					}
				}
				set(tc.steps[0])
				type result struct {
					at  time.Duration
					err error
				}
				done := make(chan result)
				go func() {
					_, _, err := c.ReadFrom(make([]byte, 10))
					done <- result{time.Since(t0), err}
				}()
				for _, s := range tc.steps[1:] {
					time.Sleep(s.at - time.Since(t0))
					set(s)
				}
				r := <-done
				var ne net.Error
				if r.at != tc.want || !errors.Is(r.err, os.ErrDeadlineExceeded) || !errors.As(r.err, &ne) || !ne.Timeout() {
					t.Errorf("got %v at %v, want a timeout wrapping os.ErrDeadlineExceeded at %v", r.err, r.at, tc.want)
				}
			})
		})
	}
}

func TestDeadlinePassedWithData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		send(t, a, b, []byte("x"))
		time.Sleep(time.Millisecond)
		_ = b.SetReadDeadline(time.Now())
		if _, _, err := b.ReadFrom(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("got %v, want os.ErrDeadlineExceeded", err)
		}
		_ = b.SetReadDeadline(time.Time{})
		if k, _, err := b.ReadFrom(make([]byte, 1)); err != nil || k != 1 {
			t.Errorf("got %d, %v, want the queued datagram", k, err)
		}
		_ = a.SetWriteDeadline(time.Now().Add(time.Millisecond))
		if _, err := a.WriteTo([]byte("y"), b.LocalAddr()); err != nil {
			t.Errorf("write before the deadline: got %v, want nil", err)
		}
		time.Sleep(time.Millisecond)
		if _, err := a.WriteTo([]byte("y"), b.LocalAddr()); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write at the deadline: got %v, want os.ErrDeadlineExceeded", err)
		}
		_ = a.SetDeadline(time.Time{})
		if _, err := a.WriteTo([]byte("y"), b.LocalAddr()); err != nil {
			t.Errorf("write without deadline: got %v, want nil", err)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		n.SetConditions(Conditions{Delay: 10 * time.Millisecond})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, _, err := b.ReadFrom(make([]byte, 10))
				errs <- err
			}()
		}
		synctest.Wait()
		send(t, b, a, []byte("in flight from b"))
		send(t, a, b, []byte("in flight to b"))
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := <-errs; !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocked read: got %v, want net.ErrClosed", err)
			}
		}
		if _, _, err := b.ReadFrom(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after close: got %v, want net.ErrClosed", err)
		}
		if _, err := b.WriteTo([]byte("x"), a.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("write after close: got %v, want net.ErrClosed", err)
		}
		if err := b.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second close: got %v, want net.ErrClosed", err)
		}
		if err := b.SetReadDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("deadline after close: got %v, want net.ErrClosed", err)
		}
		time.Sleep(10 * time.Millisecond)
		// What b sent still arrives; what was sent to it is lost.
		if k, _, err := a.ReadFrom(make([]byte, 100)); err != nil || k != len("in flight from b") {
			t.Errorf("got %d, %v, want b's datagram", k, err)
		}
		if s := a.Stats(); s.Unreachable != 1 {
			t.Errorf("got %d unreachable, want 1", s.Unreachable)
		}
		// The address is free again, and its counters start over.
		pc, err := n.ListenPacket("udp4", b.AddrPort().String())
		if err != nil {
			t.Fatalf("rebind %v: %v", b.AddrPort(), err)
		}
		if s, ok := n.SocketStats(b.AddrPort()); !ok || s.Sent != 0 {
			t.Errorf("got %+v, %v, want fresh counters", s, ok)
		}
		_ = pc.Close()
	})
}

func TestSocketStatsAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b := listen(t, n, "udp4", "127.0.0.1:0")
		send(t, a, b, []byte("abc"))
		time.Sleep(time.Nanosecond)
		_ = a.Close()
		if s, ok := n.SocketStats(a.AddrPort()); !ok || s.Sent != 1 || s.SentBytes != 3 {
			t.Errorf("got %+v, %v, want 1 datagram of 3 bytes sent", s, ok)
		}
		if s, ok := n.SocketStats(b.AddrPort()); !ok || s.Delivered != 1 || s.DeliveredBytes != 3 {
			t.Errorf("got %+v, %v, want 1 datagram of 3 bytes delivered", s, ok)
		}
		if _, ok := n.SocketStats(netip.MustParseAddrPort("127.0.0.1:1")); ok {
			t.Error("got counters for an address never bound")
		}
	})
}

func TestListenPacket(t *testing.T) {
	tests := []struct {
		name, network, address string
		cfg                    Config
		want                   string // local address, or "" for an error
		errIs                  error
	}{
		{"first ephemeral", "udp4", "127.0.0.1:0", Config{}, "127.0.0.1:32768", nil},
		{"unspecified v4", "udp4", "0.0.0.0:0", Config{}, "127.0.0.1:32768", nil},
		{"unspecified v6", "udp6", "[::]:0", Config{}, "[::1]:32768", nil},
		{"udp with v6 literal", "udp", "[::]:19132", Config{}, "[::1]:19132", nil},
		{"empty host", "udp", ":19132", Config{}, "127.0.0.1:19132", nil},
		{"empty host udp6", "udp6", ":19132", Config{}, "[::1]:19132", nil},
		{"localhost", "udp4", "localhost:5", Config{}, "127.0.0.1:5", nil},
		{"configured host", "udp4", "0.0.0.0:0", Config{Addr4: netip.MustParseAddr("10.0.0.2")}, "10.0.0.2:32768", nil},
		{"any address", "udp4", "192.0.2.1:7", Config{}, "192.0.2.1:7", nil},
		{"mapped", "udp", "[::ffff:10.1.1.1]:7", Config{}, "10.1.1.1:7", nil},
		{"v6 on udp4", "udp4", "[::1]:0", Config{}, "", nil},
		{"v4 on udp6", "udp6", "127.0.0.1:0", Config{}, "", nil},
		{"tcp", "tcp", "127.0.0.1:0", Config{}, "", nil},
		{"bad port", "udp", "127.0.0.1:x", Config{}, "", nil},
		{"name", "udp", "example.com:1", Config{}, "", nil},
		{"no port", "udp", "127.0.0.1", Config{}, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := New(tc.cfg)
			pc, err := n.ListenPacket(tc.network, tc.address)
			if tc.want == "" {
				if err == nil {
					_ = pc.Close()
					t.Fatalf("got %v, want an error", pc.LocalAddr())
				}
				var oe *net.OpError
				if !errors.As(err, &oe) || oe.Op != "listen" {
					t.Errorf("got %v, want a listen *net.OpError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			if got := pc.LocalAddr().String(); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if _, ok := pc.LocalAddr().(*net.UDPAddr); !ok {
				t.Errorf("got %T, want *net.UDPAddr", pc.LocalAddr())
			}
		})
	}
}

func TestPortAllocation(t *testing.T) {
	n := New(Config{})
	var open []net.PacketConn
	defer func() {
		for _, pc := range open {
			_ = pc.Close()
		}
	}()
	bind := func(address string) (net.PacketConn, error) {
		pc, err := n.ListenPacket("udp4", address)
		if err == nil {
			open = append(open, pc)
		}
		return pc, err
	}
	fixed, err := bind("127.0.0.1:32769")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bind("127.0.0.1:32769"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("bind a taken port: got %v, want EADDRINUSE", err)
	}
	if _, err := bind("0.0.0.0:32769"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("bind a taken port by its unspecified address: got %v, want EADDRINUSE", err)
	}
	// Another address has its own ports.
	if _, err := bind("127.0.0.2:32769"); err != nil {
		t.Errorf("bind the port on another address: %v", err)
	}
	var ports []uint16
	for range 3 {
		pc, err := bind("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, pc.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	}
	// 32769 is taken: it is skipped.
	if want := []uint16{32768, 32770, 32771}; ports[0] != want[0] || ports[1] != want[1] || ports[2] != want[2] {
		t.Errorf("got ports %v, want %v", ports, want)
	}
	_ = fixed.Close()
	if _, err := bind("127.0.0.1:32769"); err != nil {
		t.Errorf("bind a port freed by Close: %v", err)
	}
}

func TestPortExhaustion(t *testing.T) {
	n := New(Config{})
	count := lastEphemeral - firstEphemeral + 1
	for range count {
		if _, err := n.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.ListenPacket("udp4", "127.0.0.1:0"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("got %v, want EADDRINUSE once %d ports are taken", err, count)
	}
	if _, err := n.ListenPacket("udp4", "127.0.0.3:0"); err != nil {
		t.Errorf("another address: got %v, want a port", err)
	}
}

func TestWriteErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		b6 := listen(t, n, "udp6", "[::1]:0")
		tests := []struct {
			name string
			c    *Conn
			b    []byte
			to   net.Addr
			want error
		}{
			{"nil address", a, []byte("x"), nil, errMissingAddress},
			{"v6 from v4", a, []byte("x"), b6.LocalAddr(), syscall.EAFNOSUPPORT},
			{"v4 from v6", b6, []byte("x"), a.LocalAddr(), syscall.EAFNOSUPPORT},
			{"too large v4", a, make([]byte, maxPayload4+1), a.LocalAddr(), syscall.EMSGSIZE},
			{"too large v6", b6, make([]byte, maxPayload6+1), b6.LocalAddr(), syscall.EMSGSIZE},
			{"largest v4", a, make([]byte, maxPayload4), a.LocalAddr(), nil},
			{"largest v6", b6, make([]byte, maxPayload6), b6.LocalAddr(), nil},
			{"empty", a, nil, a.LocalAddr(), nil},
			{"mapped", a, nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(a.AddrPort().Addr().As16()), a.AddrPort().Port())), nil},
		}
		for _, tc := range tests {
			k, err := tc.c.WriteTo(tc.b, tc.to)
			if tc.want == nil {
				if err != nil || k != len(tc.b) {
					t.Errorf("%s: got %d, %v, want %d, nil", tc.name, k, err, len(tc.b))
				}
				continue
			}
			var oe *net.OpError
			if !errors.Is(err, tc.want) || !errors.As(err, &oe) || oe.Op != "write" {
				t.Errorf("%s: got %v, want a write *net.OpError wrapping %v", tc.name, err, tc.want)
			}
		}
		time.Sleep(time.Nanosecond)
		if s := a.Stats(); s.Delivered != 3 {
			t.Errorf("got %d delivered to a, want 3", s.Delivered)
		}
	})
}

func TestUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		a := listen(t, n, "udp4", "127.0.0.1:0")
		if _, err := a.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Nanosecond)
		if s := n.Stats(); s.Sent != 1 || s.Unreachable != 1 || s.Delivered != 0 {
			t.Errorf("got %+v, want 1 sent, 1 unreachable", s)
		}
	})
}

// TestNoGoroutineLeft closes sockets with blocked readers and datagrams
// still on their way: synctest fails the test if anything is left
// blocked once the bubble's function returns.
func TestNoGoroutineLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{})
		n.SetConditions(Conditions{Delay: time.Second, Bandwidth: 1000})
		var socks []net.PacketConn
		for range 4 {
			pc, err := n.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			socks = append(socks, pc)
		}
		var wg sync.WaitGroup
		for _, pc := range socks {
			wg.Go(func() {
				buf := make([]byte, 100)
				for {
					if _, _, err := pc.ReadFrom(buf); err != nil {
						return
					}
				}
			})
			_ = pc.SetReadDeadline(time.Now().Add(time.Hour))
			for _, to := range socks {
				for range 3 {
					_, _ = pc.WriteTo(make([]byte, 100), to.LocalAddr())
				}
			}
		}
		time.Sleep(1100 * time.Millisecond)
		if n.InFlight() == 0 {
			t.Fatal("got nothing in flight, want datagrams still queued")
		}
		if got := n.Sockets(); len(got) != 4 || got[0] != netip.MustParseAddrPort("127.0.0.1:32768") {
			t.Errorf("got sockets %v, want 4 from 127.0.0.1:32768", got)
		}
		for _, pc := range socks {
			_ = pc.Close()
		}
		wg.Wait()
		if got := n.Sockets(); len(got) != 0 {
			t.Errorf("got sockets %v after Close, want none", got)
		}
	})
}
