//go:build !linux

package integration

import "syscall"

// childProcAttr is nil where there is no parent-death signal: a child
// outlives a test binary that dies without its cleanups.
func childProcAttr(syscall.Signal) *syscall.SysProcAttr { return nil }
