package raknet

import (
	"net"
	"time"
)

// finish closes the connection at once with err as the reason reads see.
func (c *Conn) finish(err error) {
	if c.state == stateClosed {
		return
	}
	c.state = stateClosed
	c.closeErr = err
	if c.timer != nil {
		c.timer.Stop()
	}
	close(c.closed)
	c.wakeReaders()
	wake(&c.writeWait)
	c.tell |= tellClosed
	// What the connection held is no one's now: its share of the
	// listener's budget goes back.
	c.layer.Close()
	if c.cfg.account != nil {
		c.cfg.account.a.Close()
	}
}

// abort closes the connection at once, telling the peer with one
// unreliable DisconnectionNotification when tell is set. c.mu is held.
func (c *Conn) abort(err error, tell bool) {
	if c.state == stateClosed {
		return
	}
	if tell {
		// What may leave leaves, ACKs included, then the goodbye, which
		// does not wait behind data the peer never acknowledged.
		now := time.Now()
		c.flushFinal(now)
		bp := datagramBuffers.Get().(*[]byte)
		*bp = c.layer.AppendFinal((*bp)[:0], disconnect(false).b)
		c.queue(bp, finalCopies, now)
	}
	c.finish(err)
}

// Close closes the connection gracefully: it sends DisconnectionNotification
// after everything written so far, waits until the peer acknowledged it all
// (at most the close timeout), then releases the connection. Blocked reads
// and writes return at once. Close is safe to call more than once and
// concurrently; every call returns once the connection is released.
func (c *Conn) Close() error {
	c.mu.Lock()
	now := time.Now()
	switch c.state {
	case stateHandshake:
		c.abort(net.ErrClosed, true)
	case stateConnected:
		c.state = stateClosing
		c.closeBy = now.Add(c.cfg.closeTimeout)
		// DisconnectionNotification goes out once the peer acknowledged
		// what was written: some peers (go-raknet, so gophertunnel) drop
		// packets they have not handed to their reader when it arrives.
		if c.layer.Buffered() == 0 {
			c.notifyPeer(now)
		}
		c.wakeReaders()
		wake(&c.writeWait)
	}
	c.end(now)
	<-c.released
	return nil
}

// closeNow closes the connection without waiting, telling the peer once.
func (c *Conn) closeNow(err error, tell bool) {
	c.mu.Lock()
	c.abort(err, tell)
	c.unlock()
}
