package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Module is the import path prefix of Basalt's code, what Check and
// Goroutines match when given no prefixes.
const Module = "github.com/basaltmc/basalt/"

// grace is how long Check waits for goroutines to end; a variable so the
// package's own tests can shorten it.
var grace = 5 * time.Second

// Check registers a cleanup that fails t if, once the test and the
// cleanups registered after Check have run, a goroutine is still left
// that runs a function whose name starts with one of prefixes (Module if
// none are given) or was started by one, other than a test's own
// goroutine. It waits a few seconds for such goroutines to end before it
// reports their stacks. Call it first in a test so its cleanup runs last.
//
// It sees every goroutine of the process, so a test that uses it must not
// run in parallel with tests that start goroutines of the same code; a
// goroutine an earlier test left behind fails the check too, rather than
// raising a baseline.
func Check(t testing.TB, prefixes ...string) {
	t.Helper()
	t.Cleanup(func() {
		t.Helper()
		if left := wait(grace, prefixes); len(left) > 0 {
			t.Errorf("got %d goroutines left after the test, want none:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	})
}

// Main runs m's tests and then, if they passed, checks as Check does that
// none of them left a goroutine behind, printing the stacks of those left
// to standard error. It returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(leaktest.Main(m)) }
//
// It catches leaks of tests that do not call Check, though without naming
// the test.
func Main(m *testing.M, prefixes ...string) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if left := wait(grace, prefixes); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leaktest: got %d goroutines left after the tests, want none:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
		return 1
	}
	return 0
}

// wait polls Goroutines until none are left or d has passed, and returns
// the last ones seen.
func wait(d time.Duration, prefixes []string) []string {
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		left := Goroutines(prefixes...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(pause)
	}
}

// Goroutines returns the stacks of the goroutines that run a function
// whose name starts with one of prefixes (Module if none are given), or
// were started by one, leaving out tests' own goroutines (those under
// testing.tRunner) and the caller's. It is safe for concurrent use.
func Goroutines(prefixes ...string) []string {
	if len(prefixes) == 0 {
		prefixes = []string{Module}
	}
	var found []string
	for i, g := range strings.Split(stacks(), "\n\n") {
		// The first is the caller's own.
		if i > 0 && matches(g, prefixes) {
			found = append(found, g)
		}
	}
	return found
}

// matches reports whether the goroutine whose stack is g runs, or was
// started by, a function under one of prefixes and is not a test's main
// goroutine. A stack is a header line, then for each frame a function
// line and a tab-indented file line, and last a "created by" line.
func matches(g string, prefixes []string) bool {
	lines := strings.Split(g, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "goroutine ") {
		return false
	}
	ours := false
	for _, line := range lines[1:] {
		if line == "" || line[0] == '\t' {
			continue
		}
		fn := strings.TrimPrefix(line, "created by ")
		if strings.HasPrefix(fn, "testing.tRunner(") {
			return false
		}
		for _, p := range prefixes {
			ours = ours || strings.HasPrefix(fn, p)
		}
	}
	return ours
}

// stacks returns every goroutine's stack.
func stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
