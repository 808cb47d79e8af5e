package session

import (
	"sync/atomic"
	"time"
)

// Stats are a session's counters of the batches and packets it has read and
// written. Each is updated on its own, so a Stats is not one snapshot.
type Stats struct {
	// BatchesIn counts the batches read that decoded; BatchesOut the
	// batches written to the Conn.
	BatchesIn, BatchesOut uint64
	// PacketsIn counts the packets of the batches read; PacketsOut the
	// packets of the batches written.
	PacketsIn, PacketsOut uint64
	// BytesIn counts the bytes of the batches read once decrypted and
	// decompressed: what the client made the server handle.
	BytesIn uint64
	// BytesOut counts the bytes of the batches written to the Conn, as
	// written: compressed and encrypted.
	BytesOut uint64
	// WireBytesIn counts the bytes of every batch read from the Conn, as
	// read, those that did not decode included.
	WireBytesIn uint64
	// PacketsSkipped counts the packets of PacketsIn that the handler let
	// go unhandled because it could not read them (Session.Skip): an ID
	// it does not know, a layout it cannot decode.
	PacketsSkipped uint64
}

// counters are a session's Stats as they are kept.
type counters struct {
	batchesIn, batchesOut, packetsIn, packetsOut atomic.Uint64
	bytesIn, bytesOut, wireBytesIn               atomic.Uint64
	packetsSkipped                               atomic.Uint64
}

// Stats returns the session's counters. It is safe for concurrent use and
// never blocks.
func (s *Session) Stats() Stats {
	c := &s.stats
	return Stats{
		BatchesIn: c.batchesIn.Load(), BatchesOut: c.batchesOut.Load(),
		PacketsIn: c.packetsIn.Load(), PacketsOut: c.packetsOut.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(),
		WireBytesIn: c.wireBytesIn.Load(), PacketsSkipped: c.packetsSkipped.Load(),
	}
}

// NetStats are the transport's figures for a session's connection, for
// ping displays and diagnostics. A field the transport does not measure is
// zero.
type NetStats struct {
	// RTT is the smoothed round-trip time, and RTTVar its variation.
	RTT, RTTVar time.Duration
	// PacketLossIn is the share of the peer's datagrams that were lost on
	// the way in, 0 to 1.
	PacketLossIn float64
	// PacketLossOut is the share of datagrams sent that were lost, 0 to 1.
	PacketLossOut float64
	// Resends counts the frames sent again.
	Resends uint64
	// Window is the congestion window in bytes, InFlight the bytes sent and
	// not yet acknowledged, Buffered the bytes written and not yet
	// acknowledged.
	Window, InFlight, Buffered int
	// BytesIn and BytesOut count the transport's bytes, headers included.
	BytesIn, BytesOut uint64
	// DatagramsIn and DatagramsOut count the transport's datagrams.
	DatagramsIn, DatagramsOut uint64
}

// netStatser is a Conn that reports NetStats. The server wraps raknet.Conn
// into one (raknet does not know session).
type netStatser interface {
	NetStats() NetStats
}

// NetStats returns the transport's figures for the session's connection,
// and false if the Conn does not report them (it has no NetStats() NetStats
// method). It is safe for concurrent use; it costs what the Conn's method
// costs.
func (s *Session) NetStats() (NetStats, bool) {
	if n, ok := s.conn.(netStatser); ok {
		return n.NetStats(), true
	}
	return NetStats{}, false
}
