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

// udpCounters are the kernel's UDP counters of the network namespace, from
// /proc/net/snmp: every socket's, the clients' too.
type udpCounters struct {
	InDatagrams, InErrors, RcvbufErrors, MemErrors, OutDatagrams int64
}

// readUDPCounters reads the Udp lines of /proc/net/snmp.
func readUDPCounters() (udpCounters, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return udpCounters{}, err
	}
	var names, values []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Udp: "); ok {
			if names == nil {
				names = strings.Fields(rest)
			} else {
				values = strings.Fields(rest)
			}
		}
	}
	if len(names) == 0 || len(names) != len(values) {
		return udpCounters{}, fmt.Errorf("parse /proc/net/snmp: no Udp counters")
	}
	var c udpCounters
	for i, n := range names {
		v, err := strconv.ParseInt(values[i], 10, 64)
		if err != nil {
			return udpCounters{}, fmt.Errorf("parse /proc/net/snmp %s: %w", n, err)
		}
		switch n {
		case "InDatagrams":
			c.InDatagrams = v
		case "InErrors":
			c.InErrors = v
		case "RcvbufErrors":
			c.RcvbufErrors = v
		case "MemErrors":
			c.MemErrors = v
		case "OutDatagrams":
			c.OutDatagrams = v
		}
	}
	return c, nil
}

// socketDrops returns the drop counter of the IPv4 UDP socket bound to
// 127.0.0.1:port, from /proc/net/udp: the datagrams the kernel discarded
// because that socket's receive buffer was full.
func socketDrops(port uint16) (int64, error) {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return 0, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 13 || f[1] != want {
			continue
		}
		return strconv.ParseInt(f[len(f)-1], 10, 64)
	}
	return 0, fmt.Errorf("no socket 127.0.0.1:%d in /proc/net/udp", port)
}
