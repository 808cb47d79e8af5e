package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/server/nethernet"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// Flood bounds: seconds long, loopback only.
const (
	// floodFor is how long the NetherNet flood lasts.
	floodFor = 4 * time.Second
	// floodOfferIPs are the loopback addresses offers are flooded from,
	// each at full speed.
	floodOfferIPs = 16
	// floodJunkMax bounds the junk datagrams sent to the shared port.
	floodJunkMax = 40_000
	// floodJoinWithin bounds a NetherNet player's join under the flood.
	floodJoinWithin = 10 * time.Second
	// floodHeapBudget bounds how much the heap may grow under the flood:
	// the 16 addresses, one /24, hold at most 64 half-open peers, each a
	// pion ICE agent with DTLS and SCTP state (about 150 KiB measured),
	// and the demultiplexer at most 1024 datagrams of 1500 bytes.
	floodHeapBudget = 32 << 20
)

// captureOffer is a Signaling that keeps the offer a Dialer makes and
// fails the dial.
type captureOffer struct{ offer chan string }

func (s *captureOffer) Signal(_ context.Context, sig *gonn.Signal) error {
	if sig.Type == gonn.SignalTypeOffer {
		select {
		case s.offer <- sig.Data:
		default:
		}
	}
	return errors.New("captured")
}
func (s *captureOffer) Notify(gonn.Notifier) func() { return func() {} }
func (s *captureOffer) Context() context.Context    { return context.Background() }
func (s *captureOffer) NetworkID() string           { return "1" }
func (s *captureOffer) PongData([]byte)             {}
func (s *captureOffer) DisableTrickleICE() bool     { return true }
func (s *captureOffer) Credentials(context.Context) (*gonn.Credentials, error) {
	return &gonn.Credentials{}, nil
}

// realOffer returns an offer as a client makes it (loopback candidates),
// which the server answers and then waits on for ICE that never comes: a
// half-open peer.
func realOffer(t *testing.T) string {
	t.Helper()
	sig := &captureOffer{offer: make(chan string, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	n := netherNet(nil)
	if c, err := n.Dialer.DialContext(ctx, "http://127.0.0.1:1", sig); err == nil {
		_ = c.Close()
	}
	select {
	case o := <-sig.offer:
		return o
	default:
		t.Fatal("no offer captured")
		return ""
	}
}

// clientFrom is an HTTP client whose connections come from ip.
func clientFrom(ip net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 2 * time.Second}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		Timeout:   floodJoinWithin,
	}
}

// junkDatagrams returns STUN- and DTLS-shaped junk and random bytes, as
// a peer flooding the shared port would send.
func junkDatagrams() [][]byte {
	var out [][]byte
	for i := range 64 {
		stun := make([]byte, 20+4*(i%16))
		_, _ = rand.Read(stun)
		binary.BigEndian.PutUint16(stun[0:2], uint16(i%4)<<8|1)
		binary.BigEndian.PutUint16(stun[2:4], uint16(len(stun)-20))
		binary.BigEndian.PutUint32(stun[4:8], 0x2112A442)
		dtls := make([]byte, 13+i*10)
		_, _ = rand.Read(dtls)
		dtls[0], dtls[1], dtls[2] = byte(20+i%44), 0xfe, 0xfd
		random := make([]byte, 1+i*20)
		_, _ = rand.Read(random)
		out = append(out, stun, dtls, random)
	}
	return out
}

// TestNetherNetFlood floods the NetherNet side of a server started with
// the defaults: valid offers from 16 addresses at full speed (each a
// half-open peer once answered), oversized and malformed offers, and
// STUN, DTLS and random junk on the UDP port it shares with RakNet. A
// RakNet player keeps getting answers throughout, a NetherNet player
// joins within a bounded time, refusals are counted, the negotiations in
// progress stay within their cap and the heap within a budget.
func TestNetherNetFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood")
	}
	srv, raknetAddr, nnAddr := netherNetServer(t, "lobby")
	offer := realOffer(t)

	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Alex"}}
	alex, err := d.DialContext(ctx, "raknet", raknetAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer alex.Close()
	if err := alex.DoSpawnContext(ctx); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	// The heap and the negotiations in progress, sampled from before the
	// flood.
	u := sampleUsage(srv, stop)
	var wg sync.WaitGroup
	var statuses sync.Map // status code → *atomic.Uint64
	var lastErr atomic.Pointer[error]
	countStatus := func(code int) {
		v, _ := statuses.LoadOrStore(code, new(atomic.Uint64))
		v.(*atomic.Uint64).Add(1)
	}
	post := func(c *http.Client, body string) {
		resp, err := c.Post(nnAddr+"/v1/join/7", "application/sdp", strings.NewReader(body))
		if err != nil {
			countStatus(0)
			if lastErr.Load() == nil {
				lastErr.Store(&err)
			}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		countStatus(resp.StatusCode)
	}
	for i := range floodOfferIPs {
		c := clientFrom(net.IPv4(127, 0, 1, byte(10+i)))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				post(c, offer)
			}
		})
	}
	// Junk offers, each kind from an address of its own: bursts of
	// malformed ones (over the rate of 4 a second), oversized ones.
	wg.Go(func() {
		burst := clientFrom(net.IPv4(127, 0, 2, 1))
		big := clientFrom(net.IPv4(127, 0, 2, 2))
		zero := clientFrom(net.IPv4(127, 0, 2, 3))
		for {
			for range 8 {
				post(burst, "v=0\r\nnot an offer at all")
			}
			post(big, "v=0\r\n"+strings.Repeat("a=x\r\n", 4_000)) // 20 KiB, over the 16 KiB cap
			post(zero, string(make([]byte, 500)))
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	var junkSent atomic.Uint64
	wg.Go(func() {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return
		}
		defer pc.Close()
		to, _ := net.ResolveUDPAddr("udp", raknetAddr)
		junk := junkDatagrams()
		pace := time.NewTicker(time.Millisecond) // about 250k datagrams a second at most
		defer pace.Stop()
		for i := 0; i < floodJunkMax; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := pc.WriteTo(junk[i%len(junk)], to); err == nil {
				junkSent.Add(1)
			}
			if i%256 == 255 {
				<-pace.C
			}
		}
	})
	time.AfterFunc(floodFor, func() { close(stop) })

	// Meanwhile: the RakNet player keeps being answered, the NetherNet
	// player joins.
	joined := make(chan error, 1)
	var joinTook time.Duration
	go func() {
		// Into the flood: the offers have filled their /24's share.
		poll.Until(floodFor, 10*time.Millisecond, func() bool {
			st, _ := srv.NetherNetStats()
			return st.Negotiating >= 32
		})
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), floodJoinWithin)
		defer cancel()
		steve, err := netherNetDial(ctx, nnAddr, "Steve", nil)
		if err == nil {
			err = steve.DoSpawnContext(ctx)
			joinTook = time.Since(start)
			_ = steve.Close()
		}
		joined <- err
	}()
	echoes := 0
	every := time.NewTicker(100 * time.Millisecond)
	defer every.Stop()
	for deadline := time.Now().Add(floodFor - 500*time.Millisecond); time.Now().Before(deadline); {
		if err := alex.WritePacket(&packet.CommandRequest{
			CommandLine:   "/list",
			CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
		}); err != nil {
			t.Fatalf("RakNet player: %v", err)
		}
		lobbyText(t, alex, "in the lobby:")
		echoes++
		<-every.C // a round trip every 100 ms
	}
	if err := <-joined; err != nil {
		t.Errorf("NetherNet player under the flood: %v", err)
	}
	wg.Wait()

	st, _ := srv.NetherNetStats()
	var codes []string
	statuses.Range(func(k, v any) bool {
		codes = append(codes, fmt.Sprintf("%d:%d", k, v.(*atomic.Uint64).Load()))
		return true
	})
	<-u.done
	heapBefore, heapMax, negMax := u.heap0, u.heapMax, u.negMax
	growth := int64(heapMax) - int64(heapBefore)
	t.Logf("flood %v: %d RakNet round trips; NetherNet join in %v; offers %d answered %d busy %d rate-limited %d too large %d malformed %d; "+
		"negotiating at most %d; %d junk datagrams; heap %d MiB → at most %d MiB (+%d MiB); HTTP statuses %v",
		floodFor, echoes, joinTook.Round(time.Millisecond), st.Offers, st.Answered, st.Busy, st.RateLimited, st.TooLarge, st.Malformed,
		negMax, junkSent.Load(), heapBefore>>20, heapMax>>20, growth>>20, codes)
	if e := lastErr.Load(); e != nil {
		t.Logf("an offer's error: %v", *e)
	}
	if echoes < 5 {
		t.Errorf("the RakNet player got %d answers during the flood", echoes)
	}
	// Whether the bursts outrun the rate of 4 offers a second depends on
	// how fast a busy machine answers them (the rate itself is held by
	// server/nethernet's tests); every refusal that was sent must be
	// counted as what it was, and the oversized and malformed offers are
	// always sent.
	status := func(code int) uint64 {
		if v, ok := statuses.Load(code); ok {
			return v.(*atomic.Uint64).Load()
		}
		return 0
	}
	if st.TooLarge == 0 || st.Malformed == 0 {
		t.Errorf("refusals not counted: %+v", st)
	}
	for _, c := range []struct {
		code    int
		counted uint64
	}{
		{http.StatusTooManyRequests, uint64(st.RateLimited)},
		{http.StatusRequestEntityTooLarge, uint64(st.TooLarge)},
		{http.StatusBadRequest, uint64(st.Malformed)},
	} {
		if got := status(c.code); got != c.counted {
			t.Errorf("HTTP %d answered %d times, counted %d", c.code, got, c.counted)
		}
	}
	// The flooding addresses share one /24, which holds at most four
	// sources' worth of negotiations (64), far under the cap; the player
	// and the junk add a few.
	if negMax > nethernet.DefaultMaxNegotiations || negMax > 4*floodOfferIPs+4 {
		t.Errorf("%d negotiations in progress, over the caps", negMax)
	}
	if growth > floodHeapBudget {
		t.Errorf("the heap grew %d MiB under the flood, over the budget of %d MiB", growth>>20, floodHeapBudget>>20)
	}
}
