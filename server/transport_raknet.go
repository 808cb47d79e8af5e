package server

import (
	"errors"
	"net"
	"strconv"
	"syscall"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
)

// listenConfig returns the configuration of every listener c asks for.
func listenConfig(c Config) raknet.ListenConfig {
	lc := raknet.ListenConfig{
		ListenPacket:        c.listenPacket,
		Log:                 c.Log,
		MaxMTU:              c.RakNet.MaxMTU,
		MaxConnections:      c.RakNet.MaxConnections,
		MaxConnectionsPerIP: c.RakNet.MaxConnectionsPerIP,
		MemoryBudget:        c.RakNet.MemoryBudget,
		Sockets:             c.RakNet.Sockets,
		// Sessions promote a connection once its player logged in.
		PreLoginShare:    true,
		ProtocolVersions: c.RakNet.ProtocolVersions,
		Timeout:          c.RakNet.Timeout,
		GUID:             c.GUID,
		CookieSecret:     c.Network.CookieSecret,
		ProxyProtocol:    c.Network.ProxyProtocol,
		TrustedProxies:   c.Network.TrustedProxies,
	}
	if c.noOfflineLimits {
		lc.OfflineRate, lc.OfflineBytes = -1, -1
	}
	return lc
}

// listenLAN opens a LAN discovery listener for each family whose game port
// is not the discovery port. It runs with srv.mu held.
func (srv *Server) listenLAN(lc raknet.ListenConfig) {
	for _, g := range []struct {
		game *raknet.Listener
		addr string
	}{{srv.ls.v4, srv.conf.Network.LANAddressV4}, {srv.ls.v6, srv.conf.Network.LANAddressV6}} {
		if g.game == nil || port(g.game.Addr()) == portOf(g.addr) {
			continue // no game listener, or it answers discovery itself
		}
		addr := g.addr
		l, err := lc.Listen(addr)
		if err != nil {
			srv.log.Warn().Err(err).Str("addr", addr).
				Msg("LAN discovery listener not opened; the server will not be listed on the LAN from this port")
			continue
		}
		srv.ls.lan = append(srv.ls.lan, l)
	}
}

// accept serves every connection l accepts, until l is closed.
func (srv *Server) accept(l *raknet.Listener) {
	defer srv.loops.Done()
	for {
		c, err := l.AcceptConn()
		if err != nil {
			return // AcceptConn fails only once the listener is closed
		}
		srv.serve(c)
	}
}

// serve starts a session over c and registers it.
func (srv *Server) serve(c *raknet.Conn) {
	srv.serveConn(netConn{c})
}

// Addrs returns the addresses of the game listeners, IPv4 first; nil
// before Listen.
func (srv *Server) Addrs() []net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return addrs(srv.game())
}

// LANAddrs returns the addresses of the LAN discovery listeners Listen
// opened; nil if none.
func (srv *Server) LANAddrs() []net.Addr {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return addrs(srv.ls.lan)
}

func addrs(ls []*raknet.Listener) []net.Addr {
	var out []net.Addr
	for _, l := range ls {
		out = append(out, l.Addr())
	}
	return out
}

func addrStrings(ls []*raknet.Listener) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Addr().String())
	}
	return out
}

// noIPv6 reports whether a listen error says the host has no IPv6.
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// withHost returns addr with host filled in if it has none.
func withHost(addr, host string) string {
	h, p, err := net.SplitHostPort(addr)
	if err != nil || h != "" {
		return addr
	}
	return net.JoinHostPort(host, p)
}

// portOf returns the port of a "host:port" address, 0 if it has none.
func portOf(addr string) uint16 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(p, 10, 16)
	return uint16(n)
}

// netConn is the session.Conn of a RakNet connection: raknet.Conn with
// NetStats, which raknet cannot provide since it does not know session.
// Promote, through which the session lifts the connection's pre-login
// share of the memory budget once its player logged in, comes with the
// embedded Conn. Its methods are safe for concurrent use.
type netConn struct{ *raknet.Conn }

var (
	_ session.Conn                             = netConn{}
	_ interface{ Promote() }                   = netConn{}
	_ interface{ NetStats() session.NetStats } = netConn{}
)

// NetStats returns the connection's RakNet figures in the session's terms.
// It takes the connection's lock once, as raknet.Conn.Stats does.
func (c netConn) NetStats() session.NetStats {
	return netStats(c.Stats())
}

// netStats converts a RakNet connection's Stats.
func netStats(st raknet.Stats) session.NetStats {
	return session.NetStats{
		RTT: st.RTT, RTTVar: st.RTTVar,
		PacketLossIn:  st.LossIn,
		PacketLossOut: st.Loss,
		Resends:       st.Resends,
		Window:        st.Window, InFlight: st.InFlight, Buffered: st.Buffered,
		BytesIn: st.BytesReceived, BytesOut: st.BytesSent,
		DatagramsIn: st.DatagramsReceived, DatagramsOut: st.DatagramsSent,
	}
}
