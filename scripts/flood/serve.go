package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/basaltmc/basalt/integration/attack"
	"github.com/basaltmc/basalt/raknet"
	"github.com/basaltmc/basalt/server"
)

// serve runs the server under attack in this process until stdin closes:
// a raknet echo listener or a Basalt Bedrock server, on a free loopback
// port it prints on stdout.
func serve(kind string, maxConn int) error {
	var addr string
	var stop func()
	switch kind {
	case "raknet":
		l, err := raknet.ListenConfig{MaxConnections: maxConn, CloseTimeout: 100 * time.Millisecond}.Listen("127.0.0.1:0")
		if err != nil {
			return err
		}
		l.PongData([]byte("MCPE;Basalt flood;924;1.21.90;0;10;1;Basalt;Survival;1;19132;19133;"))
		go func() {
			for {
				c, err := l.AcceptConn()
				if err != nil {
					return
				}
				go attack.Echo(c)
			}
		}()
		addr, stop = l.Addr().String(), func() { _ = l.Close() }
	case "bedrock":
		srv := server.Config{Network: server.NetworkConfig{AddressV4: "127.0.0.1:0"}, RakNet: server.RakNetConfig{MaxConnections: maxConn}}.New()
		if err := srv.Listen(); err != nil {
			return err
		}
		addr, stop = srv.Addrs()[0].String(), func() { _ = srv.Close() }
	default:
		return fmt.Errorf("unknown server %q: want raknet or bedrock", kind)
	}
	fmt.Println(addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

// child is the server process under attack.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

// startChild runs this program again as the server.
func startChild(kind string, maxConn int) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", kind, "-maxconn", strconv.Itoa(maxConn))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("server: %w", err)
	}
	return &child{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}, nil
}

func (c *child) stop() {
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
}

// usage is a process's resident memory and CPU time so far.
type usage struct {
	rss int64 // bytes
	cpu time.Duration
	at  time.Time
}

// sample reads the child's usage from /proc.
func (c *child) sample() usage {
	u := usage{at: time.Now()}
	pid := c.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				u.rss = kb << 10
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name, which is in parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 13 {
				ut, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				// Clock ticks are 100 a second on Linux.
				u.cpu = time.Duration(ut+st) * 10 * time.Millisecond
			}
		}
	}
	return u
}

// cpuShare is the share of one core the process used between a and b.
func cpuShare(a, b usage) float64 {
	if d := b.at.Sub(a.at); d > 0 {
		return float64(b.cpu-a.cpu) / float64(d)
	}
	return 0
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
