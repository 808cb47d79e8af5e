package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gonn "github.com/df-mc/go-nethernet"
	"github.com/df-mc/go-nethernet/endpoint"
	"github.com/go-gl/mathgl/mgl32"
	piontransport "github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"
	"github.com/pion/webrtc/v4"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The players phase's workload: each player sends PlayerAuthInput every
// game tick, as the game does, and asks for /list once a second, which
// both servers answer with a line of chat; it reads everything it gets.
const (
	playerTick = 50 * time.Millisecond
	// listEvery is how many ticks apart a player sends /list.
	listEvery = 20
	// joinTimeout bounds one player's join: dial, login and spawn.
	joinTimeout = 15 * time.Second
)

// playerAddr is player i's source address: 127.0.x.y, one per player and
// consecutive players in different /24s, as players on the internet come
// from addresses of their own. The server's per-address and per-prefix
// limits (handshakes, connections, NetherNet offers) then see one player
// each, or a few per /24 past playerPrefixes players.
func playerAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 0, byte(10 + i%playerPrefixes), byte(1 + i/playerPrefixes)})
}

// playerPrefixes is how many /24s the players' addresses spread over.
const playerPrefixes = 240

// rakNetFrom is gophertunnel's RakNet network (go-raknet's dialer)
// dialling from the address local.
type rakNetFrom struct{ local netip.Addr }

func (n rakNetFrom) DialContext(ctx context.Context, address string) (net.Conn, error) {
	c, err := dialFrom(ctx, implGoRakNet, address, n.local)
	if err != nil {
		return nil, err
	}
	return c.(net.Conn), nil
}

func (rakNetFrom) PingContext(context.Context, string) ([]byte, error) {
	return nil, errors.New("bench: ping not supported")
}

func (rakNetFrom) Listen(string) (minecraft.NetworkListener, error) {
	return nil, errors.New("bench: listen not supported")
}

// lossyNet is the network pion's ICE gathers on, where every socket
// drops each datagram it sends or receives with probability rate: a lossy
// link under the player.
type lossyNet struct {
	*stdnet.Net
	rate float64
}

func (n lossyNet) ListenUDP(network string, laddr *net.UDPAddr) (piontransport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &lossyConn{UDPConn: c, rate: n.rate}, nil
}

func (n lossyNet) ListenPacket(network, address string) (net.PacketConn, error) {
	c, err := n.Net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	return &lossyPacketConn{PacketConn: c, rate: n.rate}, nil
}

// drop reports whether a datagram is lost at rate.
func drop(rate float64) bool { return rate > 0 && rand.Float64() < rate }

// lossyConn drops datagrams both ways at rate.
type lossyConn struct {
	piontransport.UDPConn
	rate float64
}

func (c *lossyConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.UDPConn.ReadFrom(b)
		if err != nil || !drop(c.rate) {
			return n, a, err
		}
	}
}

func (c *lossyConn) ReadFromUDP(b []byte) (int, *net.UDPAddr, error) {
	for {
		n, a, err := c.UDPConn.ReadFromUDP(b)
		if err != nil || !drop(c.rate) {
			return n, a, err
		}
	}
}

func (c *lossyConn) WriteTo(b []byte, a net.Addr) (int, error) {
	if drop(c.rate) {
		return len(b), nil
	}
	return c.UDPConn.WriteTo(b, a)
}

func (c *lossyConn) WriteToUDP(b []byte, a *net.UDPAddr) (int, error) {
	if drop(c.rate) {
		return len(b), nil
	}
	return c.UDPConn.WriteToUDP(b, a)
}

// lossyPacketConn is lossyConn for a net.PacketConn.
type lossyPacketConn struct {
	net.PacketConn
	rate float64
}

func (c *lossyPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.PacketConn.ReadFrom(b)
		if err != nil || !drop(c.rate) {
			return n, a, err
		}
	}
}

func (c *lossyPacketConn) WriteTo(b []byte, a net.Addr) (int, error) {
	if drop(c.rate) {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, a)
}

// netherNetFrom is gophertunnel's NetherNet network whose signalling
// (HTTP) comes from the address local; ICE runs on loopback through api.
func netherNetFrom(local netip.Addr, api *webrtc.API) minecraft.NetherNet {
	quiet := slog.New(slog.DiscardHandler)
	d := &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0)), Timeout: joinTimeout}
	return minecraft.NetherNet{
		Signaling: endpoint.ClientConfig{
			HTTPClient: &http.Client{
				Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext},
				Timeout:   joinTimeout,
			},
			Logger: quiet,
		}.New(),
		Dialer: gonn.Dialer{API: api, Log: quiet},
		Log:    quiet,
	}
}

// benchPlayer is one player of the players phase.
type benchPlayer struct {
	name string
	conn *minecraft.Conn
	join time.Duration // dial to spawned

	sent, read, lists atomic.Int64
	// werr is why the sender stopped early.
	werr atomic.Pointer[error]

	// listAt is when the last /list was sent (ns since listBase); the
	// reader records its answer's round trip while measuring is set.
	listAt    atomic.Int64
	measuring atomic.Bool
	mu        sync.Mutex
	rtts      []time.Duration // guarded by mu
}

// listBase is the origin of benchPlayer.listAt.
var listBase = time.Now()

// listRTTs returns the /list round trips recorded.
func (p *benchPlayer) listRTTs() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.rtts)
}

// joinPlayer dials addr over network as player i and spawns.
func joinPlayer(ctx context.Context, network minecraft.Network, addr string, i int) (*benchPlayer, error) {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	p := &benchPlayer{name: fmt.Sprintf("Player%04d", i)}
	t0 := time.Now()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: p.name}}
	conn, err := d.DialContextNetwork(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: dial: %w", p.name, err)
	}
	if err := conn.DoSpawnContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%s: spawn: %w", p.name, err)
	}
	p.join = time.Since(t0)
	p.conn = conn
	return p, nil
}

// play sends a PlayerAuthInput every tick, and /list every listEvery
// ticks, first after offset, until stop is closed or a write fails.
func (p *benchPlayer) play(offset time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(offset)
	defer t.Stop()
	select {
	case <-stop:
		return
	case <-t.C:
	}
	tk := time.NewTicker(playerTick)
	defer tk.Stop()
	pos := mgl32.Vec3{0.5, 80, 0.5}
	for tick := uint64(1); ; tick++ {
		pos[0] += 0.1
		err := p.conn.WritePacket(&packet.PlayerAuthInput{
			Position:  pos,
			InputMode: packet.InputModeMouse,
			PlayMode:  packet.PlayModeNormal,
			Tick:      tick,
		})
		if err == nil && tick%listEvery == 0 {
			p.listAt.Store(int64(time.Since(listBase)))
			err = p.conn.WritePacket(&packet.CommandRequest{
				CommandLine:   "/list",
				CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
			})
		}
		// One batch per tick, as the game sends.
		if err == nil {
			err = p.conn.Flush()
		}
		if err != nil {
			p.werr.Store(&err)
			return
		}
		p.sent.Add(1)
		select {
		case <-stop:
			return
		case <-tk.C:
		}
	}
}

// reader reads every packet until the connection closes.
func (p *benchPlayer) reader() {
	for {
		pk, err := p.conn.ReadPacket()
		if err != nil {
			return
		}
		p.read.Add(1)
		if t, ok := pk.(*packet.Text); ok && isListAnswer(t.Message) {
			p.lists.Add(1)
			if p.measuring.Load() {
				rtt := time.Since(listBase) - time.Duration(p.listAt.Load())
				p.mu.Lock()
				p.rtts = append(p.rtts, rtt)
				p.mu.Unlock()
			}
		}
	}
}

// isListAnswer reports whether msg is the answer to /list of either
// server: "N players in the lobby: ...".
func isListAnswer(msg string) bool { return strings.Contains(msg, " in the lobby: ") }

// joinPlayers joins n players to addr over t with dialers joining at
// once, each from its own address; NetherNet players lose a fraction loss
// of their datagrams each way. It returns the players who joined
// and the first error of those who did not.
func joinPlayers(t transport, addr string, n, dialers int, loss float64) ([]*benchPlayer, int, error) {
	var api *webrtc.API
	if t == transportNetherNet {
		var err error
		if api, err = clientAPI(loss); err != nil {
			return nil, 0, err
		}
	}
	players := make([]*benchPlayer, n)
	var (
		next     atomic.Int64
		fails    atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for range max(1, dialers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var network minecraft.Network = rakNetFrom{playerAddr(i)}
				if t == transportNetherNet {
					network = netherNetFrom(playerAddr(i), api)
				}
				p, err := joinPlayer(context.Background(), network, addr, i)
				if err != nil {
					fails.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				players[i] = p
			}
		})
	}
	wg.Wait()
	var live []*benchPlayer
	for _, p := range players {
		if p != nil {
			live = append(live, p)
		}
	}
	return live, int(fails.Load()), firstErr
}

// clientAPI is the NetherNet players' WebRTC API: ICE on loopback, each
// socket losing a fraction loss of its datagrams each way.
func clientAPI(loss float64) (*webrtc.API, error) {
	se := loopbackSettings()
	if loss > 0 {
		n, err := stdnet.NewNet()
		if err != nil {
			return nil, err
		}
		se.SetNet(lossyNet{Net: n, rate: loss})
	}
	return webrtc.NewAPI(webrtc.WithSettingEngine(se)), nil
}

// closePlayers closes every player's connection and waits at most d for
// their goroutines.
func closePlayers(ps []*benchPlayer, wg *sync.WaitGroup, d time.Duration) {
	for _, p := range ps {
		_ = p.conn.Close()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
