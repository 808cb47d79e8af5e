package server

import (
	"time"

	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/session"
	"github.com/rs/zerolog"
)

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

// logNetStats adds a session's network figures to a log event.
func logNetStats(e *zerolog.Event, n session.NetStats) *zerolog.Event {
	return e.Stringer("rtt", n.RTT.Round(time.Microsecond)).Stringer("rtt_var", n.RTTVar.Round(time.Microsecond)).
		Float64("loss_in", n.PacketLossIn).Float64("loss_out", n.PacketLossOut).
		Uint64("resends", n.Resends).Int("window", n.Window).
		Uint64("bytes_in", n.BytesIn).Uint64("bytes_out", n.BytesOut).
		Uint64("datagrams_in", n.DatagramsIn).Uint64("datagrams_out", n.DatagramsOut)
}
