package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server/nethernet"
)

// listenNetherNet opens the NetherNet listener beside the game listeners.
// It runs with srv.mu held, after the game listeners are open.
func (srv *Server) listenNetherNet() error {
	c := srv.conf
	game := srv.game()
	if len(game) == 0 {
		return nil
	}
	udp := game[0].Addr().(*net.UDPAddr)
	addr := c.NetherNet.Address
	if addr == "" {
		addr = udp.String()
	}
	nc := nethernet.Config{
		Addr: addr,
		// The instance's own address when it has one: behind a balancer
		// the public address is the balancer's, which pongs advertise.
		PublicAddress: cmp.Or(c.NetherNet.AdvertiseAddress, c.Network.PublicAddress),
		TLSCert:       c.NetherNet.TLSCert,
		TLSKey:        c.NetherNet.TLSKey,
		IdentityKey:   c.NetherNet.IdentityKey,
		// The game always proves a key, which its Login must then
		// carry. Offline tools prove none: in online mode they are
		// refused, as their Logins could be replayed over NetherNet,
		// which has no Bedrock encryption to stop it.
		AllowAnonymous: c.AuthenticationDisabled,
		Status:         srv.netherNetStatus,
		Log:            c.Log,
		NetworkID:      uint64(c.GUID),
	}
	if srv.verifier != nil {
		// Online mode: an offer's token is checked before any WebRTC
		// state, against the keys Logins are checked with.
		v := srv.verifier
		nc.VerifyToken = func(ctx context.Context, token string) error {
			_, err := v.VerifyToken(ctx, token)
			return err
		}
	}
	if len(c.Network.TrustedProxies) > 0 {
		// The signalling takes PROXY headers from the proxies the
		// RakNet listener takes them from.
		nc.ProxyProtocol = c.Network.ProxyProtocol
		proxies := c.Network.TrustedProxies
		nc.TrustedProxy = func(a netip.Addr) bool {
			for _, p := range proxies {
				if p.Contains(a) {
					return true
				}
			}
			return false
		}
	}
	if c.Network.LANDiscovery {
		nc.LANAddr = cmp.Or(c.NetherNet.LANAddress, lanAddress(udp.IP))
	}
	switch p := c.NetherNet.ICEPort; {
	case p > 0:
		nc.ICEAddr = net.JoinHostPort(udp.IP.String(), strconv.Itoa(p))
	case p < 0:
		nc.ICEAddr = net.JoinHostPort(udp.IP.String(), "0")
	default:
		// The game socket, shared: srv.demux was hooked into the first
		// game listener (withICE).
		srv.ls.demux.Bind(game[0].Addr(), game[0].WriteForeign)
		nc.ICEConn = srv.ls.demux
	}
	l, err := nc.Listen()
	if err != nil {
		if c.NetherNet.Address == "" && portOf(srv.gameAddress()) == 0 && errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: %w", errTwinTaken, err)
		}
		key := "network.address_v4"
		if srv.ls.v4 == nil {
			key = "network.address_v6"
		}
		return c.locate(netherNetListenError(key, addr, nc.ICEAddr, err))
	}
	srv.ls.nn = l
	return nil
}

// lanAddress is where NetherNet LAN discovery listens by default: port
// 7551 on the address the game binds, or the wildcard of its family when
// the game binds a wildcard.
func lanAddress(game net.IP) string {
	host := game.String()
	switch {
	case game.To4() != nil && game.IsUnspecified():
		host = "0.0.0.0"
	case game.IsUnspecified():
		host = "::"
	}
	return net.JoinHostPort(host, strconv.Itoa(nethernet.LANPort))
}

// errTwinTaken reports that the TCP port of the game port's number, which
// the system picked, is taken.
var errTwinTaken = errors.New("the game port's TCP twin is taken")

// gameAddress returns the configured address of the game listener
// NetherNet follows: IPv4's, or IPv6's without it.
func (srv *Server) gameAddress() string {
	if srv.conf.Network.AddressV4 != "" {
		return srv.conf.Network.AddressV4
	}
	return srv.conf.Network.AddressV6
}

// withICE returns lc handing the STUN and DTLS datagrams it reads to
// NetherNet's ICE, when NetherNet shares the game socket
// (NetherNetICEPort 0): for the IPv4 game listener, or the IPv6 one when
// there is no IPv4 one.
func (srv *Server) withICE(lc raknet.ListenConfig, v6 bool) raknet.ListenConfig {
	c := srv.conf
	if !c.NetherNet.Enabled || c.NetherNet.ICEPort != 0 || v6 && c.Network.AddressV4 != "" {
		return lc
	}
	srv.ls.demux = nethernet.NewDemux(0)
	lc.Foreign = srv.ls.demux.Deliver
	return lc
}

// netherNetStatus is what GET /v1/join reports: the MOTD's fields, live.
func (srv *Server) netherNetStatus() nethernet.Status {
	st := srv.Status()
	return nethernet.Status{
		Name:       st.ServerName,
		Protocol:   st.Protocol,
		Version:    st.Version,
		Level:      st.LevelName,
		Players:    st.Players,
		MaxPlayers: st.MaxPlayers,
		GameType:   st.GameMode,
	}
}

// acceptNetherNet serves every connection l accepts, until l is closed.
func (srv *Server) acceptNetherNet(l *nethernet.Listener) {
	defer srv.loops.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return // Accept fails only once the listener is closed
		}
		srv.serveConn(c)
	}
}

// NetherNetAddr returns the TCP address of NetherNet's signalling, nil
// when NetherNet is off or before Listen.
func (srv *Server) NetherNetAddr() net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.ls.nn == nil {
		return nil
	}
	return srv.ls.nn.Addr()
}

// NetherNetLANAddr returns the address NetherNet LAN discovery is
// answered on, nil without it.
func (srv *Server) NetherNetLANAddr() net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.ls.nn == nil {
		return nil
	}
	return srv.ls.nn.LANAddr()
}

// NetherNetStats returns the NetherNet listener's counters, and false when
// NetherNet is off.
func (srv *Server) NetherNetStats() (nethernet.Stats, bool) {
	srv.mu.Lock()
	l := srv.ls.nn
	srv.mu.Unlock()
	if l == nil {
		return nethernet.Stats{}, false
	}
	return l.Stats(), true
}
