// Package leaktest finds goroutines a test left running. It looks at what
// the goroutines run, not at how many there are: a count taken at the
// start of a test is satisfied as soon as some earlier test's goroutine
// exits, so a leak hides behind it, while a goroutine that runs (or was
// started by) Basalt's code after a test ended is a leak whatever else
// is running.
//
//	func TestClose(t *testing.T) {
//		leaktest.Check(t) // first, so its cleanup runs last
//		l := listen(t)    // closed by a cleanup
//		...
//	}
//
// The package imports only the standard library and is imported only by
// tests: integration's TestImportDirection keeps it out of everything
// that ships. It lives under integration/, the tree of test-only
// packages, because raknet's, session's and server's tests all import it
// and a package under any of them would be either internal to it or part
// of its public API.
package leaktest
