package server

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// listenError is a listener that could not be opened, told in the
// operator's terms: the key that names the address, the address once, the
// cause, and what to do about it. Unwrap gives the error of the socket.
type listenError struct {
	key, addr string
	err       error
	// line is the line of the configuration file that set key, 0 for
	// none (see UserConfig.Locate).
	line int
}

// Error says which key's address failed (and its line, when known), why,
// and the fix.
func (e *listenError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.explain())
	}
	return e.explain()
}

// explain is Error without the line.
func (e *listenError) explain() string {
	switch {
	case errors.Is(e.err, syscall.EADDRINUSE):
		return fmt.Sprintf("%s %s: the port is in use by another program (another Basalt or Bedrock server?); stop it, or set %s to a free port", e.key, e.addr, e.key)
	case errors.Is(e.err, syscall.EACCES):
		return fmt.Sprintf("%s %s: permission denied, as ports below 1024 need root or CAP_NET_BIND_SERVICE; set %s to a port of 1024 or above, or grant the binary CAP_NET_BIND_SERVICE", e.key, e.addr, e.key)
	case errors.Is(e.err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("%s %s: this machine has no such address; set %s to one of its own addresses, or leave the host out (\":19132\") to listen on every address", e.key, e.addr, e.key)
	}
	return fmt.Sprintf("%s %s: %v; set %s to an address of this machine with a free port", e.key, e.addr, innermost(e.err), e.key)
}

// netherNetListenError names the key behind a NetherNet listener that
// could not be opened: the signalling's TCP port is gameKey's port, the
// ICE socket is network.nethernet_ice_port's, the certificate is
// network.nethernet_tls_cert's; addr and iceAddr are what they were
// opened on. Anything else is told with the way to serve RakNet alone.
func netherNetListenError(gameKey, addr, iceAddr string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "nethernet: TLS:"):
		return fmt.Errorf("network.nethernet_tls_cert, network.nethernet_tls_key: %w; set them to a matching PEM certificate and key, or both to \"\" for plain HTTP", err)
	case strings.Contains(msg, "nethernet: ICE socket:"):
		return &listenError{key: "network.nethernet_ice_port", addr: iceAddr, err: err}
	case strings.Contains(msg, "nethernet: signalling:"):
		return &listenError{key: gameKey, addr: addr + " (TCP, NetherNet signalling)", err: err}
	}
	return fmt.Errorf("network.nethernet: %w; set network.nethernet = false to serve RakNet alone", err)
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
