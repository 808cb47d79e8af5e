//go:build unix

package attack

import (
	"errors"
	"syscall"
)

// reuseAddr sets SO_REUSEADDR on a socket before it is bound.
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	})
	return errors.Join(err, serr)
}
