package session

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// handleRequestNetworkSettings answers the client's first packet. An accepted
// protocol gets NetworkSettings, sent uncompressed, after which compression
// is on in both directions; any other gets PlayStatus LoginFailedClient or
// LoginFailedServer, uncompressed, and the session ends.
func handleRequestNetworkSettings(s *Session, payload []byte) error {
	if s.phase != phaseNetworkSettings {
		return errors.New("request network settings: sent twice")
	}
	var pk requestNetworkSettings
	if _, err := pk.Decode(payload); err != nil {
		return err
	}
	s.protocol.Store(pk.ClientProtocol)
	if err := s.checkProtocol(pk.ClientProtocol); err != nil {
		return err
	}
	ns := networkSettings{
		CompressionThreshold: s.threshold,
		CompressionAlgorithm: compressionAlgorithmFlate,
	}
	if err := s.WritePacket(IDNetworkSettings, ns.Append(nil)); err != nil {
		return fmt.Errorf("network settings: %w", err)
	}
	// Flushes NetworkSettings as it stands, then switches compression on;
	// the next batch read is expected compressed.
	if err := s.enableCompression(ns.CompressionThreshold); err != nil {
		return fmt.Errorf("network settings: %w", err)
	}
	s.phase = phaseLogin
	return nil
}

// checkProtocol refuses a client protocol the session does not accept: the
// session ends after a PlayStatus saying which side is outdated, and the
// error says so too.
func (s *Session) checkProtocol(protocol int32) error {
	status, ok := s.accepts(protocol)
	if ok {
		return nil
	}
	err := fmt.Errorf("refused client protocol %d: %v", protocol, status)
	if e := s.Log().Info(); e.Enabled() {
		if ok, suppressed := protocolRefusals.allow(time.Now()); ok {
			if suppressed > 0 {
				e.Uint64("suppressed", suppressed)
			}
			e.Int32("protocol", protocol).Stringer("status", status).Ints32("accepted", s.accepted).
				Msg("refused client protocol")
		} else {
			e.Discard()
		}
	}
	ps := playStatus{Status: status}
	s.requestClose(err, &Packet{ID: IDPlayStatus, Payload: ps.Append(nil)})
	return err
}

// accepts reports whether the client protocol is let through and, if not,
// the PlayStatus that refuses it: LoginFailedClient for a client older than
// the newest accepted protocol, LoginFailedServer for a newer one.
func (s *Session) accepts(protocol int32) (PlayStatus, bool) {
	switch {
	case slices.Contains(s.accepted, protocol):
		return PlayStatusLoginSuccess, true
	case protocol < slices.Max(s.accepted):
		return PlayStatusLoginFailedClient, false
	default:
		return PlayStatusLoginFailedServer, false
	}
}
