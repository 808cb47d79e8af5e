package server

import (
	"cmp"
	"fmt"
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/motd"
)

// DefaultStatusInterval is how often a Server asks its StatusProvider for
// the status to advertise, unless Config says otherwise.
const DefaultStatusInterval = time.Second

// StatusProvider supplies the status a Server advertises in its pongs, so
// the MOTD's text, player count and player limit can change while the
// server runs. The server calls ServerStatus from one goroutine of its own,
// never with a lock held: every Config.Status.Interval and soon after each
// join and leave.
//
// current is the status the server would advertise by itself: its
// configured fields (as last changed by UpdateStatus), the number of
// players online and the game ports. What ServerStatus returns is
// advertised, except the GUID and the ports, which the server keeps as its
// listeners need them. Its MaxPlayers becomes the player limit (at least 1),
// and its Players is shown as it is: a proxy in front of several servers,
// say, can show the players of all of them. A status that does not validate
// (see motd.Status.Validate: nothing Encode would have to change or
// shorten) is ignored with a warning and the last good one stays; so does a
// panic in ServerStatus.
type StatusProvider interface {
	ServerStatus(current motd.Status) motd.Status
}

// StatusProviderFunc adapts a function to StatusProvider.
type StatusProviderFunc func(current motd.Status) motd.Status

// ServerStatus returns f(current).
func (f StatusProviderFunc) ServerStatus(current motd.Status) motd.Status { return f(current) }

// UpdateStatus changes the status the server advertises from now on: f is
// given a copy of the configured status (server name, level name, game
// mode, version, player limit and the other fields of motd.Status) to
// change in place. The player count, GUID and ports stay the server's own.
// A MaxPlayers of 1 or more becomes the player limit; players already
// online stay when it drops below their number. If the changed status does
// not validate (see motd.Status.Validate), nothing changes and the error
// says why. It is safe to call at
// any time, before or after Listen.
func (srv *Server) UpdateStatus(f func(st *motd.Status)) error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	st := srv.adv.base
	st.Extra = append([]string(nil), st.Extra...)
	f(&st)
	if st.MaxPlayers < 1 {
		return fmt.Errorf("update status: max players %d is less than 1", st.MaxPlayers)
	}
	st.ServerGUID = srv.adv.base.ServerGUID
	st.Players, st.PortV4, st.PortV6 = 0, 0, 0
	// Checked with the widest numbers the server fills in later, so
	// Encode never has to shorten or change a field of it.
	worst := st
	worst.Players, worst.PortV4, worst.PortV6 = st.MaxPlayers, 65535, 65535
	if err := worst.Validate(); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	srv.adv.base = st
	srv.adv.maxPlayers.Store(int64(st.MaxPlayers))
	srv.updateStatusLocked()
	return nil
}

// playerLimit returns the number of players the server admits now.
func (srv *Server) playerLimit() int { return int(srv.adv.maxPlayers.Load()) }

// publishLocked advertises st, the status the server computed itself: at
// once without a StatusProvider, and otherwise by waking the goroutine that
// asks the provider, which must not be called with srv.mu held. It runs with
// srv.mu held, so updates reach the listeners in order.
func (srv *Server) publishLocked(st motd.Status) {
	if srv.conf.Status.Provider == nil {
		srv.advertiseLocked(st)
		return
	}
	srv.adv.self = st
	if !srv.adv.provided {
		// Until the provider first answers, pongs carry the server's own.
		srv.advertiseLocked(st)
	}
	select {
	case srv.adv.kick <- struct{}{}:
	default:
	}
}

// advertiseLocked encodes st and hands it to every listener. It runs with
// srv.mu held.
func (srv *Server) advertiseLocked(st motd.Status) {
	b, err := st.Encode()
	if err != nil {
		srv.log.Error().Err(err).Msg("encode MOTD")
		return
	}
	for _, l := range srv.listeners() {
		l.PongData(b)
	}
	srv.adv.status.Store(st)
}

// provideStatus asks the StatusProvider for the status to advertise every
// StatusInterval and whenever publishLocked asks, until done is closed.
func (srv *Server) provideStatus(done <-chan struct{}) {
	defer srv.loops.Done()
	t := time.NewTicker(srv.conf.Status.Interval)
	defer t.Stop()
	for {
		srv.refreshStatus()
		select {
		case <-t.C:
		case <-srv.adv.kick:
		case <-done:
			return
		}
	}
}

// refreshStatus advertises what the StatusProvider makes of the server's own
// status.
func (srv *Server) refreshStatus() {
	srv.mu.Lock()
	self := srv.adv.self
	srv.mu.Unlock()
	st, ok := srv.askProvider(self)
	if !ok {
		return
	}
	st.ServerGUID, st.PortV4, st.PortV6 = self.ServerGUID, self.PortV4, self.PortV6
	if err := st.Validate(); err != nil {
		if srv.adv.warned.CAS(false, true) {
			srv.log.Warn().Err(err).Msg("status provider returned a status that does not encode; keeping the last one")
		}
		return
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if st.MaxPlayers >= 1 {
		srv.adv.maxPlayers.Store(int64(st.MaxPlayers))
	}
	if srv.closing {
		return
	}
	srv.adv.provided = true
	srv.advertiseLocked(st)
}

// askProvider calls the StatusProvider, turning a panic into a warning.
func (srv *Server) askProvider(self motd.Status) (st motd.Status, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if srv.adv.warned.CAS(false, true) {
				srv.log.Warn().Msgf("status provider panicked: %v; keeping the last status", r)
			}
			ok = false
		}
	}()
	self.Extra = append([]string(nil), self.Extra...)
	return srv.conf.Status.Provider.ServerStatus(self), true
}

// updateStatusLocked recomputes the MOTD from the player count and the
// game ports and hands it to every listener. It runs with srv.mu held, so
// updates reach the listeners in order.
func (srv *Server) updateStatusLocked() {
	st := srv.adv.base
	st.Players = srv.players
	var p4, p6 uint16
	if srv.ls.v4 != nil {
		p4 = port(srv.ls.v4.Addr())
	}
	if srv.ls.v6 != nil {
		p6 = port(srv.ls.v6.Addr())
	} else {
		p6 = offPortV6(srv.conf.Network.AddressV6)
	}
	// Clients connect to the port of their family. With IPv4 off the
	// IPv4 field carries the IPv6 port, which clients that reconnect to
	// the pong's port read whatever their family. With IPv6 off the IPv6
	// field carries the IPv6 port configured, or the default one, as BDS
	// and PocketMine-MP advertise their server-portv6 whether or not
	// IPv6 is served: never the IPv4 port, which no IPv6 socket holds.
	st.PortV4, st.PortV6 = cmp.Or(p4, p6), p6
	// Behind a balancer or tunnel, the port players reach. Clients that
	// reconnect to the pong's port (gophertunnel, the game) take the
	// IPv4 field whatever their family.
	if pub := srv.conf.Network.PublicAddress; pub.IsValid() {
		st.PortV4 = pub.Port()
		if pub.Addr().Is6() {
			st.PortV6 = pub.Port()
		}
	}
	srv.publishLocked(st)
}

// offPortV6 returns the IPv6 port the MOTD advertises while no IPv6
// listener is open: the port of addressV6 if it names one, else that of
// DefaultAddressV6 (19133).
func offPortV6(addressV6 string) uint16 {
	if ap, err := netip.ParseAddrPort(addressV6); err == nil && ap.Port() != 0 {
		return ap.Port()
	}
	return netip.MustParseAddrPort(DefaultAddressV6).Port()
}

// Status returns the MOTD the server currently advertises. It is safe to
// call at any time and never blocks.
func (srv *Server) Status() motd.Status {
	return srv.adv.status.Load()
}
