package raknet

import "net/netip"

// The MTUs RakNet speaks of include the IP and UDP headers: a datagram's
// UDP payload is the MTU less overhead(peer). Every MTU bound and clamp of
// the endpoint, the dialer's handshake (initiator) and the listener's
// (responder) is here.
const (
	// DefaultMaxMTU is the MTU granted unless configured: vanilla BDS uses
	// 1400 and larger values break some devices and routers.
	DefaultMaxMTU = 1400
	// MinMTU is the smallest MTU granted.
	MinMTU = 576
	// MaxMTU is the largest MTU RakNet probes.
	MaxMTU = 1492

	// maxDatagramIn is the largest datagram read: the UDP payload of the
	// largest MTU, IP and UDP headers included, which leaves headroom for
	// peers that overshoot their MTU (some send ~1480 bytes at MTU 1492).
	// Anything larger is no RakNet datagram and is dropped before it is
	// decoded, so a peer cannot make us parse 64 KiB of ACK records.
	maxDatagramIn = MaxMTU
	// ipv4Overhead and ipv6Overhead are the IP + UDP header sizes an MTU
	// includes.
	ipv4Overhead = 28
	ipv6Overhead = 48
)

// dialMTUs are the MTUs a dialer probes, largest first, like the vanilla
// client.
var dialMTUs = []int{1492, 1200, 576}

// overhead returns the IP + UDP header size for a peer.
func overhead(ap netip.AddrPort) int {
	if ap.Addr().Unmap().Is4() {
		return ipv4Overhead
	}
	return ipv6Overhead
}

// udpPayload returns the UDP payload an MTU leaves for datagrams to or
// from a peer: the size an OpenConnectionRequest1 probing mtu is padded
// to, and the largest datagram a connection at mtu sends.
func udpPayload(mtu int, ap netip.AddrPort) int { return mtu - overhead(ap) }

// probedMTU returns the MTU an OpenConnectionRequest1 padded to size
// probes: the inverse of udpPayload.
func probedMTU(size int, ap netip.AddrPort) int { return size + overhead(ap) }

// clampMTU keeps an MTU within [MinMTU, limit].
func clampMTU(mtu, limit int) int { return min(max(mtu, MinMTU), limit) }

// maxMTUOr returns the configured MTU cap clamped to [MinMTU, MaxMTU], or
// def when none is configured.
func maxMTUOr(configured, def int) int {
	if configured == 0 {
		return def
	}
	return clampMTU(configured, MaxMTU)
}

// lowerMTU returns the MTU agreed once the server's Reply2 offered one:
// the server may lower it, never raise it nor take it below MinMTU.
func lowerMTU(agreed, offered int) int {
	if offered < MinMTU {
		return agreed
	}
	return min(agreed, offered)
}
