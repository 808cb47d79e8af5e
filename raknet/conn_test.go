package raknet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func TestReadDeadline(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{}, l)

	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := server.ReadPacket()
	checkOpErr(t, err, "read", os.ErrDeadlineExceeded)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("got %v, want a net.Error with Timeout", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > time.Second {
		t.Errorf("read returned after %v, want about 50ms", d)
	}

	// A deadline in the past fails at once, even with a message queued.
	if _, err := client.Write([]byte{0xfe, 1}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(time.Second, func() bool { return server.Stats().MessagesReceived > 0 }) {
		t.Fatal("message not received within 1s")
	}
	if _, err := server.ReadPacket(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read with an expired deadline: got %v, want os.ErrDeadlineExceeded", err)
	}

	// Clearing the deadline from another goroutine lets a blocked read
	// through; moving it earlier ends one.
	_ = server.SetReadDeadline(time.Time{})
	if got, err := server.ReadPacket(); err != nil || !bytes.Equal(got, []byte{0xfe, 1}) {
		t.Fatalf("read after clearing the deadline: got %x, %v", got, err)
	}
	errc := make(chan error, 1)
	_ = server.SetReadDeadline(time.Now().Add(time.Hour))
	go func() {
		_, err := server.ReadPacket()
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = server.SetReadDeadline(time.Now())
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("blocked read after SetReadDeadline(now): got %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(time.Second):
		t.Fatal("blocked read not woken by SetReadDeadline")
	}

	// Read with a small buffer.
	_ = server.SetReadDeadline(time.Time{})
	if _, err := client.Write([]byte{0xfe, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	_, err = server.Read(make([]byte, 2))
	checkOpErr(t, err, "read", ErrBufferTooSmall)
}

// When the peer stops acknowledging, Write blocks once the send buffer is
// full, the buffer stays bounded, and the write deadline ends the wait.
func TestWriteBackpressure(t *testing.T) {
	l := listenTest(t, ListenConfig{CloseTimeout: 50 * time.Millisecond})
	var hole blackHole
	f := &filterConn{dropWrite: hole.drop, dropRead: hole.drop}
	const sendBuffer = 1 << 20
	d := Dialer{ListenPacket: filterListen(f), CloseTimeout: 50 * time.Millisecond, limits: limits{sendBuffer: sendBuffer}}
	client, _ := dialTest(t, d, l)
	hole.on.Store(true)

	msg := bytes.Repeat([]byte{0xfe}, 64<<10)
	_ = client.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	var err error
	n := 0
	for ; n < 1000; n++ {
		if _, err = client.Write(msg); err != nil {
			break
		}
	}
	checkOpErr(t, err, "write", os.ErrDeadlineExceeded)
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("write returned after %v, want about 300ms", d)
	}
	if s := client.Stats(); s.Buffered > sendBuffer+len(msg) {
		t.Errorf("buffered: got %d bytes, want at most %d", s.Buffered, sendBuffer+len(msg))
	}
	t.Logf("%d writes of %d bytes before blocking; %+v", n, len(msg), client.Stats())

	// A blocked write returns when the connection is closed.
	_ = client.SetWriteDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		_, err := client.Write(msg)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	go client.Close()
	select {
	case err := <-errc:
		checkOpErr(t, err, "write", net.ErrClosed)
	case <-time.After(time.Second):
		t.Fatal("blocked write not woken by Close")
	}
}

// A peer that vanishes is timed out on both ends, and the error says so.
func TestPeerVanishes(t *testing.T) {
	checkGoroutines(t)
	const timeout = 300 * time.Millisecond
	l, err := ListenConfig{Timeout: timeout, PingInterval: 50 * time.Millisecond}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var hole blackHole
	f := &filterConn{dropWrite: hole.drop, dropRead: hole.drop}
	d := Dialer{ListenPacket: filterListen(f), Timeout: timeout, PingInterval: 50 * time.Millisecond}
	client, server := dialTest(t, d, l)
	if _, err := client.Write([]byte{0xfe}); err != nil {
		t.Fatal(err)
	}
	hole.on.Store(true)
	start := time.Now()
	for name, c := range map[string]*Conn{"server": server, "client": client} {
		for {
			_, err := c.ReadPacket()
			if err == nil {
				continue
			}
			checkOpErr(t, err, "read", ErrPeerTimeout)
			if !errors.Is(err, net.ErrClosed) || errors.Is(err, ErrPeerClosed) {
				t.Errorf("%s: got %v, want net.ErrClosed and ErrPeerTimeout only", name, err)
			}
			break
		}
		if d := time.Since(start); d < timeout-50*time.Millisecond || d > 3*timeout {
			t.Errorf("%s timed out after %v, want about %v", name, d, timeout)
		}
		select {
		case <-c.Done():
		default:
			t.Errorf("%s: Done not closed", name)
		}
	}
	if !waitFor(time.Second, func() bool { return l.Stats().Connections == 0 }) {
		t.Errorf("listener connections: got %d, want 0", l.Stats().Connections)
	}
}

// Connected pings keep an idle connection alive well past the timeout and
// measure the latency.
func TestKeepAlive(t *testing.T) {
	cfg := ListenConfig{Timeout: 200 * time.Millisecond, PingInterval: 40 * time.Millisecond}
	l := listenTest(t, cfg)
	client, server := dialTest(t, Dialer{Timeout: cfg.Timeout, PingInterval: cfg.PingInterval}, l)
	time.Sleep(4 * cfg.Timeout)
	for _, c := range []*Conn{client, server} {
		select {
		case <-c.Done():
			t.Fatal("idle connection closed despite pings")
		default:
		}
		if lat := c.Latency(); lat <= 0 || lat > 100*time.Millisecond {
			t.Errorf("latency: got %v, want between 0 and 100ms on loopback", lat)
		}
		if s := c.Stats(); s.RTT <= 0 || s.DatagramsSent == 0 || s.BytesReceived == 0 {
			t.Errorf("stats: got %+v, want an RTT and traffic", s)
		}
	}
	if _, err := client.Write([]byte{0xfe, 2}); err != nil {
		t.Fatal(err)
	}
	_ = server.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := server.ReadPacket(); err != nil {
		t.Fatal(err)
	}
}

// An idle connection's timer fires only for what is due: here a ping
// every 200ms and the ACK of the peer's ping or pong.
func TestIdleConnectionWakesRarely(t *testing.T) {
	const interval = 200 * time.Millisecond
	l := listenTest(t, ListenConfig{PingInterval: interval})
	client, server := dialTest(t, Dialer{PingInterval: interval}, l)
	time.Sleep(50 * time.Millisecond)
	before := [2]uint64{client.wakeups.Load(), server.wakeups.Load()}
	time.Sleep(5 * interval)
	for i, c := range []*Conn{client, server} {
		// Per interval: our ping, the ACK of the peer's ping, the ACK of
		// the peer's pong; one interval of slack.
		if n := c.wakeups.Load() - before[i]; n > 3*6 {
			t.Errorf("conn %d woke %d times in %v, want at most %d", i, n, 5*interval, 3*6)
		}
	}
}

// Close delivers everything written before it, then the peer sees the
// close.
func TestCloseFlushes(t *testing.T) {
	checkGoroutines(t)
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, server := dialTest(t, Dialer{}, l)
	const count = 200
	for i := range count {
		size := 10
		if i%50 == 0 {
			size = 300 << 10
		}
		msg := make([]byte, size)
		msg[0], msg[1] = 0xfe, byte(i)
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close with %d messages queued took %v", count, time.Since(start))
	for i := range count {
		got, err := server.ReadPacket()
		if err != nil || got[1] != byte(i) {
			t.Fatalf("message %d: got %x, %v", i, got[:min(2, len(got))], err)
		}
	}
	_, err = server.ReadPacket()
	checkOpErr(t, err, "read", ErrPeerClosed)
	// Our own closed connection reports net.ErrClosed only.
	_, err = client.ReadPacket()
	checkOpErr(t, err, "read", net.ErrClosed)
	if errors.Is(err, ErrPeerClosed) {
		t.Errorf("read after our Close: got %v, want no ErrPeerClosed", err)
	}
	_, err = client.Write([]byte{0xfe})
	checkOpErr(t, err, "write", net.ErrClosed)
	if err := client.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	_, err = server.Write([]byte{0xfe})
	checkOpErr(t, err, "write", ErrPeerClosed)
	if !waitFor(time.Second, func() bool { return l.Stats().Connections == 0 }) {
		t.Errorf("listener connections: got %d, want 0", l.Stats().Connections)
	}
}

// Close of a connection whose peer vanished returns after the close
// timeout.
func TestCloseTimeout(t *testing.T) {
	l := listenTest(t, ListenConfig{CloseTimeout: 50 * time.Millisecond})
	var hole blackHole
	f := &filterConn{dropWrite: hole.drop, dropRead: hole.drop}
	client, _ := dialTest(t, Dialer{ListenPacket: filterListen(f), CloseTimeout: 100 * time.Millisecond}, l)
	hole.on.Store(true)
	start := time.Now()
	_ = client.Close()
	if d := time.Since(start); d < 90*time.Millisecond || d > time.Second {
		t.Errorf("close took %v, want about 100ms", d)
	}
}

// Close unblocks a pending ReadPacket at once.
func TestCloseUnblocksRead(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, _ := dialTest(t, Dialer{}, l)
	errc := make(chan error, 1)
	go func() {
		_, err := client.ReadPacket()
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	go client.Close()
	select {
	case err := <-errc:
		checkOpErr(t, err, "read", net.ErrClosed)
	case <-time.After(time.Second):
		t.Fatal("blocked read not woken by Close")
	}
}

func TestWriteWith(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{}, l)
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
}

// Messages written with WriteReceipt report their fate: acknowledged ones
// as acked, each id once.
func TestWriteReceipt(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{}, l)
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
}

// An unreliable message that is lost is reported as lost.
func TestWriteReceiptLost(t *testing.T) {
	var hole blackHole
	f := &filterConn{dropWrite: hole.drop}
	l := listenTest(t, ListenConfig{})
	client, _ := dialTest(t, Dialer{ListenPacket: filterListen(f), CloseTimeout: 50 * time.Millisecond}, l)
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
}

// Ordering is per channel: a message held back on one channel does not
// hold back another, and each channel's messages arrive in order.
func TestOrderingPerChannel(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{}, l)
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
			l := listenTest(t, ListenConfig{limits: tc.lim})
			client, server := dialTest(t, Dialer{}, l)
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
			// Sample the queue while the writer runs and nobody reads.
			peak, peakBytes := 0, 0
			deadline := time.Now().Add(500 * time.Millisecond)
			for time.Now().Before(deadline) {
				server.mu.Lock()
				n, bytes := len(server.readQ)-server.readHead, 0
				for _, p := range server.readQ[server.readHead:] {
					bytes += len(p)
				}
				server.mu.Unlock()
				peak, peakBytes = max(peak, n), max(peakBytes, bytes)
				time.Sleep(time.Millisecond)
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
	}
}

// Many connections, then every end closed: no goroutine, timer or
// connection is left.
func TestNoLeaksAfterClose(t *testing.T) {
	checkGoroutines(t)
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var clients, servers []*Conn
	for range 8 {
		c, s := dialTest(t, Dialer{}, l)
		clients, servers = append(clients, c), append(servers, s)
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
}

// The peer's close is seen at once, and a closed connection keeps messages
// that arrived before the close readable.
func TestPeerCloseSeenPromptly(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{}, l)
	errc := make(chan error, 1)
	go func() {
		_, err := server.ReadPacket()
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	_ = client.Close()
	select {
	case err := <-errc:
		checkOpErr(t, err, "read", ErrPeerClosed)
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Errorf("peer close seen after %v, want under 200ms", d)
		}
		t.Logf("peer close seen after %v", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("peer close not seen within 2 s")
	}
}

func TestConnAddrs(t *testing.T) {
	l := listenTest(t, ListenConfig{})
	client, server := dialTest(t, Dialer{GUID: -99}, l)
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
}

// A closer whose earlier ACKs were lost still finishes Close promptly: the
// peer, gone after the DisconnectionNotification, keeps acknowledging the
// resent data for a while.
func TestCloseAfterLostAcks(t *testing.T) {
	for _, serverCloses := range []bool{false, true} {
		t.Run(fmt.Sprintf("server closes %v", serverCloses), func(t *testing.T) {
			const closeTimeout = 2 * time.Second
			l := listenTest(t, ListenConfig{CloseTimeout: closeTimeout})
			var lose atomic.Bool
			isAck := func(b []byte) bool { return lose.Load() && b[0]&0x40 != 0 }
			// The client loses the ACKs it receives or the ACKs it sends.
			f := &filterConn{dropRead: isAck, dropWrite: isAck}
			client, server := dialTest(t, Dialer{ListenPacket: filterListen(f), CloseTimeout: closeTimeout}, l)
			closer, reader := client, server
			if serverCloses {
				closer, reader = server, client
			}
			// An RTT sample first, so resends follow a measured RTO rather
			// than the initial one.
			if _, err := closer.Write([]byte{0xfe, 0xff}); err != nil {
				t.Fatal(err)
			}
			if _, err := reader.ReadPacket(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Second); closer.Stats().RTT == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			lose.Store(true)
			for i := range 20 {
				if _, err := closer.Write([]byte{0xfe, byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			for range 20 {
				if _, err := reader.ReadPacket(); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
			if closer.Stats().Buffered == 0 {
				t.Fatal("no unacknowledged data before Close")
			}
			lose.Store(false)
			start := time.Now()
			_ = closer.Close()
			if d := time.Since(start); d > closeTimeout/2 {
				t.Errorf("close took %v, want well under the %v close timeout", d, closeTimeout)
			}
			t.Logf("close took %v", time.Since(start))
		})
	}
}

// A connection that hears the peer's pings answers them and sends no
// keepalive of its own: its pongs already keep the peer's timeout at bay.
func TestPingedConnectionSendsNoPings(t *testing.T) {
	l := listenTest(t, ListenConfig{PingInterval: 150 * time.Millisecond})
	client, server := dialTest(t, Dialer{PingInterval: 30 * time.Millisecond}, l)
	time.Sleep(600 * time.Millisecond)
	server.mu.Lock()
	serverPinged := !server.ctl.pingSent.IsZero()
	server.mu.Unlock()
	client.mu.Lock()
	clientPinged := !client.ctl.pingSent.IsZero()
	client.mu.Unlock()
	if serverPinged || !clientPinged {
		t.Errorf("pings sent: server %v, client %v, want false, true", serverPinged, clientPinged)
	}
	if lat := client.Latency(); lat <= 0 {
		t.Errorf("client latency: got %v, want > 0 from the pongs", lat)
	}
}

// TestNoGoroutinePerConnection opens connections to one listener: the
// listener side adds no goroutine per connection, so the process grows by
// the dialer's one reader per dialed socket and no more.
func TestNoGoroutinePerConnection(t *testing.T) {
	checkGoroutines(t)
	l := listenTest(t, ListenConfig{})
	const n = 16
	before := runtime.NumGoroutine()
	for range n {
		dialTest(t, Dialer{}, l)
	}
	// Timers run their callbacks in short-lived goroutines; allow a few.
	grown := runtime.NumGoroutine() - before
	if grown > n+4 {
		t.Errorf("%d connections added %d goroutines, want at most %d (one dialer reader each)", n, grown, n+4)
	}
}
