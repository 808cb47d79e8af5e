//go:build !unix && !windows

package attack

import "syscall"

// reuseAddr does nothing where SO_REUSEADDR is not available.
func reuseAddr(_, _ string, _ syscall.RawConn) error { return nil }
