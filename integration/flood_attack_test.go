package integration

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/attack"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
)

// The attacks of the hardening issue, rerun over loopback from thousands
// of 127.x source addresses, each bounded in count and time. Each test
// states the target it holds the listener to.

const (
	// spoofRate and spoofSources are the worst flood of forged
	// handshakes: 20,000 OpenConnectionRequest2 a second from 10,000
	// addresses.
	spoofRate    = 20000
	spoofSources = 10000
	// spoofDuration bounds each flood of forged handshakes: it outlasts
	// the warm-up, a join that takes all of joinBound and an echo, and the
	// test stops it as soon as its client is in.
	spoofDuration = floodWarmup + joinBound + 5*time.Second
	// floodWarmup is how much flood (floodWarmup at spoofRate) is sent
	// before an honest client tries to join, so whatever state the flood
	// makes is already there.
	floodWarmup = 500 * time.Millisecond

	// maxPongsPerPrefix is the most unconnected pongs a second one /24
	// may get in these tests. It is not the listener's bucket (raknet
	// exports none yet) but a ceiling well above what server lists and
	// LAN scans need (a few pings a second per address) and far below
	// what a flood asks for: pongs aimed at one network at any rate are
	// the reflection the buckets exist to stop.
	maxPongsPerPrefix = 256

	// memoryBudget is the global budget the memory tests configure, and
	// heapSlack what the heap may grow beyond it: connections' fixed
	// state, the test's own clients and the runtime's rounding.
	memoryBudget = 32 << 20
	heapSlack    = 16 << 20
)

// TestFloodSpoofedHandshakesLeaveRoomForPlayers: while spoofed
// OpenConnectionRequest2s (no OCR1; half without a cookie, half with a
// forged one) are asked for at 20,000/s from 10,000 sources, a go-raknet
// dialer connects and echoes, and a gophertunnel client reaches the
// disconnect message, both while the flood runs. How long they take is
// logged; the target (within a second) is scripts/flood's to report.
func TestFloodSpoofedHandshakesLeaveRoomForPlayers(t *testing.T) {
	flood := func(t *testing.T, target netip.AddrPort) (func() *attack.Report, func()) {
		var sent atomic.Int64
		wait, stop := startFlood(t, attack.Spoofer{
			Target: target, Sources: attack.Sources(spoofSources, 40), Shape: attack.OCR2(attack.MixedCookies),
			Rate: spoofRate, Count: spoofRate * int(spoofDuration/time.Second), Duration: spoofDuration,
			Progress: &sent,
		})
		warm := int64(spoofRate * floodWarmup / time.Second)
		if !eventually(spoofDuration, func() bool { return sent.Load() >= warm }) {
			t.Logf("the flood sent %d datagrams, not the %d of its warm-up, before it ended", sent.Load(), warm)
		}
		return wait, stop
	}

	t.Run("go-raknet", func(t *testing.T) {
		l, addr := echoListener(t, raknet.ListenConfig{MaxConnections: serverConnections})
		wait, stop := flood(t, addr)
		c, took, err := goDialTimed(addr, joinBound)
		if err != nil {
			stop()
			t.Fatalf("go-raknet dial during the flood: %v after %v (listener %+v); want a connection", err, took, l.Stats())
		}
		p := newEchoProbe(t, c)
		res := p.run(10, 10*time.Millisecond, nil)
		stop()
		r := wait()
		t.Logf("joined in %v; echo %v; flood %v; listener %+v", took, res, r, l.Stats())
		if res.Lost > 0 {
			t.Errorf("echo during the flood: %v, want none lost", res)
		}
	})

	t.Run("gophertunnel", func(t *testing.T) {
		const msg = "Flooded, {player}, but in."
		srv, addrStr := bedrockServer(t, server.Config{DisconnectMessage: msg, EncryptionDisabled: true})
		addr := netip.MustParseAddrPort(addrStr)
		wait, stop := flood(t, addr)
		ctx, cancel := context.WithTimeout(context.Background(), joinBound)
		defer cancel()
		start := time.Now()
		d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: "Steve"}}
		conn, err := d.DialContext(ctx, "raknet", addrStr)
		took := time.Since(start)
		stop()
		r := wait()
		if conn != nil {
			_ = conn.Close()
		}
		t.Logf("gophertunnel after %v: %v; flood %v; players %d", took, err, r, srv.PlayerCount())
		var de minecraft.DisconnectError
		if !errors.As(err, &de) {
			t.Fatalf("gophertunnel during the flood: got %v after %v, want the disconnect message", err, took)
		}
		if want := strings.ReplaceAll(msg, "{player}", "Steve"); string(de) != want {
			t.Errorf("got disconnect message %q, want %q", de, want)
		}
	})
}

// TestFloodNoAmplification: for floods of OCR1 (the 18-byte one below any
// real probe), OCR2 (no cookie and forged cookies) and OCR2 followed by a
// ConnectionRequest (the reflection attack), a spoofed source gets at most
// as many bytes as were sent in its name, and nothing after the flood; a
// forged cookie gets no reply at all; pings get pongs, but no /24 more
// than maxPongsPerPrefix a second.
func TestFloodNoAmplification(t *testing.T) {
	const sources, prefixes, rate = 1000, 4, 5000
	tests := []struct {
		name   string
		shape  attack.Shape
		count  int
		linger time.Duration
		// maxRatio is the most reply bytes per byte sent; 0 skips the check.
		maxRatio float64
		// silent: a forged cookie is dropped without a reply.
		silent, pings bool
	}{
		{"OCR1 of 18 bytes", attack.OCR1(attack.OCR1MinSize), sources, time.Second, 1, false, false},
		{"OCR2 without cookie", attack.OCR2(attack.NoCookie), sources, time.Second, 1, false, false},
		{"OCR2 with forged cookie", attack.OCR2(attack.ForgedCookie), sources, time.Second, 1, true, false},
		{"OCR2 and ConnectionRequest", attack.Seq(attack.OCR2(attack.NoCookie), attack.ConnectionRequest()), 2 * sources, 2 * time.Second, 1, false, false},
		{"unconnected ping", attack.Ping(), 5 * sources, time.Second, 0, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The library's defaults: no connection cap, so nothing limits
			// the state a flood makes but the listener's own rules.
			l, addr := echoListener(t, raknet.ListenConfig{})
			s := attack.Spoofer{
				Target: addr, Sources: attack.Sources(sources, prefixes), Shape: tc.shape,
				Rate: rate, Count: tc.count, Duration: 5 * time.Second, Linger: tc.linger,
			}
			r, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v; listener %+v", r, l.Stats())
			if tc.maxRatio > 0 && r.Amplification() > tc.maxRatio {
				t.Errorf("amplification: got %.2f (%v back for %v sent), want at most %.0f", r.Amplification(), r.Received, r.Sent, tc.maxRatio)
			}
			if r.After.Datagrams > 0 {
				t.Errorf("after the flood: got %v to %d spoofed sources, want nothing", r.After, r.AfterSources)
			}
			if tc.silent && r.Received.Datagrams > 0 {
				t.Errorf("replies to OCR2s with forged cookies: got %v, want none", r.Received)
			}
			if tc.pings {
				pong := r.ByID[attack.IDUnconnectedPong]
				if pong.Datagrams == 0 {
					t.Fatal("no pong at all: want pings answered within the bucket")
				}
				limit := maxPongsPerPrefix * pong.Bytes / pong.Datagrams
				if r.MaxPrefixBytesPerSecond > limit {
					t.Errorf("pong bytes to one /24 in a second: got %d (%d pongs), want at most %d (%d pongs)",
						r.MaxPrefixBytesPerSecond, r.MaxPrefixDatagramsPerSecond, limit, maxPongsPerPrefix)
				}
			}
		})
	}
}

// TestFloodMemoryBudget: N connections that each open split messages
// they never finish and send ordered messages far ahead of the next
// expected one leave the heap within the listener's global budget, and
// an honest client's echo keeps working throughout.
func TestFloodMemoryBudget(t *testing.T) {
	// Twice the budget is asked for in all, half of it in split messages,
	// half in ordered messages ahead of a gap.
	const asked = 2 * memoryBudget
	// attackTime bounds each attack.
	const attackTime = 8 * time.Second
	for _, n := range []int{1, 10, 50} {
		t.Run(strconv.Itoa(n)+" connections", func(t *testing.T) {
			lc := raknet.ListenConfig{}
			lc.MemoryBudget = memoryBudget
			l, addr := echoListener(t, lc)
			honest := newEchoProbe(t, goDial(t, addr.String()))
			base := heapInUse()
			clients := dialClients(t, addr, n, 100, 8)

			stop := make(chan struct{})
			var during attack.EchoResult
			var wg sync.WaitGroup
			wg.Go(func() { during = honest.run(1000, 20*time.Millisecond, stop) })
			start := time.Now()
			perConn := asked / 2 / n
			var held [2]attack.Counts
			var mu sync.Mutex
			// A listener that slows the attack down gets it cut short.
			ctx, cancel := context.WithTimeout(context.Background(), attackTime)
			defer cancel()
			sem := make(chan struct{}, 4)
			var hw sync.WaitGroup
			for _, c := range clients {
				sem <- struct{}{}
				hw.Go(func() {
					defer func() { <-sem }()
					const parts = 63
					frag := c.MaxPayload(attack.Reliable, true)
					s, err1 := c.OpenSplits(ctx, perConn/(parts*frag)+1, parts)
					o, err2 := c.OrderedAhead(ctx, perConn/c.MaxPayload(attack.ReliableOrdered, false)+1, 1024)
					// A listener that stops acknowledging is refusing
					// the attack, as a budget should.
					for _, err := range []*error{&err1, &err2} {
						if errors.Is(*err, attack.ErrUnacknowledged) || errors.Is(*err, context.DeadlineExceeded) {
							*err = nil
						}
					}
					if err := errors.Join(err1, err2); err != nil {
						t.Errorf("attack from %v: %v", c.Local(), err)
					}
					mu.Lock()
					held[0].Datagrams += s.Datagrams
					held[0].Bytes += s.Bytes
					held[1].Datagrams += o.Datagrams
					held[1].Bytes += o.Bytes
					mu.Unlock()
				})
			}
			hw.Wait()
			took := time.Since(start)
			grown := int64(heapInUse()) - int64(base)
			close(stop)
			wg.Wait()
			after := honest.run(20, 5*time.Millisecond, nil)
			var acked, sent int
			for _, c := range clients {
				st := c.Stats()
				acked += st.Acked
				sent += st.DataSent
			}
			t.Logf("%d connections sent %v in split messages never finished and %v ordered ahead of a gap in %v; the server acknowledged %d of %d datagrams; heap grew %.1f MiB (budget %d MiB); echo during %v, after %v; listener %+v",
				n, held[0], held[1], took.Round(time.Millisecond), acked, sent, float64(grown)/(1<<20), memoryBudget>>20, during, after, l.Stats())
			if grown > memoryBudget+heapSlack {
				t.Errorf("heap grew %.1f MiB, want at most the %d MiB budget (+%d MiB slack)", float64(grown)/(1<<20), memoryBudget>>20, heapSlack>>20)
			}
			if during.Lost > 0 || after.Lost > 0 {
				t.Errorf("honest echo: during %v, after %v; want none lost", during, after)
			}
		})
	}
}

// TestFloodJunkKeepsEchoing: random bytes and well-formed datagrams from
// unknown addresses at the highest rate the machine manages, for about
// two seconds, do not stop an honest client's echo; its p99 during the
// flood is logged against before.
func TestFloodJunkKeepsEchoing(t *testing.T) {
	l, addr := echoListener(t, raknet.ListenConfig{})
	honest := newEchoProbe(t, goDial(t, addr.String()))
	before := honest.run(100, 5*time.Millisecond, nil)
	wait, _ := startFlood(t, attack.Spoofer{
		Target: addr, Sources: attack.Sources(spoofSources, 40), Shape: attack.Junk(1400),
		Count: attack.MaxCount, Duration: 2 * time.Second, Seed: 1,
	})
	stop := make(chan struct{})
	var during attack.EchoResult
	var wg sync.WaitGroup
	wg.Go(func() { during = honest.run(1000, 5*time.Millisecond, stop) })
	r := wait()
	close(stop)
	wg.Wait()
	t.Logf("echo before: %v; during the flood: %v; flood %v; listener %+v", before, during, r, l.Stats())
	if len(during.RTTs) == 0 || during.Lost > 0 {
		t.Errorf("echo during the junk flood: %v, want every echo back within %v", during, echoTimeout)
	}
}

// TestFloodRestartedClientRecoversSlot: a client that restarted on the
// same address and port (another GUID) gets a slot back: the old
// connection times out, and the new one then connects.
func TestFloodRestartedClientRecoversSlot(t *testing.T) {
	const timeout = time.Second
	l := listen(t, raknet.ListenConfig{Timeout: timeout, MaxConnections: serverConnections, CloseTimeout: closeTimeout}, "127.0.0.1:0")
	addr := addrPort(l.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	old, err := attack.Dial(ctx, attack.ClientConfig{Local: netip.AddrPortFrom(attack.ClientAddr(1), 0), Server: addr})
	if err != nil {
		t.Fatal(err)
	}
	oldConn := acceptOne(t, l, 5*time.Second)
	local := old.Local()
	old.Abandon() // the process died: not a word to the server
	restarted := time.Now()

	var c *attack.Client
	var refusals []string
	// A generous bound: the slot comes back one timeout and a retry after
	// the restart, which took is logged against.
	// The client retries as a restarted game would, at most every 100 ms.
	deadline := time.Now().Add(timeout + joinBound)
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for c == nil && time.Now().Before(deadline) {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
		c, err = attack.Dial(dctx, attack.ClientConfig{Local: local, Server: addr})
		dcancel()
		if err != nil {
			refusals = append(refusals, err.Error())
			<-retry.C
		}
	}
	if c == nil {
		t.Fatalf("restarted client on %v: no connection %v after the restart (%d tries: %v)", local, time.Since(restarted), len(refusals), refusals)
	}
	defer c.Abandon()
	took := time.Since(restarted)
	_ = oldConn.SetReadDeadline(time.Now().Add(time.Second))
	_, oldErr := oldConn.ReadPacket()
	newConn := acceptOne(t, l, 2*time.Second)
	t.Logf("reconnected %v after the restart, after %d refusals; the old connection ended with %v", took, len(refusals), oldErr)
	if !errors.Is(oldErr, raknet.ErrPeerTimeout) {
		t.Errorf("old connection: got %v, want it to time out (%v)", oldErr, raknet.ErrPeerTimeout)
	}
	if got := newConn.RemoteAddr().String(); got != local.String() {
		t.Errorf("new connection from %v, want %v", got, local)
	}
}

// TestFloodTwoDatagramsMakeNoSession: OCR2 and then a datagram holding a
// NewIncomingConnection, with no ConnectionRequest, never make an accepted
// connection, from one address or from a thousand spoofed ones.
func TestFloodTwoDatagramsMakeNoSession(t *testing.T) {
	l, addr := echoListener(t, raknet.ListenConfig{})
	c, err := attack.Open(attack.ClientConfig{Local: netip.AddrPortFrom(attack.ClientAddr(2), 0), Server: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	nic := attack.NewIncomingConnection(0)
	if err := c.WriteRaw(attack.AppendOCR2(nil, false, 0, addr, 1400, c.GUID())); err != nil {
		t.Fatal(err)
	}
	// The NIC follows once the OCR2 is answered, so it meets the
	// connection the OCR2 made.
	select {
	case b := <-c.Offline():
		if len(b) == 0 || b[0] != attack.IDOpenConnectionReply2 {
			t.Fatalf("OCR2 answered with % x, want OpenConnectionReply2", b)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("OCR2 not answered within 2 s")
	}
	if err := c.WriteRaw(nic(nil, c.Local(), addr, 0, nil)); err != nil {
		t.Fatal(err)
	}
	r, err := (&attack.Spoofer{
		Target: addr, Sources: attack.Sources(1000, 4), Shape: attack.Seq(attack.OCR2(attack.NoCookie), nic),
		Rate: 5000, Count: 2000, Duration: 3 * time.Second, Linger: 500 * time.Millisecond,
	}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	t.Logf("flood %v; listener %+v", r, st)
	if st.Accepted != 0 {
		t.Errorf("accepted connections: got %d, want 0", st.Accepted)
	}
}

// TestFloodNoEviction: an OCR2 with another GUID from a live player's
// address gets AlreadyConnected (0x12), or nothing when its cookie is
// forged (such requests are dropped unanswered), and the player stays
// connected.
func TestFloodNoEviction(t *testing.T) {
	tests := []struct {
		name   string
		cookie bool
		want   byte
	}{
		{"without cookie", false, attack.IDAlreadyConnected},
		{"with forged cookie", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := listen(t, raknet.ListenConfig{CloseTimeout: closeTimeout}, "127.0.0.1:0")
			addr := addrPort(l.Addr())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			player, err := attack.Dial(ctx, attack.ClientConfig{Local: netip.AddrPortFrom(attack.ClientAddr(3), 0), Server: addr})
			if err != nil {
				t.Fatal(err)
			}
			defer player.Abandon()
			s := acceptOne(t, l, 5*time.Second)

			// The forged request comes from the player's own address and
			// port, as a spoofer's would: the reply goes to the player.
			if err := player.WriteRaw(attack.AppendOCR2(nil, tc.cookie, 0xdeadbeef, addr, 1400, player.GUID()^1)); err != nil {
				t.Fatal(err)
			}
			var reply byte
			select {
			case b := <-player.Offline():
				reply = b[0]
			case <-time.After(time.Second):
			}
			if reply != tc.want {
				t.Errorf("reply to an OCR2 with another GUID: got %s, want %s", replyName(reply), replyName(tc.want))
			}
			// The player is still connected both ways.
			msg := []byte{0xfe, 1, 2, 3}
			if err := player.Send(msg); err != nil {
				t.Fatal(err)
			}
			_ = s.SetReadDeadline(time.Now().Add(time.Second))
			got, err := s.ReadPacket()
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("player's message after the forged OCR2: got % x, %v, want % x (listener %+v)", got, err, msg, l.Stats())
			}
			if _, err := s.Write(msg); err != nil {
				t.Fatalf("write to the player: %v", err)
			}
			select {
			case got := <-player.Messages():
				if !bytes.Equal(got, msg) {
					t.Errorf("player read % x, want % x", got, msg)
				}
			case <-time.After(time.Second):
				t.Error("player read nothing within 1s")
			}
		})
	}
}

func replyName(id byte) string {
	if id == 0 {
		return "nothing"
	}
	return attack.IDName(id)
}

// TestFloodOneAddressCannotTakeEverySlot: one IP opening connections from
// 500 ports does not get every slot: a client from a second IP still
// joins.
func TestFloodOneAddressCannotTakeEverySlot(t *testing.T) {
	const ports = 500
	l, addr := echoListener(t, raknet.ListenConfig{MaxConnections: serverConnections})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	g := attack.Grab(ctx, attack.ClientAddr(4), addr, ports, 32)
	defer g.Close()
	t.Logf("one IP, %d ports: %d connections in %v, refused %v, failed %d; listener %+v",
		ports, len(g.Clients), time.Since(start).Round(time.Millisecond), g.Refused, g.Failed, l.Stats())
	c, took, err := goDialTimed(addr, joinBound)
	if err != nil {
		t.Fatalf("a client from 127.0.0.1 after one IP took %d slots: %v after %v, want a connection", len(g.Clients), err, took)
	}
	defer c.Close()
	res := newEchoProbe(t, c).run(5, 5*time.Millisecond, nil)
	if res.Lost > 0 {
		t.Errorf("echo: %v, want none lost", res)
	}
}
