package server

import (
	"errors"
	"fmt"
	"syscall"
)

// listenError is a listener that could not be opened, told in the
// operator's terms: the key that names the address, the address once, the
// cause, and what to do about it. Unwrap gives the error of the socket.
type listenError struct {
	key, addr string
	err       error
}

// Error says which key's address failed, why, and the fix.
func (e *listenError) Error() string {
	switch {
	case errors.Is(e.err, syscall.EADDRINUSE):
		return fmt.Sprintf("%s %s: the port is in use by another program (another Basalt or Bedrock server?); stop it, or set %s to a free port", e.key, e.addr, e.key)
	case errors.Is(e.err, syscall.EACCES):
		return fmt.Sprintf("%s %s: permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE, so use a port of 1024 or above", e.key, e.addr)
	case errors.Is(e.err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("%s %s: this machine has no such address; use one of its own, or leave the host out (\":19132\") to listen on every address", e.key, e.addr)
	}
	return fmt.Sprintf("%s %s: %v", e.key, e.addr, innermost(e.err))
}

// Unwrap returns the error of the socket.
func (e *listenError) Unwrap() error { return e.err }

// innermost returns the error at the bottom of err's chain of single
// wrappings: "bind: address already in use" rather than the same address
// restated by every layer above.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		if _, ok := next.(syscall.Errno); ok {
			return err // "bind: …" reads better than the bare errno
		}
		err = next
	}
}
