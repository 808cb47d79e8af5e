package attack

import (
	"fmt"
	"net/netip"
)

// Loopback address plan. Every 127.0.0.0/8 address is local on Linux, so
// one machine plays thousands of hosts. Spoofed sources come from
// SpoofRange only; clients that really connect, honest or not, use
// 127.0.0.1 or ClientAddr, outside it, so no reply to them is ever
// counted as a reply to a spoofed source.
var (
	// SpoofRange holds every address Sources returns: 127.64.0.0 to
	// 127.127.255.255.
	SpoofRange = netip.MustParsePrefix("127.64.0.0/10")
	// loopback is where every packet of this package goes.
	loopback = netip.MustParsePrefix("127.0.0.0/8")
)

// hostsPerPrefix is how many sources a /24 holds: .1 to .254.
const hostsPerPrefix = 254

// maxSources bounds Sources: every /24 of SpoofRange, full.
const maxSources = (1 << 14) * hostsPerPrefix

// Sources returns n distinct spoofed source addresses spread evenly over
// prefixes /24 networks of SpoofRange (more if n does not fit in that
// many: a /24 holds 254). It panics if n is out of range, a programmer
// error.
func Sources(n, prefixes int) []netip.Addr {
	if n < 0 || n > maxSources {
		panic(fmt.Sprintf("attack: %d sources, want 0 to %d", n, maxSources))
	}
	prefixes = max(prefixes, 1, (n+hostsPerPrefix-1)/hostsPerPrefix)
	prefixes = min(prefixes, 1<<14)
	out := make([]netip.Addr, 0, n)
	for i := range n {
		p, h := i%prefixes, i/prefixes
		out = append(out, netip.AddrFrom4([4]byte{127, byte(64 + p>>8), byte(p), byte(1 + h)}))
	}
	return out
}

// ClientAddr returns the i-th address (from 0) for clients that really
// connect: in 127.200.0.0/16, outside SpoofRange and distinct from
// 127.0.0.1.
func ClientAddr(i int) netip.Addr {
	if i < 0 || i >= 1<<16-2 {
		panic(fmt.Sprintf("attack: honest address %d out of range", i))
	}
	i++
	return netip.AddrFrom4([4]byte{127, 200, byte(i >> 8), byte(i)})
}

// Prefix24 returns the /24 that holds a.
func Prefix24(a netip.Addr) netip.Prefix {
	p, _ := a.Unmap().Prefix(24)
	return p
}

// checkLoopback refuses an address outside 127.0.0.0/8: nothing in this
// package may send anywhere else.
func checkLoopback(what string, a netip.Addr) error {
	if !a.Unmap().Is4() || !loopback.Contains(a.Unmap()) {
		return fmt.Errorf("attack: %s %v is not in 127.0.0.0/8", what, a)
	}
	return nil
}
