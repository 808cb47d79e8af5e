//go:build !linux

package raknet

import (
	"net"
	"net/netip"
	"sync"
)

// batchIO is batched socket I/O, which only Linux has here: elsewhere
// every socket reads and writes one datagram per system call.
type batchIO struct{}

// Batch sizes, unused here.
const (
	batchSize     = 32
	dialBatchSize = 8
)

// newBatchIO returns nil: no batched I/O on this system.
func newBatchIO(*net.UDPConn, int) *batchIO { return nil }

func (*batchIO) read() (int, error)                         { panic("raknet: no batched I/O") }
func (*batchIO) message(int) ([]byte, netip.AddrPort, bool) { panic("raknet: no batched I/O") }
func (*batchIO) full() bool                                 { return true }
func (*batchIO) room() int                                  { return 0 }
func (*batchIO) add([]byte, netip.AddrPort) bool            { return false }
func (*batchIO) flush(*sync.Mutex)                          {}
func (*batchIO) flushNow()                                  {}

// reusePortBalances reports whether SO_REUSEPORT spreads the datagrams of
// one address over the sockets bound to it, as Linux does; here it is not
// relied on, and a listener opens one socket.
const reusePortBalances = false

// listenReusePort is net.ListenPacket: see reusePortBalances.
func listenReusePort(network, address string) (net.PacketConn, error) {
	return net.ListenPacket(network, address)
}
