package raknet

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// TestRecentBounded remembers more closed peers than the endpoint keeps:
// the table stays within maxRecent, keeps the newest, and forgets entries
// once their lingerTime is over.
func TestRecentBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var e endpoint
	peer := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 19132)
	}
	for i := range maxRecent + 100 {
		e.linger(peer(i), t0)
	}
	n, order := len(e.recent), len(e.recentOrder)
	_, newest := e.recent[peer(maxRecent+99)]
	_, oldest := e.recent[peer(0)]
	if n > maxRecent || order > 2*maxRecent {
		t.Fatalf("recent: got %d entries (%d in order), want at most %d", n, order, maxRecent)
	}
	if !newest || oldest {
		t.Errorf("recent: newest kept %v, oldest kept %v, want true, false", newest, oldest)
	}
	// Once lingerTime is over, the next one sweeps the expired ones.
	e.linger(peer(1<<20), t0.Add(lingerTime))
	if len(e.recent) != 1 || len(e.recentOrder) != 1 {
		t.Errorf("after expiry: got %d entries (%d in order), want 1", len(e.recent), len(e.recentOrder))
	}
}

// TestLingerReadded keeps a peer that closed twice until the later
// deadline: the older order entry must not remove it.
func TestLingerReadded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var e endpoint
	p := netip.MustParseAddrPort("127.0.0.2:19132")
	other := netip.MustParseAddrPort("127.0.0.3:19132")
	e.linger(p, t0)
	e.linger(p, t0.Add(lingerTime/2))
	e.linger(other, t0.Add(lingerTime))
	if until, ok := e.recent[p]; !ok || !until.Equal(t0.Add(lingerTime/2+lingerTime)) {
		t.Errorf("re-added peer: got %v %v, want kept until %v", until, ok, t0.Add(lingerTime/2+lingerTime))
	}
	e.forget(p)
	if _, ok := e.recent[p]; ok {
		t.Error("forget: peer still remembered")
	}
}

func TestAppendAckFor(t *testing.T) {
	h := wire.DatagramHeader{Flags: wire.FlagValid | wire.FlagNeedsBAndAS, Number: 7}
	got := appendAckFor(nil, h.Append(nil))
	want := []byte{0xc0, 0x00, 0x01, 0x01, 0x07, 0x00, 0x00}
	if string(got) != string(want) {
		t.Errorf("ACK of datagram 7: got % x, want % x", got, want)
	}
	ack := wire.Ack{Ranges: []wire.AckRange{{Start: 1, End: 1}}}
	if got := appendAckFor(nil, ack.Append(nil)); got != nil {
		t.Errorf("ACK of an ACK: got % x, want nil", got)
	}
	if got := appendAckFor(nil, []byte{0x84, 1}); got != nil {
		t.Errorf("ACK of a truncated datagram: got % x, want nil", got)
	}
}

func TestClampMTU(t *testing.T) {
	for _, tc := range []struct{ mtu, limit, want int }{
		{100, 1400, MinMTU}, {1000, 1400, 1000}, {1492, 1400, 1400}, {2000, MaxMTU, MaxMTU},
	} {
		if got := clampMTU(tc.mtu, tc.limit); got != tc.want {
			t.Errorf("clampMTU(%d, %d): got %d, want %d", tc.mtu, tc.limit, got, tc.want)
		}
	}
	for _, tc := range []struct{ configured, def, want int }{
		{0, DefaultMaxMTU, DefaultMaxMTU}, {100, DefaultMaxMTU, MinMTU}, {9000, DefaultMaxMTU, MaxMTU}, {1200, MaxMTU, 1200},
	} {
		if got := maxMTUOr(tc.configured, tc.def); got != tc.want {
			t.Errorf("maxMTUOr(%d, %d): got %d, want %d", tc.configured, tc.def, got, tc.want)
		}
	}
}

func TestNewGUIDSign(t *testing.T) {
	for range 100 {
		if g := newGUID(true); g >= 0 {
			t.Fatalf("client GUID %d, want negative", g)
		}
		if g := newGUID(false); g < 0 {
			t.Fatalf("server GUID %d, want positive", g)
		}
	}
}

// A datagram over maxDatagramIn is dropped unread and counted; one at the
// limit is handled. So it is with batched I/O and without.
func TestEndpointDropsOversize(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "batched"}[batch], func(t *testing.T) {
			old := batching
			batching = batch && old
			defer func() { batching = old }()
			testDropsOversize(t)
		})
	}
}

func testDropsOversize(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := newEndpoint(pc)
	got := make(chan int, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.readLoop(func(b []byte, _ netip.AddrPort, _ time.Time) { got <- len(b) })
	}()
	c, err := net.Dial("udp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{maxDatagramIn + 1, 28_000, maxDatagramIn, 1} {
		if _, err := c.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{maxDatagramIn, 1} {
		select {
		case n := <-got:
			if n != want {
				t.Errorf("handled a %d-byte datagram, want %d", n, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("no %d-byte datagram handled", want)
		}
	}
	if n := e.n.oversize.Load(); n != 2 {
		t.Errorf("oversize: got %d, want 2", n)
	}
	e.close()
	<-done
}
