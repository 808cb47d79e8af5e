package session

import (
	"net"
)

// Conn is the transport a Session runs over. raknet.Conn satisfies it. A
// Conn that also has a Promote() method is told, through it, when the
// player has logged in; one with a NetStats() NetStats method backs
// Session.NetStats.
type Conn interface {
	// ReadPacket returns the next 0xfe batch the peer sent. The slice is
	// the session's until the next ReadPacket: the session decrypts it in
	// place.
	ReadPacket() ([]byte, error)
	// Write sends b as one batch, reliably and in order. As io.Writer
	// requires, it must not keep b after returning. It may block while the
	// peer does not take data; the session bounds that wait with
	// Config.WriteTimeout.
	Write(b []byte) (int, error)
	// Close delivers what was written, then closes the connection. It must
	// unblock a pending ReadPacket and a pending Write, and be safe to call
	// while one is in progress.
	Close() error
	// RemoteAddr returns the peer's address.
	RemoteAddr() net.Addr
}

// promoter is a Conn that treats a connection differently once its player
// has logged in. raknet.Conn, for one, gives a connection a much smaller
// share of the listener's memory budget before Promote than after. The
// session calls Promote once, when the login completes, and never for a
// session whose login was refused.
type promoter interface {
	Promote()
}
