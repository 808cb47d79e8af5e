package leaktest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"os"
)

// self is the prefix of this package's functions, so the tests see only
// the goroutines they start.
const self = Module + "integration/leaktest."

// park blocks until stop is closed: a goroutine running this package's
// code.
func park(stop <-chan struct{}) { <-stop }

func TestGoroutinesSeesRunningCode(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { park(stop); close(done) }()
	if got := Goroutines(self); len(got) != 1 {
		t.Fatalf("got %d goroutines, want 1:\n%s", len(got), strings.Join(got, "\n\n"))
	}
	if got := Goroutines(Module + "raknet."); len(got) != 0 {
		t.Errorf("another prefix: got %d goroutines, want none", len(got))
	}
	close(stop)
	<-done
	if got := wait(time.Second, []string{self}); len(got) != 0 {
		t.Errorf("after it returned: got %d goroutines, want none:\n%s", len(got), strings.Join(got, "\n\n"))
	}
}

// A goroutine this package started counts even while it runs only the
// standard library's code, as an HTTP server's does.
func TestGoroutinesSeesStartedByCode(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	go mu.Lock() // runs sync code only; created by this test
	if got := Goroutines(self); len(got) != 1 || !strings.Contains(got[0], "created by "+self) {
		t.Fatalf("got %q, want one goroutine created by this package", got)
	}
	mu.Unlock()
	if got := wait(time.Second, []string{self}); len(got) != 0 {
		t.Errorf("after it returned: got %d goroutines, want none", len(got))
	}
}

// The test's own goroutine runs this package's code but is no leak.
func TestGoroutinesLeavesOutTests(t *testing.T) {
	if got := Goroutines(self); len(got) != 0 {
		t.Errorf("got %d goroutines, want none:\n%s", len(got), strings.Join(got, "\n\n"))
	}
}

// recorder is a testing.TB that keeps its cleanups and errors.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}

func TestCheck(t *testing.T) {
	defer func(d time.Duration) { grace = d }(grace)
	grace = 100 * time.Millisecond
	for _, leak := range []bool{false, true} {
		t.Run(fmt.Sprint("leak=", leak), func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, self)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { park(stop); close(done) }()
			if !leak {
				close(stop)
				<-done
			}
			if len(r.cleanups) != 1 {
				t.Fatalf("got %d cleanups, want 1", len(r.cleanups))
			}
			r.cleanups[0]()
			if got := len(r.errors) > 0; got != leak {
				t.Errorf("reported a leak: got %v, want %v: %q", got, leak, r.errors)
			}
			if leak && !strings.Contains(strings.Join(r.errors, ""), self+"park(") {
				t.Errorf("got %q, want the leaked goroutine's stack", r.errors)
			}
			if leak {
				close(stop)
				<-done
			}
		})
	}
}

func TestMain(m *testing.M) { os.Exit(Main(m, self)) }
