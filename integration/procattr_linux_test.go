package integration

import "syscall"

// childProcAttr makes a child process the tests start get sig when the
// test binary dies (a timeout's panic, a kill), so no server or nginx
// outlives it.
func childProcAttr(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: sig}
}
