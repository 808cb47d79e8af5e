package session

// Skip records that the handler let p go unhandled because it could not
// read it, for the reason err: an ID it does not know, or a payload that
// does not decode in the layout it expects. A packet the handler cannot
// read is not a reason to end the player's session (the client may be
// newer than the handler's packet library), so the handler skips it and
// the session counts it in Stats.PacketsSkipped and logs it at debug
// level, the first time for each packet ID in a session only, so a client
// cannot flood the log. It is called on the session's goroutine, from a
// Handler's HandlePacket, as packets.Adapter does.
func (s *Session) Skip(p Packet, err error) {
	s.stats.packetsSkipped.Add(1)
	id := p.ID & maxPacketID
	word, bit := id/64, uint64(1)<<(id%64)
	if s.skipped[word]&bit != 0 {
		return
	}
	s.skipped[word] |= bit
	if e := s.Log().Debug(); e.Enabled() {
		e.Err(err).Uint32("id", p.ID).Int("size", len(p.Payload)).Msg("packet skipped")
	}
}

// skippedIDs is a set of packet IDs, one bit each.
type skippedIDs [(maxPacketID + 1) / 64]uint64
