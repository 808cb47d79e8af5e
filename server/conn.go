package server

import (
	"time"

	"github.com/basaltmc/basalt/raknet"
)

// ackWait bounds how long a session's Close waits for the client to
// acknowledge what was written before the transport says goodbye.
const ackWait = time.Second

// ackPoll is how often Close checks for those acknowledgements.
const ackPoll = 5 * time.Millisecond

// ackedConn is the session's view of a raknet.Conn. Its Close waits, at most
// ackWait, until the client has acknowledged every message written before
// it closes the connection, as go-raknet does. raknet.Conn.Close sends
// DisconnectionNotification right behind the data, so both arrive together,
// and clients built on go-raknet (gophertunnel) tear the connection down on
// the notification before their game layer has read the last packet: the
// player would see "context canceled" instead of the Disconnect message.
type ackedConn struct {
	*raknet.Conn
}

// Close waits for the client's acknowledgements, then closes the
// connection gracefully.
func (c ackedConn) Close() error {
	if c.Conn.Stats().Buffered > 0 {
		t := time.NewTicker(ackPoll)
		deadline := time.Now().Add(ackWait)
	wait:
		for c.Conn.Stats().Buffered > 0 && time.Now().Before(deadline) {
			select {
			case <-c.Conn.Done():
				break wait
			case <-t.C:
			}
		}
		t.Stop()
	}
	return c.Conn.Close()
}
