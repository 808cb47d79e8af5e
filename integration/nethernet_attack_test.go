package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/poll"
	"github.com/basaltmc/basalt/server"
	"github.com/basaltmc/basalt/server/nethernet"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/discovery"
)

// Bounds of the NetherNet attacks: each lasts seconds, on loopback.
const (
	// attackFor bounds each attack: it lasts until it has built up and
	// the honest player has joined in its middle, at most this long.
	attackFor = 8 * time.Second
	// honestJoinWithin bounds an honest NetherNet join (signalling, ICE,
	// DTLS, SCTP and the Login) in the middle of an attack, without the
	// race detector; with it, every goroutine runs several times slower.
	honestJoinWithin = 2 * time.Second
	// raceSlowdown scales honestJoinWithin under the race detector.
	raceSlowdown = 3
	// attackHeapBudget bounds the heap's growth under an attack: the
	// global cap of 256 negotiations, each a pion ICE agent with DTLS
	// and SCTP state, and the attackers' own sockets in this process.
	attackHeapBudget = 60 << 20
	// attackFDBudget bounds the descriptors the server adds under an
	// attack (the attackers' own are counted apart where they hold any).
	attackFDBudget = 300
)

// attackServer starts a server with the defaults, offline, NetherNet on
// the game port, and LAN discovery on loopback if lan.
func attackServer(t *testing.T, lan bool) (*server.Server, string) {
	t.Helper()
	srv, _, nn := netherNetServerWith(t, "lobby", func(c *server.Config) {
		if lan {
			c.Network.LANDiscovery = true
			c.Network.LANAddressV4 = "127.0.0.1:0"
			c.NetherNet.LANAddress = "127.0.0.1:0"
		}
	})
	return srv, nn
}

// honestJoin joins addr over NetherNet as a player would and spawns,
// returning how long it took.
func honestJoin(t *testing.T, addr, name string) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	c, err := netherNetDial(ctx, addr, name, nil)
	if err != nil {
		return time.Since(start), err
	}
	defer c.Close()
	err = c.DoSpawnContext(ctx)
	return time.Since(start), err
}

// openFDs returns the descriptors this process holds.
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(es)
}

// usage samples the heap and the descriptors until stop is closed.
type usage struct {
	heap0, heapMax uint64
	fd0, fdMax     int
	negMax, sigMax int
	done           chan struct{}
}

func sampleUsage(srv *server.Server, stop <-chan struct{}) *usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := &usage{heap0: ms.HeapInuse, heapMax: ms.HeapInuse, fd0: openFDs(), done: make(chan struct{})}
	u.fdMax = u.fd0
	go func() {
		defer close(u.done)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			u.heapMax = max(u.heapMax, ms.HeapInuse)
			u.fdMax = max(u.fdMax, openFDs())
			if st, ok := srv.NetherNetStats(); ok {
				u.negMax = max(u.negMax, st.Negotiating)
				u.sigMax = max(u.sigMax, st.SignalingConns)
			}
		}
	}()
	return u
}

// check fails t if the heap or the descriptors grew past their budgets;
// attackerFDs are the descriptors the attack itself holds open, or -1
// when they cannot be told from the server's (the server's signalling
// connections are then held to their cap instead).
func (u *usage) check(t *testing.T, attackerFDs int) {
	t.Helper()
	<-u.done
	growth := int64(u.heapMax) - int64(u.heap0)
	fds := u.fdMax - u.fd0 - attackerFDs
	t.Logf("heap %d → at most %d MiB (+%d MiB); descriptors +%d (the attack's own %d apart); negotiating at most %d; signalling connections at most %d",
		u.heap0>>20, u.heapMax>>20, growth>>20, fds, attackerFDs, u.negMax, u.sigMax)
	if u.sigMax > nethernet.DefaultMaxSignalingConns {
		t.Errorf("%d signalling connections open, over the cap", u.sigMax)
	}
	if growth > attackHeapBudget {
		t.Errorf("the heap grew %d MiB, over %d MiB", growth>>20, attackHeapBudget>>20)
	}
	if attackerFDs >= 0 && fds > attackFDBudget {
		t.Errorf("%d descriptors added, over %d", fds, attackFDBudget)
	}
	if u.negMax > nethernet.DefaultMaxNegotiations {
		t.Errorf("%d negotiations in progress, over the cap", u.negMax)
	}
}

// honestBound is honestJoinWithin, scaled under the race detector.
func honestBound() time.Duration {
	if raceEnabled {
		return raceSlowdown * honestJoinWithin
	}
	return honestJoinWithin
}

// joinDuring runs an honest join once the attack has built up (built
// reports it, polled) and fails t unless it joins within the bound; the
// channel is closed when the join is over.
func joinDuring(t *testing.T, addr string, built func() bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !poll.Until(attackFor, 10*time.Millisecond, built) {
			t.Errorf("the attack did not build up in %v", attackFor)
			return
		}
		took, err := honestJoin(t, addr, "Steve")
		t.Logf("honest join during the attack: %v (%v)", took.Round(time.Millisecond), err)
		if err != nil {
			t.Errorf("honest join during the attack: %v", err)
		} else if within := honestBound(); took > within {
			t.Errorf("honest join took %v, over %v", took, within)
		}
	}()
	return done
}

// statsOf returns a condition on srv's NetherNet counters, for
// joinDuring.
func statsOf(srv *server.Server, cond func(nethernet.Stats) bool) func() bool {
	return func() bool {
		st, ok := srv.NetherNetStats()
		return ok && cond(st)
	}
}

// Real offers POSTed from 400 source addresses spread over 100 /24s, 200
// a second, whose
// clients never complete ICE: each answered negotiation is torn down
// within the proof window, or when a new offer needs its place, so an
// honest player joins in the middle and memory stays bounded.
func TestNetherNetOfferFloodFromManyAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("flood")
	}
	srv, nnAddr := attackServer(t, false)
	offer := realOffer(t)
	stop := make(chan struct{})
	u := sampleUsage(srv, stop)
	const sources, rate = 400, 200
	clients := make([]*http.Client, sources)
	for i := range clients {
		clients[i] = clientFrom(net.IPv4(127, byte(10+i%100), byte(i/100), 1)) // one per /24 of 100
	}
	var sent, ok200 atomic.Int64
	var wg sync.WaitGroup
	// attackers send the offers, each one at a time, at rate in all: at
	// most attackers requests (and their descriptors) are in flight.
	const attackers = 50
	ticks := make(chan int)
	wg.Go(func() {
		defer close(ticks)
		tk := time.NewTicker(time.Second / rate)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			select {
			case ticks <- i:
			default: // every attacker is busy: this tick's offer is not sent
			}
		}
	})
	for range attackers {
		wg.Go(func() {
			for i := range ticks {
				sent.Add(1)
				resp, err := clients[i%sources].Post(nnAddr+"/v1/join/7", "application/sdp", strings.NewReader(offer))
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok200.Add(1)
				}
			}
		})
	}
	// The cap full, and the unproven torn down as new offers come.
	<-joinDuring(t, nnAddr, statsOf(srv, func(st nethernet.Stats) bool {
		return st.Negotiating >= nethernet.DefaultMaxNegotiations*3/4 && st.Unproven >= 100
	}))
	close(stop)
	wg.Wait()
	st, _ := srv.NetherNetStats()
	t.Logf("%d offers sent, %d answered; stats %+v", sent.Load(), ok200.Load(), st)
	u.check(t, attackers)
	if st.Unproven == 0 {
		t.Error("no unproven negotiation was torn down")
	}
}

// Real offers sent as LAN signals (discovery MessagePackets to the LAN
// port) from 200 addresses spread over 100 /24s, 300 a second: they take the same admission as
// HTTP offers, so an honest player joins over HTTP in the middle and
// memory stays bounded.
func TestNetherNetLANOfferFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood")
	}
	srv, nnAddr := attackServer(t, true)
	lan := srv.NetherNetLANAddr()
	if lan == nil {
		t.Fatal("no NetherNet LAN discovery")
	}
	offer := realOffer(t)
	guid := uint64(srv.GUID())
	const sources, rate = 200, 300
	conns := make([]net.PacketConn, sources)
	for i := range conns {
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.%d.%d.2:0", 10+i%100, i/100))
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		conns[i] = pc
	}
	stop := make(chan struct{})
	u := sampleUsage(srv, stop)
	var sent atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(time.Second / rate)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			sig := &gonn.Signal{Type: gonn.SignalTypeOffer, ConnectionID: rand.Uint64(), Data: offer}
			b := discovery.Marshal(&discovery.MessagePacket{RecipientID: guid, Data: sig.String()}, uint64(1000+i%sources))
			if _, err := conns[i%sources].WriteTo(b, lan); err == nil {
				sent.Add(1)
			}
		}
	})
	<-joinDuring(t, nnAddr, statsOf(srv, func(st nethernet.Stats) bool {
		return st.Negotiating >= nethernet.DefaultMaxNegotiations*3/4 && st.Unproven >= 100
	}))
	close(stop)
	wg.Wait()
	st, _ := srv.NetherNetStats()
	t.Logf("%d LAN offers sent; stats %+v", sent.Load(), st)
	u.check(t, 0) // the attack's sockets were open before the first sample
	if st.Offers < uint64(sent.Load())/2 || st.Unproven == 0 {
		t.Errorf("the LAN offers did not take admission: %+v", st)
	}
}

// 1,000 slow TCP connections from 1,000 addresses, one header byte a
// second: the endpoint closes the oldest of those still sending their
// request for new ones, so an honest player joins in the middle.
func TestNetherNetSlowConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("slow connections")
	}
	srv, nnAddr := attackServer(t, false)
	host := strings.TrimPrefix(nnAddr, "http://")
	const slow = 1000
	stop := make(chan struct{})
	u := sampleUsage(srv, stop)
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	var wg sync.WaitGroup
	for i := range slow {
		wg.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 30, byte(i>>8), byte(i+1))}, Timeout: time.Second}
			c, err := d.Dial("tcp", host)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			req := "POST /v1/join/7 HTTP/1.1\r\nHost: x\r\n"
			for j := 0; j < len(req); j++ {
				if _, err := c.Write([]byte{req[j]}); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second): // one byte a second
				}
			}
		})
	}
	// The endpoint full of slow connections, most of them closed for
	// newer ones already.
	<-joinDuring(t, nnAddr, statsOf(srv, func(st nethernet.Stats) bool {
		return st.SignalingConns >= nethernet.DefaultMaxSignalingConns*3/4 && st.ConnsEvicted >= slow/2
	}))
	close(stop)
	wg.Wait()
	st, _ := srv.NetherNetStats()
	mu.Lock()
	held := len(conns)
	mu.Unlock()
	t.Logf("%d slow connections opened; stats %+v", held, st)
	u.check(t, -1) // the attack's 1,000 sockets close as the server evicts them
	if st.ConnsEvicted == 0 {
		t.Error("no slow connection was closed for a new one")
	}
}

// A household of 16 players behind one address, 100 ms apart, with no
// attack: every one joins and spawns.
func TestNetherNetHousehold(t *testing.T) {
	if testing.Short() {
		t.Skip("16 players")
	}
	_, nnAddr := attackServer(t, false)
	const players = 16
	var wg sync.WaitGroup
	var joined atomic.Int64
	start := time.Now()
	every := time.NewTicker(100 * time.Millisecond) // a player's join every 100 ms
	defer every.Stop()
	for i := range players {
		<-every.C
		wg.Go(func() {
			if _, err := honestJoin(t, nnAddr, fmt.Sprint("Kid", i)); err != nil {
				t.Errorf("player %d: %v", i, err)
				return
			}
			joined.Add(1)
		})
	}
	wg.Wait()
	t.Logf("%d of %d joined in %v", joined.Load(), players, time.Since(start).Round(time.Millisecond))
}
