package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// checkOpErr checks that err is a *net.OpError for op that wraps want.
func checkOpErr(t *testing.T, err error, op string, want error) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != op || oe.Net != "raknet" || oe.Addr == nil || oe.Source == nil {
		t.Errorf("got %#v, want *net.OpError{Op: %q, Net: raknet} with both addresses", err, op)
	}
	if !errors.Is(err, want) {
		t.Errorf("got %v, want it to wrap %v", err, want)
	}
}

func TestWriteWith(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{}, l)
		rels := []Reliability{Unreliable, UnreliableSequenced, Reliable, ReliableOrdered, ReliableSequenced,
			UnreliableWithAckReceipt, ReliableWithAckReceipt, ReliableOrderedWithAckReceipt}
		want := map[string]bool{}
		for _, r := range rels {
			for _, ch := range []uint8{0, 5, 31} {
				msg := fmt.Sprintf("\xfe%v/%d", r, ch)
				want[msg] = true
				if _, err := client.WriteWith([]byte(msg), r, ch); err != nil {
					t.Fatalf("%v on channel %d: %v", r, ch, err)
				}
			}
			if r.String() == "" {
				t.Errorf("%d has no name", r)
			}
		}
		_ = server.SetReadDeadline(time.Now().Add(2 * time.Second))
		for len(want) > 0 {
			got, err := server.ReadPacket()
			if err != nil {
				t.Fatalf("%d messages not received: %v", len(want), err)
			}
			delete(want, string(got))
		}
		for _, tc := range []struct {
			name string
			msg  []byte
			r    Reliability
			ch   uint8
			want error
		}{
			{"channel 32", []byte{0xfe}, ReliableOrdered, 32, ErrInvalidChannel},
			{"reliability 8", []byte{0xfe}, 8, 0, ErrInvalidReliability},
			{"empty", nil, ReliableOrdered, 0, ErrEmptyMessage},
			{"9 MiB", make([]byte, 9<<20), ReliableOrdered, 0, ErrMessageTooLarge},
		} {
			_, err := client.WriteWith(tc.msg, tc.r, tc.ch)
			checkOpErr(t, err, "write", tc.want)
		}
	})
}

// Messages written with WriteReceipt report their fate: acknowledged ones
// as acked, each id once.
func TestWriteReceipt(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{}, l)
		receipts := make(chan Receipt, 16)
		client.SetReceiptFunc(func(r Receipt) { receipts <- r })
		want := map[uint32]bool{}
		for _, r := range []Reliability{UnreliableWithAckReceipt, ReliableWithAckReceipt, ReliableOrderedWithAckReceipt} {
			id, err := client.WriteReceipt([]byte("\xfereceipt"), r, 0)
			if err != nil || id == 0 {
				t.Fatalf("%v: got id %d, %v", r, id, err)
			}
			want[id] = true
			// A split message is acknowledged once, when every part is.
			id, err = client.WriteReceipt(make([]byte, 10_000), r, 0)
			if err != nil || id == 0 || want[id] {
				t.Fatalf("%v split: got id %d, %v", r, id, err)
			}
			want[id] = true
		}
		if id, err := client.WriteReceipt([]byte{0xfe}, ReliableOrdered, 0); err != nil || id != 0 {
			t.Errorf("without receipt: got id %d, %v; want 0", id, err)
		}
		go func() {
			for {
				if _, err := server.ReadPacket(); err != nil {
					return
				}
			}
		}()
		timeout := time.After(3 * time.Second)
		for len(want) > 0 {
			select {
			case r := <-receipts:
				if !want[r.ID] || !r.Acked {
					t.Fatalf("receipt %+v: want an unseen id, acked", r)
				}
				delete(want, r.ID)
			case <-timeout:
				t.Fatalf("%d receipts missing", len(want))
			}
		}
		select {
		case r := <-receipts:
			t.Errorf("extra receipt %+v", r)
		case <-time.After(50 * time.Millisecond):
		}
	})
}

// An unreliable message that is lost is reported as lost.
func TestWriteReceiptLost(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		var hole blackHole
		f := &filterConn{dropWrite: hole.drop}
		l := s.listen(ListenConfig{})
		client, _ := s.dial(Dialer{ListenPacket: s.filter(f), CloseTimeout: 50 * time.Millisecond}, l)
		receipts := make(chan Receipt, 4)
		client.SetReceiptFunc(func(r Receipt) { receipts <- r })
		hole.on.Store(true)
		id, err := client.WriteReceipt([]byte("\xfelost"), UnreliableWithAckReceipt, 0)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-receipts:
			if r.ID != id || r.Acked {
				t.Errorf("got %+v, want id %d lost", r, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no receipt for a lost unreliable message")
		}
	})
}

// Ordering is per channel: a message held back on one channel does not
// hold back another, and each channel's messages arrive in order.
func TestOrderingPerChannel(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{}, l)
		const perChannel = 300
		var wg sync.WaitGroup
		for ch := range uint8(4) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perChannel {
					if _, err := client.WriteWith([]byte{0xfe, ch, byte(i >> 8), byte(i)}, ReliableOrdered, ch); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		next := make([]int, 4)
		_ = server.SetReadDeadline(time.Now().Add(3 * time.Second))
		for range 4 * perChannel {
			got, err := server.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			ch, i := got[1], int(got[2])<<8|int(got[3])
			if i != next[ch] {
				t.Fatalf("channel %d: got message %d, want %d", ch, i, next[ch])
			}
			next[ch]++
		}
	})
}

// When nobody reads, the read queue stops at its bound: datagrams are
// refused unacknowledged until the reader catches up, then every message
// arrives in order.
// The messages waiting for ReadPacket never exceed the read queue's
// bounds, in messages or in bytes, however fast the peer sends, and none
// is lost: what does not fit waits in the layer or is refused and asked
// for again.
func TestReadQueueBackpressure(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lim           limits
		size          int
		maxN, maxSize int
	}{
		{"messages", limits{readQueue: 16}, 2, 16, 0},
		{"bytes", limits{readQueueBytes: 10 << 10}, 1000, 0, 10 << 10},
		{"split messages, bytes", limits{readQueueBytes: 64 << 10}, 20_000, 0, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				l := s.listen(ListenConfig{limits: tc.lim})
				client, server := s.dial(Dialer{}, l)
				const count = 200
				go func() {
					for i := range count {
						b := make([]byte, tc.size)
						b[0], b[1] = 0xfe, byte(i)
						if _, err := client.Write(b); err != nil {
							return
						}
					}
				}()
				// Sample the queue every millisecond of the bubble's
				// clock, once everything due has run, while the writer
				// runs and nobody reads.
				peak, peakBytes := 0, 0
				for range 500 {
					time.Sleep(time.Millisecond)
					synctest.Wait()
					server.mu.Lock()
					n, bytes := len(server.readQ)-server.readHead, 0
					for _, p := range server.readQ[server.readHead:] {
						bytes += len(p)
					}
					server.mu.Unlock()
					peak, peakBytes = max(peak, n), max(peakBytes, bytes)
				}
				if tc.maxN > 0 && peak != tc.maxN {
					t.Errorf("read queue peaked at %d messages, want exactly the bound %d", peak, tc.maxN)
				}
				if tc.maxSize > 0 && (peakBytes > tc.maxSize || peakBytes < tc.maxSize-tc.size) {
					t.Errorf("read queue peaked at %d bytes, want at most the bound %d and within a message of it", peakBytes, tc.maxSize)
				}
				_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
				for i := range count {
					got, err := server.ReadPacket()
					if err != nil || len(got) != tc.size || got[1] != byte(i) {
						t.Fatalf("message %d: got %d bytes % x, %v", i, len(got), got[:min(len(got), 2)], err)
					}
				}
			})
		})
	}
}

// Many connections, then every end closed: no goroutine, timer or
// connection is left.
func TestNoLeaksAfterClose(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		var clients, servers []*Conn
		for range 8 {
			c, srv := s.dial(Dialer{}, l)
			clients, servers = append(clients, c), append(servers, srv)
		}
		for i := range clients {
			if _, err := clients[i].Write(bytes.Repeat([]byte{0xfe}, 10<<10)); err != nil {
				t.Fatal(err)
			}
			if _, err := servers[i].ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
		for i := range clients {
			if i%2 == 0 {
				_ = clients[i].Close()
			} else {
				_ = servers[i].Close()
			}
		}
		if !waitFor(2*time.Second, func() bool { return l.Stats().Connections == 0 }) {
			t.Errorf("listener connections: got %d, want 0", l.Stats().Connections)
		}
		_ = l.Close()
		for _, c := range append(clients, servers...) {
			if c.timer.Stop() {
				t.Error("a closed connection's timer was still armed")
			}
		}
	})
}

func TestConnAddrs(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		client, server := s.dial(Dialer{GUID: -99}, l)
		if got, want := client.RemoteAddr().String(), l.Addr().String(); got != want {
			t.Errorf("client remote address: got %s, want %s", got, want)
		}
		ca := client.LocalAddr().(*net.UDPAddr)
		sa := server.RemoteAddr().(*net.UDPAddr)
		if ca.Port != sa.Port || sa.IP.To4() == nil || len(sa.IP) != net.IPv4len && !sa.IP.Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("server remote address: got %v, want 127.0.0.1:%d", sa, ca.Port)
		}
		if !reflect.DeepEqual(server.LocalAddr(), l.Addr()) {
			t.Errorf("server local address: got %v, want %v", server.LocalAddr(), l.Addr())
		}
		if server.GUID() != -99 || client.GUID() != l.ID() {
			t.Errorf("GUIDs: got server-side %d, client-side %d, want -99 and %d", server.GUID(), client.GUID(), l.ID())
		}
	})
}

// TestNoGoroutinePerConnection opens connections to one listener: the
// listener side adds no goroutine per connection, so the process grows by
// the dialer's one reader per dialed socket and no more.
func TestNoGoroutinePerConnection(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{})
		const n = 16
		before := len(leaktest.Goroutines())
		for range n {
			s.dial(Dialer{}, l)
		}
		// Timers run their callbacks in short-lived goroutines; allow a few.
		grown := len(leaktest.Goroutines()) - before
		if grown > n+4 {
			t.Errorf("%d connections added %d goroutines, want at most %d (one dialer reader each)", n, grown, n+4)
		}
	})
}
