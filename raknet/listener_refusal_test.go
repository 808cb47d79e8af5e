package raknet

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
	"github.com/rs/zerolog"
)

// refusalCases are datagrams the listener refuses without a reply, from
// source from, and the counter each must raise.
func refusalCases(l *Listener, from netip.AddrPort) []struct {
	name  string
	b     []byte
	count func(ListenerStats) uint64
} {
	forged := wire.OpenConnectionRequest2{HasCookie: true, Cookie: 12345, ServerAddr: netip.MustParseAddrPort("127.0.0.1:19132"), MTU: 1400, ClientGUID: -1}
	junk := bytes.Repeat([]byte{0x42}, 100)
	stray := wire.DatagramHeader{Flags: wire.FlagValid, Number: 5}
	return []struct {
		name  string
		b     []byte
		count func(ListenerStats) uint64
	}{
		{"forged cookie", forged.Append(nil), func(s ListenerStats) uint64 { return s.CookieFailures }},
		{"junk", junk, func(s ListenerStats) uint64 { return s.Dropped }},
		{"data from a stranger", stray.Append(nil), func(s ListenerStats) uint64 { return s.Dropped }},
		{"short probe", (&wire.OpenConnectionRequest1{Protocol: 11, Size: 18}).Append(nil), func(s ListenerStats) uint64 { return s.Dropped }},
	}
}

// Refusing a datagram allocates nothing: a flood costs no garbage.
func TestRefusalAllocs(t *testing.T) {
	l := listenTest(t, ListenConfig{ListenPacket: sinkListen, OfflineRate: -1})
	from := netip.MustParseAddrPort("127.0.5.1:4000")
	for _, tc := range refusalCases(l, from) {
		before := tc.count(l.Stats())
		if n := testing.AllocsPerRun(200, func() { l.handle(tc.b, from, time.Now()) }); n != 0 {
			t.Errorf("%s: got %v allocations, want 0", tc.name, n)
		}
		if tc.count(l.Stats()) == before {
			t.Errorf("%s: not counted", tc.name)
		}
	}
	// Pings past the source's rate.
	l = listenTest(t, ListenConfig{ListenPacket: sinkListen, OfflineRate: 1})
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	b := ping.Append(nil)
	for range 10 {
		l.handle(b, from, time.Now())
	}
	before := l.Stats().RateLimited
	if n := testing.AllocsPerRun(200, func() { l.handle(b, from, time.Now()) }); n != 0 {
		t.Errorf("rate-limited ping: got %v allocations, want 0", n)
	}
	if l.Stats().RateLimited == before {
		t.Error("rate-limited ping: not counted")
	}
}

func BenchmarkRefusal(b *testing.B) {
	l, err := ListenConfig{OfflineRate: -1}.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	limited, err := ListenConfig{OfflineRate: 1}.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer limited.Close()
	from := netip.MustParseAddrPort("127.0.5.1:4000")
	for _, tc := range refusalCases(l, from) {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			now := time.Now()
			for b.Loop() {
				l.handle(tc.b, from, now)
			}
		})
	}
	b.Run("rate-limited_ping", func(b *testing.B) {
		ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
		p := ping.Append(nil)
		b.ReportAllocs()
		now := time.Now()
		for b.Loop() {
			limited.handle(p, from, now)
		}
	})
}

// BenchmarkPong is the cost of answering a ping, the write included.
func BenchmarkPong(b *testing.B) {
	l, err := ListenConfig{OfflineRate: -1, OfflineBytes: -1}.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.PongData([]byte("MCPE;Basalt;2193;1.26.50;0;20;1;Basalt;Survival;1;19132;19133;"))
	sink, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	from := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	ping := wire.UnconnectedPing{Time: 1, ClientGUID: -1}
	p := ping.Append(nil)
	b.ReportAllocs()
	for b.Loop() {
		l.handle(p, from, time.Now())
	}
}

// A flood of refused datagrams logs one summary line per interval, not a
// line per datagram or per address.
func TestRefusalsLoggedInSummary(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&syncWriter{w: &buf}).Level(zerolog.DebugLevel)
	l := listenTest(t, ListenConfig{ListenPacket: sinkListen, Log: &log})
	forged := wire.OpenConnectionRequest2{HasCookie: true, Cookie: 1, ServerAddr: netip.MustParseAddrPort("127.0.0.1:19132"), MTU: 1400, ClientGUID: -1}
	b := forged.Append(nil)
	now := time.Now()
	for i := range 1000 {
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(1 + i>>8), byte(i), 1}), 5000)
		l.handle(b, from, now.Add(time.Duration(i)*time.Millisecond))
	}
	// Past the interval the next refusal writes a second summary.
	l.handle(b, netip.MustParseAddrPort("127.9.9.9:5000"), now.Add(refusalLogInterval+time.Second))
	out := buf.String()
	if n := strings.Count(out, "refused offline traffic"); n != 2 {
		t.Errorf("got %d summary lines for 1001 refusals over two intervals, want 2:\n%s", n, out)
	}
	if strings.Contains(out, "127.1.") || strings.Contains(out, "127.9.") {
		t.Errorf("log names a refused address:\n%s", out)
	}
	if !strings.Contains(out, `"cookie_failures":1001`) {
		t.Errorf("last summary lacks the count:\n%s", out)
	}
}
