package nethernet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/discovery"
)

// LANPort is the UDP port Bedrock clients broadcast NetherNet LAN
// discovery requests to.
const LANPort = discovery.DefaultPort

// Bounds of LAN discovery, whose peers prove nothing.
const (
	// lanRepliesPerIP is how many discovery replies one IP address gets a
	// second; a client asks every two seconds or so.
	lanRepliesPerIP = 4
	// maxLANPeers bounds the peers a LAN join is signalled with at once;
	// past it the oldest is forgotten.
	maxLANPeers = 256
	// lanPeerTTL is how long a LAN peer is remembered after its last
	// signal.
	lanPeerTTL = 30 * time.Second
	// maxLANDatagram is the largest discovery datagram read.
	maxLANDatagram = 8 << 10
)

// lanSignaling answers NetherNet LAN discovery on one UDP socket with the
// server's data (the same GUID as the RakNet pong, so a client merges the
// two entries) and carries the signals of joins from the LAN list: it is
// the nethernet.Signaling of a second go-nethernet listener, beside the
// HTTP one. A LAN is a LAN: only loopback, private and link-local senders
// are heard. Their offers take the Listener's one admission path, as HTTP
// offers do; replies are rate-limited per address, and the peers it
// signals with are bounded, since a LAN peer proves nothing.
type lanSignaling struct {
	l      *Listener
	conn   net.PacketConn
	id     uint64
	nonce  string
	status func() Status
	online bool

	limiter *ipLimiter
	replies atomic.Uint64
	refused atomic.Uint64

	mu    sync.Mutex
	peers map[uint64]lanPeer
	notifierSlot

	ctx    context.Context
	cancel context.CancelFunc
	closed chan struct{}
	once   sync.Once
	done   chan struct{}
	offers sync.WaitGroup
}

// lanPeer is where a LAN peer's signals go.
type lanPeer struct {
	addr net.Addr
	seen time.Time
}

// listenLAN opens LAN discovery on addr for l.
func listenLAN(l *Listener, addr string) (*lanSignaling, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	s := &lanSignaling{
		l: l, conn: pc, id: l.conf.NetworkID, nonce: hex.EncodeToString(nonce[:]),
		status: l.conf.Status, online: !l.conf.AllowAnonymous,
		limiter: newIPLimiter(lanRepliesPerIP, maxTrackedIPs),
		peers:   make(map[uint64]lanPeer),
		closed:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.read()
	return s, nil
}

// read handles discovery datagrams until the socket is closed.
func (s *lanSignaling) read() {
	defer close(s.done)
	b := make([]byte, maxLANDatagram)
	for {
		n, from, err := s.conn.ReadFrom(b)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-s.closed:
				return
			default:
				continue
			}
		}
		s.handle(b[:n], from, time.Now())
	}
}

// onLAN reports whether a is a LAN address: loopback, private or
// link-local.
func onLAN(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast()
}

// handle answers a discovery request or passes a signal on: an offer
// through admission, a candidate or an error only for a negotiation in
// progress.
func (s *lanSignaling) handle(b []byte, from net.Addr, now time.Time) {
	src := addrOf(from)
	if !onLAN(src) {
		s.l.stats.notLAN.Add(1)
		return
	}
	pk, sender, err := discovery.Unmarshal(b)
	if err != nil || sender == s.id {
		s.refused.Add(1)
		return
	}
	switch pk := pk.(type) {
	case *discovery.RequestPacket:
		if !s.limiter.allow(src, now) {
			s.refused.Add(1)
			return
		}
		data := s.advertisement().Append(nil)
		if _, err := s.conn.WriteTo(discovery.Marshal(&discovery.ResponsePacket{ApplicationData: data}, s.id), from); err == nil {
			s.replies.Add(1)
		}
	case *discovery.MessagePacket:
		if pk.RecipientID != s.id || pk.Data == "" || pk.Data == "Ping" {
			return
		}
		sig := &gonn.Signal{}
		if err := sig.UnmarshalText([]byte(pk.Data)); err != nil {
			s.refused.Add(1)
			return
		}
		sig.NetworkID = strconv.FormatUint(sender, 10)
		if sig.Type == gonn.SignalTypeOffer {
			s.offer(sig, sender, src, from, now)
			return
		}
		if !s.l.adm.follow(connKey{sig.NetworkID, sig.ConnectionID}, sig) {
			return
		}
		s.mu.Lock()
		s.remember(sender, from, now)
		s.mu.Unlock()
		n := s.notifier()
		if n != nil {
			n.NotifySignal(sig)
		}
	}
}

// offer takes a LAN offer through the Listener's admission; the wait for
// an answering turn happens off the reader. A refusal is signalled back:
// an error signal, no larger than the offer.
func (s *lanSignaling) offer(sig *gonn.Signal, sender uint64, src netip.Addr, from net.Addr, now time.Time) {
	s.l.stats.offers.Add(1)
	refuse := func(code int) {
		if code < 0 {
			code = gonn.ErrorCodeIncomingConnectionIgnored
		}
		msg := &discovery.MessagePacket{RecipientID: sender, Data: (&gonn.Signal{
			Type: gonn.SignalTypeError, ConnectionID: sig.ConnectionID, Data: strconv.Itoa(code),
		}).String()}
		_, _ = s.conn.WriteTo(discovery.Marshal(msg, s.id), from)
	}
	if !s.l.adm.allowRate(src, now) {
		refuse(refusedRateCode)
		return
	}
	t, code := s.l.admitOffer(src, sig)
	if t == nil {
		refuse(code)
		return
	}
	s.offers.Add(1)
	go func() {
		defer s.offers.Done()
		if !t.wait(s.ctx) {
			t.release()
			s.l.stats.busy.Add(1)
			refuse(refusedBusyCode)
			return
		}
		s.mu.Lock()
		s.remember(sender, from, time.Now())
		s.mu.Unlock()
		n := s.notifier()
		if n == nil || !n.NotifySignal(sig) {
			t.release()
			refuse(refusedBusyCode)
			return
		}
		for _, q := range t.handedOn() {
			n.NotifySignal(q)
		}
	}()
}

// remember records where sender's signals go, within maxLANPeers. s.mu is
// held.
func (s *lanSignaling) remember(sender uint64, from net.Addr, now time.Time) {
	if _, ok := s.peers[sender]; !ok && len(s.peers) >= maxLANPeers {
		var oldest uint64
		var at time.Time
		for id, p := range s.peers {
			if now.Sub(p.seen) > lanPeerTTL {
				delete(s.peers, id)
				continue
			}
			if at.IsZero() || p.seen.Before(at) {
				oldest, at = id, p.seen
			}
		}
		if len(s.peers) >= maxLANPeers {
			delete(s.peers, oldest)
		}
	}
	s.peers[sender] = lanPeer{addr: from, seen: now}
}

// advertisement is what a discovery reply says: the live status, in the
// layout 1.26.6x clients read (version 7). A discovery request does not
// say which layout its client reads, so there is one answer.
func (s *lanSignaling) advertisement() *Advertisement {
	var st Status
	if s.status != nil {
		st = s.status()
	}
	return &Advertisement{
		Version:               AdvertVersion7,
		MOTD:                  st.Name,
		Protocol:              int32(st.Protocol),
		GameVersion:           st.Version,
		LevelName:             st.Level,
		PlayerCount:           int32(st.Players),
		MaxPlayers:            int32(st.MaxPlayers),
		GameMode:              GameModeID(st.GameType),
		AcceptsOnlineAuth:     true,
		AcceptsSelfSignedAuth: !s.online,
		Nonce:                 s.nonce,
		ConnectionType:        ConnectionTypeLANSignaling,
	}
}

// Signal sends a signal to the LAN peer it is for; an answer is noted by
// admission, whose proof the client's ICE check must then give, and an
// error ends a negotiation not yet answered.
func (s *lanSignaling) Signal(ctx context.Context, sig *gonn.Signal) error {
	id, err := strconv.ParseUint(sig.NetworkID, 10, 64)
	if err != nil {
		return err
	}
	switch sig.Type {
	case gonn.SignalTypeAnswer:
		s.l.adm.answered(connKey{sig.NetworkID, sig.ConnectionID}, sig.Data)
	case gonn.SignalTypeError:
		s.l.adm.failed(connKey{sig.NetworkID, sig.ConnectionID})
	}
	s.mu.Lock()
	p, ok := s.peers[id]
	s.mu.Unlock()
	if !ok {
		return errors.New("nethernet: unknown LAN peer")
	}
	_, err = s.conn.WriteTo(discovery.Marshal(&discovery.MessagePacket{RecipientID: id, Data: sig.String()}, s.id), p.addr)
	return err
}

// Context is done once the socket is closed.
func (s *lanSignaling) Context() context.Context { return s.ctx }

// Credentials returns none: LAN peers reach each other directly.
func (s *lanSignaling) Credentials(context.Context) (*gonn.Credentials, error) {
	return nil, nil
}

// NetworkID returns the server's network ID, its GUID.
func (s *lanSignaling) NetworkID() string { return strconv.FormatUint(s.id, 10) }

// PongData does nothing: replies are made from the live status.
func (s *lanSignaling) PongData([]byte) {}

// Addr returns the discovery socket's address.
func (s *lanSignaling) Addr() net.Addr { return s.conn.LocalAddr() }

// Close closes the socket and waits for the reader.
func (s *lanSignaling) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.cancel()
		_ = s.conn.Close()
		<-s.done
		s.offers.Wait()
	})
	return nil
}

// addrOf returns a's IP.
func addrOf(a net.Addr) netip.Addr {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort().Addr().Unmap()
	}
	return remoteIP(a.String())
}
