package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTick = 100

// procCPU returns the user plus system CPU time process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields are counted from
	// the closing parenthesis, after which state is field 3.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: bad utime or stime", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTick, nil
}

// procRSS returns the resident set size of process pid in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit and returns
// the soft limit in force afterwards.
func raiseNoFile() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return 0, err
		}
	}
	return r.Cur, nil
}

// notifyStats asks for SIGUSR1 on ch.
func notifyStats(ch chan<- os.Signal) { signal.Notify(ch, syscall.SIGUSR1) }

func isStatsSignal(s os.Signal) bool { return s == syscall.SIGUSR1 }

// terminate asks process p to stop.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
