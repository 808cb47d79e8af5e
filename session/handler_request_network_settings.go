package session

import (
	"errors"
	"fmt"
)

// handleRequestNetworkSettings answers the client's first packet. An accepted
// protocol gets NetworkSettings, sent uncompressed, after which compression
// is on in both directions; any other gets PlayStatus LoginFailed_ClientOld
// or LoginFailed_ServerOld, uncompressed, and the session closes gracefully.
func handleRequestNetworkSettings(g GateHandler, s *Session, payload []byte) error {
	if s.CompressionEnabled() {
		return errors.New("request network settings: sent twice")
	}
	var pk requestNetworkSettings
	if _, err := pk.Decode(payload); err != nil {
		return err
	}
	if status, ok := g.accepts(pk.ClientProtocol); !ok {
		if e := s.Log().Debug(); e.Enabled() {
			e.Int32("protocol", pk.ClientProtocol).Stringer("status", status).Msg("refused protocol")
		}
		ps := playStatus{Status: status}
		if err := s.WritePacket(IDPlayStatus, ps.Append(nil)); err != nil {
			return fmt.Errorf("refuse protocol %d: %w", pk.ClientProtocol, err)
		}
		return s.Close()
	}
	ns := networkSettings{
		CompressionThreshold: g.threshold(),
		CompressionAlgorithm: compressionAlgorithmFlate,
	}
	if err := s.WritePacket(IDNetworkSettings, ns.Append(nil)); err != nil {
		return fmt.Errorf("network settings: %w", err)
	}
	// Flushes NetworkSettings as it stands, then switches compression on.
	return s.EnableCompression(ns.CompressionThreshold)
}
