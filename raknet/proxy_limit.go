package raknet

import "net/netip"

// trustedProxies is ListenConfig.TrustedProxies as a set, kept even
// without ProxyProtocol: a trusted proxy's own address is never limited
// per IP (the per-IP connection cap, the handshake rate, the offline
// requests' prefix rate). Its players share that address when it sends
// no PROXY header (a proxy such as WaterdogPE, a tunnel), and a limit on
// it would cap the whole proxy; with headers, the limits apply to the
// clients they name.
type trustedProxies []netip.Prefix

// newTrustedProxies returns the set of the given prefixes, nil if there
// are none; prefixes that are not valid are left out, IPv4-mapped IPv6
// prefixes are taken as the IPv4 prefixes they map.
func newTrustedProxies(trusted []netip.Prefix) trustedProxies {
	var ps trustedProxies
	for _, p := range trusted {
		if p.IsValid() {
			ps = append(ps, trustedPrefix(p))
		}
	}
	return ps
}

// trustedPrefix returns the valid prefix p masked, as the IPv4 prefix it
// maps if it is an IPv4-mapped IPv6 one, so that contains, which unmaps
// the address it is asked about, matches either form.
func trustedPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// contains reports whether a is a trusted proxy's.
func (p trustedProxies) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, t := range p {
		if t.Contains(a) {
			return true
		}
	}
	return false
}
