// Package guard holds the primitives a RakNet listener needs against
// hostile peers, as pure types: no sockets, goroutines or wall clock, every
// method takes the time it is asked at, and none allocates per call.
//
// The rules they serve: an address that has not echoed a valid cookie gets
// no state, no slot, no log line of its own and no reply larger than its
// request; offline replies are limited per source prefix and, across all
// sources, in bytes per second; and everything peers make the listener
// hold counts against one memory budget.
//
//   - Cookies issues the stateless cookie of OpenConnectionReply1 and
//     checks it in OpenConnectionRequest2.
//   - PrefixLimiter limits replies per IPv4 /24 or IPv6 /64 (or /48) in a
//     fixed table; ByteLimiter limits their bytes in total; Bucket is the
//     token bucket under both.
//   - Budget and Account share one memory total fairly among
//     connections, with small caps before login.
//
// A listener's offline path, in outline (Example runs it):
//
//	switch id {
//	case wire.IDUnconnectedPing, wire.IDOpenConnectionRequest1:
//		if !prefixes.Allow(src.Addr(), now, 1) || !replyBytes.Allow(now, len(reply)) {
//			return // dropped without a word: no log line per address
//		}
//		// for Request1: reply1.Security, reply1.Cookie = true, cookies.Issue(src, req1.Protocol, now)
//	case wire.IDOpenConnectionRequest2:
//		if !req2.HasCookie || !cookies.Verify(src, protocol, req2.Cookie, now) {
//			return
//		}
//		acct := budget.Open() // the first state this address gets
//		// ... acct.Reserve(n) before holding n bytes for the peer,
//		// acct.Release(n) after; acct.SetClass(guard.ClassPreLogin)
//		// once connected, acct.Close() when the connection ends.
//	}
//
// All types are safe for concurrent use, so the listener may read its
// socket from more than one goroutine.
package guard
