package nethernet

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/poll"
	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/discovery"
)

// lanClient is go-nethernet's discovery listener as a client uses it,
// asking at 127.255.255.255 (loopback only) on port.
func lanClient(t *testing.T, port int) *discovery.Listener {
	t.Helper()
	c, err := discovery.ListenConfig{
		NetworkID:        42,
		BroadcastAddress: &net.UDPAddr{IP: net.IPv4(127, 255, 255, 255), Port: port},
		Log:              quietSlog,
	}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// LAN discovery over loopback finds the server under its GUID with the
// live status, and a client joins from the LAN list over LAN signalling.
func TestLANDiscoveryAndJoin(t *testing.T) {
	defer checkGoroutines(t)()
	const guid = 0x1234_5678_9abc
	l := listenTest(t, Config{
		// Only a socket on the wildcard address receives what is sent to
		// 127.255.255.255.
		LANAddr:        "0.0.0.0:0",
		NetworkID:      guid,
		AllowAnonymous: true,
		Status: func() Status {
			return Status{Name: "Basalt", Protocol: 2225, Version: "1.26.60", Level: "L", Players: 2, MaxPlayers: 20, GameType: "Creative"}
		},
	})
	if l.LANAddr() == nil {
		t.Fatal("no LAN discovery")
	}
	c := lanClient(t, l.LANAddr().(*net.UDPAddr).Port)
	defer c.Close()
	var data []byte
	if !poll.Until(10*time.Second, 50*time.Millisecond, func() bool { data = c.Responses()[guid]; return data != nil }) {
		t.Fatal("the server was not discovered")
	}
	var ad Advertisement
	if err := ad.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if ad.Version != AdvertVersion7 || ad.MOTD != "Basalt" || ad.LevelName != "L" || ad.PlayerCount != 2 ||
		ad.MaxPlayers != 20 || ad.GameMode != 1 || ad.Protocol != 2225 || ad.GameVersion != "1.26.60" ||
		ad.ConnectionType != ConnectionTypeLANSignaling || ad.AcceptsSelfSignedAuth != true {
		t.Errorf("advertisement %+v", ad)
	}

	// Join from the list: signals over the discovery socket.
	d := gonn.Dialer{API: loopbackAPI(), Log: quietSlog}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cc, err := d.DialContext(ctx, strconv.FormatUint(guid, 10), c)
	if err != nil {
		t.Fatalf("LAN join: %v", err)
	}
	sc := accept(t, l)
	if _, err := cc.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if b, err := sc.ReadPacket(); err != nil || string(b) != "hi" {
		t.Fatalf("ReadPacket = %q, %v", b, err)
	}
	_ = cc.Close()
	_ = sc.Close()
	_ = c.Close()
	_ = l.Close()
}

// nopPacketConn is a PacketConn that discards writes.
type nopPacketConn struct{ net.PacketConn }

func (nopPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) { return len(b), nil }
func (nopPacketConn) LocalAddr() net.Addr                       { return &net.UDPAddr{} }

// Discovery datagrams are hostile: whatever they hold, handling one never
// panics and the peer table stays within its bound.
func FuzzLANHandle(f *testing.F) {
	f.Add(discovery.Marshal(&discovery.RequestPacket{}, 1))
	f.Add(discovery.Marshal(&discovery.MessagePacket{RecipientID: 7, Data: "CONNECTREQUEST 1 v=0"}, 2))
	f.Add(discovery.Marshal(&discovery.ResponsePacket{ApplicationData: []byte{1, 2, 3}}, 3))
	f.Add([]byte{0, 1, 2})
	s := testLAN(f)
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	f.Fuzz(func(t *testing.T, b []byte) {
		s.handle(b, from, time.Now())
		s.offers.Wait()
		if len(s.peers) > maxLANPeers {
			t.Fatalf("%d LAN peers", len(s.peers))
		}
		if _, _, held := s.l.adm.heldBy(from.AddrPort().Addr()); held != 0 {
			t.Fatalf("%d negotiations held with no listener to answer them", held)
		}
	})
}

// testLAN is LAN signalling on a socket that discards what it sends, for
// a Listener of defaults with nothing to answer offers.
func testLAN(tb testing.TB) *lanSignaling {
	tb.Helper()
	l := &Listener{conf: Config{NetworkID: 7, AllowAnonymous: true, MaxOfferSize: DefaultMaxOfferSize,
		NegotiationTimeout: DefaultNegotiationTimeout}}
	l.adm = newAdmission(admitConfig{max: 8, answering: 2, perSource: 4, ratePerSource: 1000,
		proofWindow: time.Second, timeout: time.Second, answerWait: time.Second}, &l.stats)
	s := &lanSignaling{l: l, conn: nopPacketConn{}, id: 7, limiter: newIPLimiter(lanRepliesPerIP, 0),
		peers: make(map[uint64]lanPeer), ctx: context.Background()}
	return s
}

// The peer table keeps at most maxLANPeers, forgetting the oldest.
func TestLANPeersBounded(t *testing.T) {
	s := &lanSignaling{peers: make(map[uint64]lanPeer)}
	now := time.Unix(1000, 0)
	for i := range 3 * maxLANPeers {
		s.remember(uint64(i), &net.UDPAddr{}, now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(s.peers) != maxLANPeers {
		t.Errorf("%d peers, want %d", len(s.peers), maxLANPeers)
	}
	if _, ok := s.peers[3*maxLANPeers-1]; !ok {
		t.Error("the newest peer was forgotten")
	}
	if _, ok := s.peers[0]; ok {
		t.Error("the oldest peer was kept")
	}
}

// recordNotifier records the signals handed to it.
type recordNotifier struct {
	mu   sync.Mutex
	sigs []*gonn.Signal
}

func (n *recordNotifier) NotifySignal(s *gonn.Signal) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sigs = append(n.sigs, s)
	return true
}

// LAN signals are heard from LAN addresses only; a LAN offer takes the
// one admission path, and a candidate that comes before its offer is
// handed on after it, in order; a candidate of no admitted negotiation
// goes nowhere.
func TestLANSignalsAdmitted(t *testing.T) {
	s := testLAN(t)
	n := &recordNotifier{}
	s.Notify(n)
	offer := offerSDP(t)
	msg := func(typ string, id uint64, data string) []byte {
		sig := &gonn.Signal{Type: typ, ConnectionID: id, Data: data}
		return discovery.Marshal(&discovery.MessagePacket{RecipientID: 7, Data: sig.String()}, 99)
	}
	now := time.Now()
	public := &net.UDPAddr{IP: net.IPv4(203, 0, 113, 5), Port: 7551}
	s.handle(msg(gonn.SignalTypeOffer, 1, offer), public, now)
	s.handle(discovery.Marshal(&discovery.RequestPacket{}, 99), public, now)
	if got := s.l.stats.notLAN.Load(); got != 2 {
		t.Errorf("not_lan = %d, want 2", got)
	}
	lan := &net.UDPAddr{IP: net.IPv4(192, 168, 1, 20), Port: 7551}
	s.handle(msg(gonn.SignalTypeCandidate, 5, "candidate:1 1 udp 1 192.168.1.20 5000 typ host"), lan, now)
	s.l.adm.mu.Lock()
	turns := s.l.adm.conf.answering
	s.l.adm.mu.Unlock()
	for range turns { // hold every answering turn: the offer must wait
		s.l.adm.turns <- struct{}{}
	}
	s.handle(msg(gonn.SignalTypeOffer, 2, offer), lan, now)
	s.handle(msg(gonn.SignalTypeCandidate, 2, "candidate:1 1 udp 1 192.168.1.20 5000 typ host"), lan, now)
	if _, _, held := s.l.adm.heldBy(lan.AddrPort().Addr()); held != 1 {
		t.Fatalf("%d negotiations held, want the offer's", held)
	}
	<-s.l.adm.turns
	s.offers.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sigs) != 2 || n.sigs[0].Type != gonn.SignalTypeOffer || n.sigs[1].Type != gonn.SignalTypeCandidate ||
		n.sigs[0].ConnectionID != 2 {
		t.Errorf("handed on %v, want the offer of 2, then its candidate", n.sigs)
	}
	if s.l.stats.offers.Load() != 1 {
		t.Errorf("offers = %d, want 1 (the public one never counted)", s.l.stats.offers.Load())
	}
}
