// Package poll waits for a condition that offers no event to wait on: the
// state of a real server, process or socket in the integration tests. A
// test that can run in a testing/synctest bubble waits with synctest.Wait
// instead, and one that can be told (a channel, a callback) waits on that.
//
//	if !poll.Until(5*time.Second, 5*time.Millisecond, func() bool { return srv.PlayerCount() == 1 }) {
//		t.Fatal("the client did not log in")
//	}
package poll

import "time"

// Until reports whether cond holds within timeout: it asks at once, then
// every interval on a ticker, and once more when timeout has passed. cond
// runs on the caller's goroutine, so it may call t.Fatal. It panics if
// interval is not positive.
func Until(timeout, interval time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}
