package integration

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet"
	goraknet "github.com/sandertv/go-raknet"
)

// go-raknet v1.15.1 is the oracle: its Dialer against our Listener and our
// Dialer against its Listener. Its listener blocks an IP for 10 s after one
// bad datagram by default; every test here comes from 127.0.0.1, so the
// block is disabled to keep one failure from failing the rest.

const (
	// goRakNetMaxSplits is go-raknet's listener limit on fragments per
	// message: a larger message closes the connection, whoever sends it.
	goRakNetMaxSplits = 512
	// splitOverhead is a datagram header (4) plus the header of a
	// ReliableOrdered split frame (1+2+3+3+1+4+2+4 = 20).
	splitOverhead = 4 + 20
)

// The sizes exchanged, both ways.
var exchangeSizes = []int{1, 1 << 10, 100 << 10, 1 << 20}

// orderedCount is how many small messages are checked in order.
const orderedCount = 10000

func orderedSize(i int) int { return 5 + i%97 }

func goListen(t *testing.T) *goraknet.Listener {
	t.Helper()
	return goListenConfig(t, goraknet.ListenConfig{BlockDuration: -1})
}

func goListenConfig(t *testing.T, lc goraknet.ListenConfig) *goraknet.Listener {
	t.Helper()
	l, err := lc.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("go-raknet listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	l.PongData(testPong)
	return l
}

// logBuffer keeps what a logger writes; it is safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// goListenLogged is goListen with go-raknet's error log kept. go-raknet
// logs each datagram it refuses and why (a window too wide, too many
// splits in progress), and closes the connection it came on.
func goListenLogged(t *testing.T) (*goraknet.Listener, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	return goListenConfig(t, goraknet.ListenConfig{BlockDuration: -1, ErrorLog: log}), logs
}

func goAccept(t *testing.T, l *goraknet.Listener, timeout time.Duration) *goraknet.Conn {
	t.Helper()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		ch <- c
	}()
	select {
	case c := <-ch:
		if c == nil {
			t.Fatal("go-raknet accept failed")
		}
		t.Cleanup(func() { _ = c.Close() })
		return c.(*goraknet.Conn)
	case <-time.After(timeout):
		t.Fatalf("go-raknet accept: no connection after %v", timeout)
		return nil
	}
}

func goDial(t *testing.T, addr string) *goraknet.Conn {
	t.Helper()
	c, err := goraknet.Dialer{}.DialTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatalf("go-raknet dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchange sends every size in sizes both ways, then orderedCount small
// messages both ways, and logs how long each took. maxTo caps the size
// sent to the second connection.
func exchange(t *testing.T, ours, theirs packetConn, maxToTheirs int) {
	t.Helper()
	for _, size := range exchangeSizes {
		toTheirs := min(size, maxToTheirs)
		d1, err := transfer(ours, theirs, 1, func(int) int { return toTheirs }, 20*time.Second)
		if err != nil {
			t.Fatalf("%d bytes to go-raknet: %v", toTheirs, err)
		}
		d2, err := transfer(theirs, ours, 1, func(int) int { return size }, 20*time.Second)
		if err != nil {
			t.Fatalf("%d bytes from go-raknet: %v", size, err)
		}
		t.Logf("%7d bytes to go-raknet in %v, %7d bytes from go-raknet in %v", toTheirs, d1, size, d2)
	}
	start := time.Now()
	err := both(func(from, to packetConn) error {
		_, err := transfer(from, to, orderedCount, orderedSize, 30*time.Second)
		return err
	}, ours, theirs)
	if err != nil {
		t.Fatalf("%d ordered messages each way: %v", orderedCount, err)
	}
	t.Logf("%d ordered messages each way in %v", orderedCount, time.Since(start))
}

func TestGoRakNetPingsOurListener(t *testing.T) {
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	got, err := goraknet.PingTimeout(l.Addr().String(), 3*time.Second)
	if err != nil {
		t.Fatalf("go-raknet ping: %v", err)
	}
	if !bytes.Equal(got, testPong) {
		t.Fatalf("go-raknet ping: got %q, want %q", got, testPong)
	}
}

func TestOurPingGoRakNetListener(t *testing.T) {
	l := goListen(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got, err := raknet.Ping(ctx, l.Addr().String())
	if err != nil {
		t.Fatalf("ping go-raknet: %v", err)
	}
	if !bytes.Equal(got, testPong) {
		t.Fatalf("ping go-raknet: got %q, want %q", got, testPong)
	}
}

func TestGoRakNetDialerOurListener(t *testing.T) {
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	theirs := goDial(t, l.Addr().String())
	ours := acceptOne(t, l, 5*time.Second)
	if ours.MTU() != raknet.DefaultMaxMTU {
		t.Errorf("MTU: got %d, want %d", ours.MTU(), raknet.DefaultMaxMTU)
	}
	exchange(t, ours, theirs, 1<<30)
	t.Logf("our stats: %+v", ours.Stats())
}

func TestOurDialerGoRakNetListener(t *testing.T) {
	l := goListen(t)
	ours := dial(t, raknet.Dialer{}, l.Addr().String(), 5*time.Second)
	theirs := goAccept(t, l, 5*time.Second)
	// go-raknet's listener refuses a message of more than 512 fragments
	// from any sender, so 1 MiB cannot reach it: the largest message that
	// fits in 512 fragments at this MTU is sent instead. Every other size,
	// and 1 MiB in the other direction, is sent in full.
	maxTo := goRakNetMaxSplits * (ours.MTU() - 28 - splitOverhead)
	exchange(t, ours, theirs, maxTo)
	t.Logf("our stats: %+v", ours.Stats())
}

// The close tests bound how long the other side takes to notice a close.
// Ours sends DisconnectionNotification at once; go-raknet's Close waits
// for its data to be acknowledged and then up to a second more (it
// measures from a time truncated to the second).
const (
	ourClosePropagation   = time.Second
	theirClosePropagation = 3 * time.Second
)

func TestOurListenerCloseSeenByGoRakNet(t *testing.T) {
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	theirs := goDial(t, l.Addr().String())
	ours := acceptOne(t, l, 5*time.Second)
	if _, err := transfer(ours, theirs, 1, func(int) int { return 100 }, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ours.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closeTook := time.Since(start)
	d, err := readErr(theirs, 5*time.Second)
	if err == nil {
		t.Fatalf("go-raknet read: no error %v after our Close", d)
	}
	d += closeTook
	if d > ourClosePropagation {
		t.Errorf("go-raknet noticed our close after %v, want at most %v", d, ourClosePropagation)
	}
	t.Logf("our Close returned in %v; go-raknet dialer noticed after %v", closeTook, d)
}

func TestOurDialerCloseSeenByGoRakNet(t *testing.T) {
	l := goListen(t)
	ours := dial(t, raknet.Dialer{}, l.Addr().String(), 5*time.Second)
	theirs := goAccept(t, l, 5*time.Second)
	if _, err := transfer(theirs, ours, 1, func(int) int { return 100 }, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ours.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	closeTook := time.Since(start)
	d, err := readErr(theirs, 5*time.Second)
	if err == nil {
		t.Fatalf("go-raknet read: no error %v after our Close", d)
	}
	d += closeTook
	if d > ourClosePropagation {
		t.Errorf("go-raknet noticed our close after %v, want at most %v", d, ourClosePropagation)
	}
	t.Logf("our Close returned in %v; go-raknet listener noticed after %v", closeTook, d)
}

func TestGoRakNetDialerCloseSeenByOurListener(t *testing.T) {
	l := listen(t, raknet.ListenConfig{}, "127.0.0.1:0")
	theirs := goDial(t, l.Addr().String())
	ours := acceptOne(t, l, 5*time.Second)
	if _, err := transfer(theirs, ours, 1, func(int) int { return 100 }, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = theirs.Close()
	d, err := readErr(ours, 5*time.Second)
	checkPeerClosed(t, d, err)
	if n := waitConnections(l, 0, time.Second); n != 0 {
		t.Errorf("listener connections: got %d, want 0", n)
	}
}

func TestGoRakNetListenerCloseSeenByOurDialer(t *testing.T) {
	l := goListen(t)
	ours := dial(t, raknet.Dialer{}, l.Addr().String(), 5*time.Second)
	theirs := goAccept(t, l, 5*time.Second)
	if _, err := transfer(ours, theirs, 1, func(int) int { return 100 }, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_ = theirs.Close()
	d, err := readErr(ours, 5*time.Second)
	checkPeerClosed(t, d, err)
}

func checkPeerClosed(t *testing.T, d time.Duration, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("read: no error %v after go-raknet's Close", d)
	}
	if !errors.Is(err, raknet.ErrPeerClosed) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("read: got %v, want ErrPeerClosed and net.ErrClosed", err)
	}
	if errors.Is(err, raknet.ErrPeerTimeout) {
		t.Errorf("read: got %v, a timeout, want a close", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Errorf("read: got %T, want *net.OpError", err)
	}
	if d > theirClosePropagation {
		t.Errorf("noticed go-raknet's close after %v, want at most %v", d, theirClosePropagation)
	}
	t.Logf("noticed go-raknet's close after %v", d)
}

// waitConnections polls l until it has want connections or timeout passes
// and returns the last count.
func waitConnections(l *raknet.Listener, want int, timeout time.Duration) int {
	n := 0
	eventually(timeout, func() bool { n = l.Stats().Connections; return n == want })
	return n
}
