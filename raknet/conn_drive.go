package raknet

import (
	"errors"
	"net"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/reliability"
)

// flush builds every datagram the layer allows now into c.out.
func (c *Conn) flush(now time.Time) { c.flushCopies(now, 1) }

// flushFinal builds every datagram the layer allows now, ACKs held back
// included, to be written finalCopies times.
func (c *Conn) flushFinal(now time.Time) {
	c.layer.AckNow()
	c.flushCopies(now, finalCopies)
}

// flushCopies builds every datagram the layer allows now into c.out, each
// to be written copies times.
func (c *Conn) flushCopies(now time.Time, copies int) {
	for {
		bp := datagramBuffers.Get().(*[]byte)
		d := c.layer.AppendDatagram((*bp)[:0], now)
		if d == nil {
			datagramBuffers.Put(bp)
			return
		}
		*bp = d
		c.queue(bp, copies, now)
	}
}

// queue adds datagram *bp to c.out, to be written copies times, unless
// the anti-amplification budget of a handshake forbids it.
func (c *Conn) queue(bp *[]byte, copies int, now time.Time) {
	if c.amp != nil && !c.amp.allow(len(*bp)*copies) {
		// Over the budget: the datagram is lost to the layer, which
		// resends it once the peer has sent more.
		datagramBuffers.Put(bp)
		c.ep.n.amplification.Add(1)
		return
	}
	if c.out == nil {
		c.out = outboxes.Get().(*outbox)
	}
	c.out.add(bp, copies)
	c.lastSent = now
}

// timerSlack is how much later than the timer the earliest deadline may
// have moved and the timer still be left as it is, to fire early and
// re-arm: deadlines move a little on almost every pass (an ACK's, the
// oldest datagram's RTO), and a reset per pass costs more than the rare
// early wake-up. One that moved further is reset, so that a connection
// does not wake for a deadline long gone, such as the RTO of a reply the
// peer acknowledged or the ACK that left with the reply.
const timerSlack = 10 * time.Millisecond

// arm sets the timer to the earliest deadline. A timer that would fire
// later than needed is reset, and so is one that would fire more than
// timerSlack early; one that fires early re-arms itself.
func (c *Conn) arm(now time.Time) {
	if c.state == stateClosed {
		return
	}
	next := c.layer.NextDeadline(now)
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	switch c.state {
	case stateHandshake:
		earliest(c.handshakeDeadline())
	case stateConnected:
		earliest(c.lastRecv.Add(c.cfg.timeout))
		earliest(c.lastSent.Add(c.cfg.pingInterval))
	case stateClosing:
		earliest(c.closeBy)
	}
	if !c.timerAt.IsZero() && !next.Before(c.timerAt) && next.Sub(c.timerAt) < timerSlack {
		return
	}
	c.timerAt = next
	c.timer.Reset(max(next.Sub(now), 0))
}

// end ends a pass over the connection, which began by taking c.mu: unless
// the pass closed the connection, it builds every datagram the layer
// allows now and arms the timer for the earliest deadline; then it
// releases c.mu (see unlock). Every pass that may have changed what is
// due ends here.
func (c *Conn) end(now time.Time) {
	if c.state != stateClosed {
		c.flush(now)
		c.arm(now)
	}
	c.unlock()
}

// onTimer runs when the earliest deadline may have passed.
func (c *Conn) onTimer() {
	c.mu.Lock()
	now := time.Now()
	defer func() { c.end(now) }()
	if c.state == stateClosed {
		return
	}
	c.wakeups.Add(1)
	c.timerAt = time.Time{}
	switch c.state {
	case stateHandshake:
		if !now.Before(c.handshakeDeadline()) {
			c.finish(closedBy(ErrPeerTimeout))
		}
	case stateConnected:
		if !now.Before(c.lastRecv.Add(c.cfg.timeout)) {
			c.finish(closedBy(ErrPeerTimeout))
			return
		}
		if !now.Before(c.lastSent.Add(c.cfg.pingInterval)) {
			c.lastSent = now
			c.sendControl(now, c.ctl.ping(now))
		}
	case stateClosing:
		if !now.Before(c.closeBy) {
			// The peer never acknowledged everything. A goodbye queued
			// behind that data may never have left (a window shrunk by
			// loss holds it): tell the peer at once, unreliably, before
			// going.
			c.abort(net.ErrClosed, true)
		}
	}
}

// handshakeDeadline is when an unfinished handshake ends.
func (c *Conn) handshakeDeadline() time.Time {
	if c.cfg.handshakeTimeout > 0 {
		return c.ctl.created.Add(c.cfg.handshakeTimeout)
	}
	return c.ctl.created.Add(c.cfg.timeout)
}

// handle processes one datagram from the peer.
func (c *Conn) handle(b []byte, now time.Time) {
	c.mu.Lock()
	defer c.end(now)
	if c.state == stateClosed {
		return
	}
	c.lastRecv = now
	if c.amp != nil {
		c.amp.in += len(b)
	}
	before := c.layer.Buffered()
	if err := c.layer.HandleDatagram(now, b); err != nil {
		if errors.Is(err, reliability.ErrHeldFull) || errors.Is(err, reliability.ErrBudget) {
			// Flow control: nobody reads, or the listener's memory is
			// spoken for, so data is refused without being acknowledged;
			// the layer asks for it again once there is room.
			c.deferred++
		} else {
			c.drop()
			if c.errLog < 3 {
				c.errLog++
				c.cfg.log.Debug().Err(err).Msg("drop datagram")
			}
		}
	}
	c.receive(now)
	if c.state == stateClosed {
		return
	}
	if c.layer.Buffered() < before {
		wake(&c.writeWait)
	}
	if c.state == stateClosing && c.layer.Buffered() == 0 {
		if !c.notified {
			// Everything written before Close is acknowledged: only now
			// tell the peer, so it has delivered all of it first.
			c.notifyPeer(now)
		} else {
			// Nothing resends what leaves now: ACKs still held back go
			// with the final copies.
			c.flushFinal(now)
			c.finish(net.ErrClosed)
		}
	}
}

// notifyPeer queues DisconnectionNotification, reliable and ordered behind
// everything written before it.
func (c *Conn) notifyPeer(now time.Time) {
	c.notified = true
	c.sendControl(now, disconnect(true))
}

// receive takes, in order, every message the layer delivered in this pass
// (the datagram handled, or the room a Read made), once the datagram that
// carried them is in the ACK set: the control protocol answers its
// messages at now, and the application's are queued for Read. The layer
// gets back at once the room of each message not kept. c.mu is held.
func (c *Conn) receive(now time.Time) {
	for c.state != stateClosed {
		msg, owned, ok := c.layer.Next()
		if !ok {
			break
		}
		if !c.take(msg, owned, now) {
			c.layer.Release(len(msg))
		}
	}
	if c.ctl.latency > 0 {
		c.latency.Store(int64(c.ctl.latency))
	}
}

// take runs one delivered message through the control protocol at now
// and reports whether it is kept for Read (it then counts against the
// layer's delivery budget until ReadPacket takes it). A message the layer
// hands over as owned (reassembled, or one that waited in an ordering
// queue) is queued as it is; one that points into the datagram is copied,
// once: that copy is what ReadPacket returns.
func (c *Conn) take(msg []byte, owned bool, now time.Time) bool {
	ev, replies := c.ctl.handle(msg, now)
	for _, r := range replies {
		c.sendControl(now, r)
	}
	// Send copied them: the handshake's larger replies are not kept alive
	// by the control protocol until its next message.
	clear(replies)
	switch ev {
	case evMalformed:
		c.drop()
	case evEstablished:
		if c.ctl.dial {
			c.lastSent = now
		}
		c.establish()
	case evPeerClosed:
		// Acknowledge the datagram that carried it in this pass, so the
		// peer's Close returns without waiting for a resend.
		c.flushFinal(now)
		c.lingering = true
		c.finish(closedBy(ErrPeerClosed))
	case evData:
		if c.state == stateClosing {
			return false
		}
		if !c.ctl.established() {
			// No game data is held for a connection that has not
			// completed its handshake: it is not yet anyone's.
			c.drop()
			return false
		}
		if !owned {
			msg = c.copyMessage(msg)
		}
		c.readQ = append(c.readQ, msg)
		c.wakeReaders()
		return true
	}
	return false
}

// sendControl queues a control message; Send copies it.
func (c *Conn) sendControl(now time.Time, r ctlReply) {
	if _, err := c.layer.Send(r.b, r.rel, 0); err != nil && c.errLog < 3 {
		// Only a full send buffer refuses one; the peer is not reading.
		c.errLog++
		c.cfg.log.Debug().Err(err).Msg("queue control message")
	}
}

// establish marks the handshake complete.
func (c *Conn) establish() {
	if c.state != stateHandshake {
		return
	}
	c.state = stateConnected
	c.amp = nil
	close(c.established)
	c.tell |= tellEstablished
}
