package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// childWait bounds every exchange with a child server.
const childWait = 5 * time.Second

// child is a bench server running as a child process, so that its CPU
// time and memory can be read from /proc apart from the client's.
type child struct {
	im    impl
	mode  mode
	cmd   *exec.Cmd
	pid   int
	addr  string
	in    io.WriteCloser
	lines chan string
	exit  chan struct{} // closed when the process has been reaped

	stopOnce sync.Once
}

// children are every child started and not yet stopped, so that an
// interrupted run leaves none behind.
var children struct {
	sync.Mutex
	m map[*child]struct{}
}

// startChild runs `bench server -control` for im and m on 127.0.0.1:0.
func startChild(im impl, m mode) (*child, error) {
	c, err := startChildArgs("server", "-addr", "127.0.0.1:0",
		"-mode", string(m), "-impl", string(im), "-control")
	if err != nil {
		return nil, fmt.Errorf("start %s %s server: %w", im, m, err)
	}
	c.im, c.mode = im, m
	return c, nil
}

// startChildArgs runs this program with args, a command that prints
// "listening ADDR" once it serves and answers control commands on stdin.
// A test binary runs them from its TestMain.
func startChildArgs(args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, pid: cmd.Process.Pid, in: in,
		lines: make(chan string, 16), exit: make(chan struct{})}
	children.Lock()
	if children.m == nil {
		children.m = make(map[*child]struct{})
	}
	children.m[c] = struct{}{}
	children.Unlock()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		_ = cmd.Wait()
		close(c.exit)
	}()
	line, err := c.line("listening ")
	if err != nil {
		c.stop()
		return nil, err
	}
	c.addr = line
	return c, nil
}

// line returns the rest of the next stdout line that starts with prefix.
func (c *child) line(prefix string) (string, error) {
	t := time.NewTimer(childWait)
	defer t.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", errors.New("server exited")
			}
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest, nil
			}
		case <-t.C:
			return "", fmt.Errorf("no %q line within %v", strings.TrimSpace(prefix), childWait)
		}
	}
}

// query sends a control command and parses the key=value answer.
func (c *child) query(cmd, prefix string) (map[string]int64, error) {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return nil, err
	}
	l, err := c.line(prefix)
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64)
	for f := range strings.FieldsSeq(l) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", f, err)
		}
		m[k] = n
	}
	return m, nil
}

// stats returns the child's goroutine and connection counts.
func (c *child) stats() (goroutines, conns int64, err error) {
	m, err := c.query("stats", "stats ")
	return m["goroutines"], m["conns"], err
}

// liveHeap collects garbage in the child and returns its live heap.
func (c *child) liveHeap() (int64, error) {
	m, err := c.query("heap", "heap ")
	return m["live"], err
}

// closes returns the child's count of ended connections by reason.
func (c *child) closes() (map[string]int64, error) { return c.query("closes", "closes ") }

// datagrams returns how many datagrams the child's server has received
// and sent (see server.datagrams).
func (c *child) datagrams() (in, out int64, err error) {
	m, err := c.query("dgrams", "dgrams ")
	return m["in"], m["out"], err
}

// resetResid starts a new window of the child's residence and
// scheduling-latency histograms.
func (c *child) resetResid() error { return c.command("resid reset", "residreset ") }

// resid returns the child's residence and scheduling-latency figures
// since resetResid, in microseconds (see server.residLine).
func (c *child) resid() (map[string]int64, error) { return c.query("resid", "resid ") }

// startProfile has the child write a CPU profile to path until
// stopProfile.
func (c *child) startProfile(path string) error { return c.command("profile "+path, "profile ") }

// stopProfile has the child finish its CPU profile.
func (c *child) stopProfile() error { return c.command("profile stop", "profile ") }

// command sends a control command answered by "PREFIX ok" or
// "PREFIX error MESSAGE".
func (c *child) command(cmd, prefix string) error {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return err
	}
	l, err := c.line(prefix)
	if err != nil {
		return err
	}
	if l != "ok" {
		return fmt.Errorf("%s: %s", cmd, l)
	}
	return nil
}

func (c *child) cpu() (time.Duration, error) { return procCPU(c.pid) }

func (c *child) rss() (int64, error) { return procRSS(c.pid) }

// childSample is the server's memory and counters at one moment.
type childSample struct {
	rss, heap, goroutines, conns int64
}

// sample reads RSS, goroutines, connections and the live heap.
func (c *child) sample() (childSample, error) {
	var s childSample
	var err error
	if s.rss, err = c.rss(); err != nil {
		return s, err
	}
	if s.goroutines, s.conns, err = c.stats(); err != nil {
		return s, err
	}
	s.heap, err = c.liveHeap()
	return s, err
}

// stop closes the child's stdin, which makes it close its listener and
// exit; a child that has not exited after childWait is killed.
func (c *child) stop() {
	c.stopOnce.Do(func() {
		_ = c.in.Close()
		if !c.wait(childWait) {
			_ = terminate(c.cmd.Process)
			if !c.wait(time.Second) {
				_ = c.cmd.Process.Kill()
				c.wait(childWait)
			}
		}
		children.Lock()
		delete(children.m, c)
		children.Unlock()
	})
}

// wait waits at most d for the child to exit, discarding its output so
// that it never blocks writing it.
func (c *child) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	lines := c.lines
	for {
		select {
		case <-c.exit:
			return true
		case _, ok := <-lines:
			if !ok {
				lines = nil
			}
		case <-t.C:
			return false
		}
	}
}

// stopChildren kills every child still running.
func stopChildren() {
	children.Lock()
	cs := make([]*child, 0, len(children.m))
	for c := range children.m {
		cs = append(cs, c)
	}
	children.Unlock()
	for _, c := range cs {
		_ = c.cmd.Process.Kill()
		c.stop()
	}
}
