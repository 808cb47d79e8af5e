package nethernet

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"

	"github.com/pion/stun/v3"
)

// STUN (RFC 8489) as the ICE check that proves a client's address needs
// it: a binding request's header and its USERNAME attribute.
const (
	stunHeaderSize     = 20
	stunMagicCookie    = 0x2112A442
	stunBindingRequest = 0x0001
	stunAttrUsername   = 0x0006
)

// proofConn is the ICE socket as pion's UDP mux reads it, watched for
// the first ICE check of each answered negotiation: a STUN binding
// request whose USERNAME starts with the answer's ufrag and whose
// MESSAGE-INTEGRITY verifies with the answer's ice-pwd. Only a client
// that got the answer at the address it claims can send one; until it
// does, its negotiation may be torn down (see admission).
type proofConn struct {
	net.PacketConn
	a *admission
}

// ReadFrom reads the next datagram, noting a proving ICE check.
func (p *proofConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := p.PacketConn.ReadFrom(b)
	if err == nil {
		p.observe(b[:n], addr)
	}
	return n, addr, err
}

// observe checks b, read from addr, for an ICE check of a negotiation
// still waiting for one.
func (p *proofConn) observe(b []byte, addr net.Addr) {
	ufrag, ok := stunBindingUfrag(b)
	if !ok || !p.a.unprovenByUfrag(string(ufrag)) {
		return
	}
	from := netip.AddrPort{}
	if ua, ok := addr.(*net.UDPAddr); ok {
		from = ua.AddrPort()
	}
	p.a.proven(string(ufrag), from, func(pwd string) bool {
		return stunIntegrityValid(b, pwd)
	})
}

// stunBindingUfrag returns the local part of a STUN binding request's
// USERNAME ("ours:theirs"), and false if b is not a well-formed binding
// request with one. It allocates nothing.
func stunBindingUfrag(b []byte) ([]byte, bool) {
	if len(b) < stunHeaderSize || binary.BigEndian.Uint16(b[0:2]) != stunBindingRequest ||
		binary.BigEndian.Uint32(b[4:8]) != stunMagicCookie {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if n%4 != 0 || stunHeaderSize+n > len(b) {
		return nil, false
	}
	attrs := b[stunHeaderSize : stunHeaderSize+n]
	for len(attrs) >= 4 {
		typ := binary.BigEndian.Uint16(attrs[0:2])
		l := int(binary.BigEndian.Uint16(attrs[2:4]))
		if 4+l > len(attrs) {
			return nil, false
		}
		if typ == stunAttrUsername {
			v := attrs[4 : 4+l]
			i := bytes.IndexByte(v, ':')
			if i <= 0 {
				return nil, false
			}
			return v[:i], true
		}
		padded := 4 + (l+3)&^3
		if padded > len(attrs) {
			return nil, false
		}
		attrs = attrs[padded:]
	}
	return nil, false
}

// stunIntegrityValid reports whether the STUN message b carries a
// MESSAGE-INTEGRITY made with the short-term password pwd.
func stunIntegrityValid(b []byte, pwd string) bool {
	if pwd == "" {
		return false
	}
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		return false
	}
	return stun.NewShortTermIntegrity(pwd).Check(m) == nil
}

// iceCredentials returns the ice-ufrag and ice-pwd of an SDP description,
// empty if it has none.
func iceCredentials(sdp string) (ufrag, pwd string) {
	sc := bufio.NewScanner(strings.NewReader(sdp))
	sc.Buffer(nil, maxSDPLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "a=ice-ufrag:"); ok && ufrag == "" {
			ufrag = v
		} else if v, ok := strings.CutPrefix(line, "a=ice-pwd:"); ok && pwd == "" {
			pwd = v
		}
	}
	return ufrag, pwd
}

// maxSDPLine bounds a line of an SDP description this package reads.
const maxSDPLine = 64 << 10
