package guard_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
)

// A listener's offline path in outline, as the package doc describes it:
// replies limited per prefix and in bytes, a stateless cookie issued with
// Reply1 and checked in Request2, and an account opened only for an
// address that echoed it.
func Example() {
	now := time.Unix(1_700_000_000, 0)
	prefixes := guard.NewPrefixLimiter(guard.PrefixConfig{})
	replyBytes := guard.NewByteLimiter(1<<20, 1<<20)
	cookies := guard.NewCookies([16]byte{1}, 10*time.Second)
	budget := guard.NewBudget(guard.BudgetConfig{Total: 128 << 20})
	src := netip.MustParseAddrPort("198.51.100.7:50000")

	// OpenConnectionRequest1: answered within the limits, with a cookie.
	if !prefixes.Allow(src.Addr(), now, 1) || !replyBytes.Allow(now, 28) {
		return // dropped without a word: no log line per address
	}
	cookie := cookies.Issue(src, 11, now)

	// OpenConnectionRequest2: the cookie proves the address.
	if !cookies.Verify(src, 11, cookie, now.Add(time.Second)) {
		return
	}
	acct := budget.Open() // the first state this address gets
	fmt.Println(acct.Reserve(1500), acct.Class())
	acct.Release(1500)
	fmt.Println(acct.SetClass(guard.ClassPreLogin), acct.Class())
	acct.Close()
	fmt.Println(cookies.Verify(netip.MustParseAddrPort("198.51.100.8:50000"), 11, cookie, now))
	// Output:
	// true handshake
	// true pre-login
	// false
}
