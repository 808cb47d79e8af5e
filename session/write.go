package session

import (
	"fmt"
	"net"
	"time"
)

// lockWrite takes the write side's lock.
func (s *Session) lockWrite() { s.writeMu <- struct{}{} }

// unlockWrite releases the write side's lock.
func (s *Session) unlockWrite() { <-s.writeMu }

// WritePacket buffers a packet with the given id (0 to 0x3ff) and payload for
// the next batch, which is sent within FlushInterval or by Flush. The
// payload is copied, so the caller may reuse it. It sends the pending batch
// first if it is full, waiting on the transport at most about WriteTimeout.
// It returns an error wrapping net.ErrClosed once the session has been
// asked to end.
func (s *Session) WritePacket(id uint32, payload []byte) error {
	p := Packet{ID: id, Payload: payload}
	if err := p.validate(); err != nil {
		return fmt.Errorf("write packet: %w", err)
	}
	s.lockWrite()
	defer s.unlockWrite()
	if s.writeClosed || s.isClosing() {
		return fmt.Errorf("write packet: %w", net.ErrClosed)
	}
	return s.addLocked(p)
}

// addLocked buffers p, sending the pending batch first if it is full.
func (s *Session) addLocked(p Packet) error {
	full := s.enc.count == maxPacketsPerBatch ||
		s.enc.count > 0 && len(s.enc.pending)+len(p.Payload) > maxPendingSize
	if full {
		if err := s.flushLocked(); err != nil {
			return err
		}
	}
	if s.enc.count == 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	s.enc.add(p)
	return nil
}

// Flush sends the buffered packets now, as one batch, waiting on the
// transport at most about WriteTimeout. It returns an error wrapping
// net.ErrClosed once the session has been asked to end.
func (s *Session) Flush() error {
	s.lockWrite()
	defer s.unlockWrite()
	if s.writeClosed || s.isClosing() {
		return fmt.Errorf("flush: %w", net.ErrClosed)
	}
	return s.flushLocked()
}

// flushLocked encodes and writes the pending batch, if any.
func (s *Session) flushLocked() error {
	if s.enc.count == 0 {
		return nil
	}
	count := s.enc.count
	b, err := s.enc.encode()
	if err == nil {
		err = s.writeLocked(b)
		if err == nil {
			s.stats.batchesOut.Add(1)
			s.stats.packetsOut.Add(uint64(count))
			s.stats.bytesOut.Add(uint64(len(b)))
		}
	}
	s.enc.release()
	return err
}

// writeLocked writes batch b to the Conn with the watchdog armed: a Write
// that outlasts writeTimeout ends the session and has the Conn closed,
// which unblocks it.
func (s *Session) writeLocked(b []byte) error {
	s.watchdogs.Add(1)
	if s.watchdog == nil {
		s.watchdog = time.AfterFunc(s.writeTimeout, s.writeStuck)
	} else {
		s.watchdog.Reset(s.writeTimeout)
	}
	_, err := s.conn.Write(b)
	if s.watchdog.Stop() {
		s.watchdogs.Done() // stopped before it ran: it never will
	}
	if err != nil {
		return fmt.Errorf("write batch: %w", err)
	}
	return nil
}

// writeStuck is the watchdog's function: a Write has waited writeTimeout.
// The session ends and the Conn is closed from here, since the goroutine
// that would do it may be the one stuck.
func (s *Session) writeStuck() {
	defer s.watchdogs.Done()
	s.requestClose(fmt.Errorf("%w after %v", ErrWriteTimeout, s.writeTimeout), nil)
	s.closeConn()
}

// enableCompression flushes whatever is buffered as it stands, then switches
// outgoing batches to the post-NetworkSettings format: every batch carries
// a compression id, and those of threshold bytes or more are compressed
// with DEFLATE. Incoming batches switch with the phase.
func (s *Session) enableCompression(threshold uint16) error {
	s.lockWrite()
	defer s.unlockWrite()
	if err := s.flushLocked(); err != nil {
		return err
	}
	s.enc.compressed = true
	s.enc.threshold = int(threshold)
	return nil
}

// enableEncryption flushes whatever is buffered (the
// ServerToClientHandshake) as it stands, then encrypts every batch sent
// after it with key. The caller switches incoming batches.
func (s *Session) enableEncryption(key [32]byte) error {
	s.lockWrite()
	defer s.unlockWrite()
	if err := s.flushLocked(); err != nil {
		return err
	}
	s.enc.crypt = newCrypt(key)
	return nil
}
