package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

type addrPort = netip.AddrPort

// Address sizes on the wire.
const (
	addrSizeV4 = 7  // 0x04, 4 inverted bytes, u16 BE port
	addrSizeV6 = 29 // 0x06, u16 LE family, u16 BE port, u32 flow, 16 bytes, u32 scope
	// afInet6 is the address family RakNet writes for IPv6 (Windows AF_INET6).
	afInet6 = 23
)

// AppendAddr appends a in RakNet's system-address layout. IPv4-mapped IPv6
// addresses are written as IPv4 (consoles reject the mapped form) and an
// invalid address is written as 0.0.0.0:0.
//
//	IPv4: 04 | ^a ^b ^c ^d | port u16 BE
//	IPv6: 06 | family u16 LE (23) | port u16 BE | flow u32 | addr [16] | scope u32
func AppendAddr(b []byte, a netip.AddrPort) []byte {
	ip := a.Addr().Unmap()
	if ip.Is4() || !ip.IsValid() {
		var v4 [4]byte
		if ip.IsValid() {
			v4 = ip.As4()
		}
		b = append(b, 4, ^v4[0], ^v4[1], ^v4[2], ^v4[3])
		return appendU16(b, a.Port())
	}
	b = append(b, 6)
	b = binary.LittleEndian.AppendUint16(b, afInet6)
	b = appendU16(b, a.Port())
	b = appendU32(b, 0)
	v6 := ip.As16()
	b = append(b, v6[:]...)
	return appendU32(b, 0)
}

// decodeAddr decodes a system address from the start of b and returns the
// number of bytes consumed. The IPv6 family field and scope id are not
// checked: peers write different values there. An IPv4-mapped IPv6 address
// decodes as IPv4, the value AppendAddr writes it as.
func decodeAddr(b []byte) (netip.AddrPort, int, error) {
	if len(b) < 1 {
		return netip.AddrPort{}, 0, errUnexpectedEOF
	}
	switch b[0] {
	case 4:
		if len(b) < addrSizeV4 {
			return netip.AddrPort{}, 0, errUnexpectedEOF
		}
		ip := netip.AddrFrom4([4]byte{^b[1], ^b[2], ^b[3], ^b[4]})
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[5:])), addrSizeV4, nil
	case 6:
		if len(b) < addrSizeV6 {
			return netip.AddrPort{}, 0, errUnexpectedEOF
		}
		port := binary.BigEndian.Uint16(b[3:])
		ip := netip.AddrFrom16([16]byte(b[9:25])).Unmap()
		return netip.AddrPortFrom(ip, port), addrSizeV6, nil
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: address version %d", ErrInvalid, b[0])
	}
}
