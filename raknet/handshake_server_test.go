package raknet

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/guard"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

func testResponder() *responder {
	return &responder{guid: 99, protocols: []byte{11, 10}, maxMTU: 1400}
}

func TestResponderPong(t *testing.T) {
	r := testResponder()
	ping := encode(&wire.UnconnectedPing{Time: 5, ClientGUID: -1})
	out, err := r.pong(nil, ping, []byte("MCPE;x;"), true)
	want := encode(&wire.UnconnectedPong{Time: 5, ServerGUID: 99, Data: []byte("MCPE;x;")})
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("pong: got % x (%v), want % x", out, err, want)
	}
	open := encode(&wire.UnconnectedPing{Time: 5, ClientGUID: -1, OpenConnections: true})
	if out, err := r.pong(nil, open, nil, false); err != nil || len(out) != 0 {
		t.Errorf("0x02 while full: got % x (%v), want no reply", out, err)
	}
	if out, err := r.pong(nil, open, nil, true); err != nil || len(out) == 0 {
		t.Errorf("0x02 with room: got % x (%v), want a pong", out, err)
	}
	if _, err := r.pong(nil, ping[:10], nil, true); err == nil {
		t.Error("truncated ping: got no error")
	}
	if n := testing.AllocsPerRun(100, func() { out, _ = r.pong(out[:0], ping, []byte("MCPE;x;"), true) }); n != 0 {
		t.Errorf("pong: got %v allocations, want 0", n)
	}
}

func TestResponderReply1(t *testing.T) {
	r := testResponder()
	v4 := netip.MustParseAddrPort("127.0.0.2:1")
	v6 := netip.MustParseAddrPort("[::1]:1")
	for _, tc := range []struct {
		name     string
		from     netip.AddrPort
		proto    byte
		size     int
		wantMTU  uint16
		wantVers bool
	}{
		{"1492 probe capped", v4, 11, 1492 - 28, 1400, false},
		{"1200 probe", v4, 11, 1200 - 28, 1200, false},
		{"IPv6 header counted", v6, 11, 1200 - 48, 1200, false},
		{"probe at the minimum", v4, 10, MinMTU - ipv4Overhead, MinMTU, false},
		{"other version", v4, 9, 1000, 0, true},
	} {
		req := encode(&wire.OpenConnectionRequest1{Protocol: tc.proto, Size: tc.size})
		out, err := r.reply1(nil, req, tc.from, ctlT0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.wantVers {
			var m wire.IncompatibleProtocolVersion
			if _, err := m.Decode(out); err != nil || m.Protocol != 11 || m.ServerGUID != 99 {
				t.Errorf("%s: got %+v (%v), want IncompatibleProtocolVersion 11", tc.name, m, err)
			}
			continue
		}
		var m wire.OpenConnectionReply1
		if _, err := m.Decode(out); err != nil || m.MTU != tc.wantMTU || m.ServerGUID != 99 {
			t.Errorf("%s: got %+v (%v), want MTU %d", tc.name, m, err, tc.wantMTU)
		}
	}
}

func TestResponderRequest2(t *testing.T) {
	r := testResponder()
	from := netip.MustParseAddrPort("127.0.0.2:5000")
	req := func(guid int64, mtu uint16) *wire.OpenConnectionRequest2 {
		return &wire.OpenConnectionRequest2{ServerAddr: netip.MustParseAddrPort("127.0.0.1:19132"), MTU: mtu, ClientGUID: guid}
	}
	notice := func(b []byte) byte {
		var n wire.Notice
		if _, err := n.Decode(b); err != nil {
			t.Fatalf("decode notice % x: %v", b, err)
		}
		return n.ID
	}
	d := r.request2(nil, req(-1, 1492), true, from, r2State{})
	if d.action != r2Accept || d.mtu != 1400 || d.guid != -1 {
		t.Fatalf("new peer: got %+v, want accept at 1400", d)
	}
	var reply wire.OpenConnectionReply2
	if _, err := reply.Decode(d.reply); err != nil || reply.ClientAddr != from || reply.MTU != 1400 || reply.ServerGUID != 99 {
		t.Errorf("reply2: got %+v (%v)", reply, err)
	}
	pending := &peerView{guid: -1, reply2: d.reply}
	established := &peerView{guid: -1, reply2: d.reply, established: true}
	allow := func() bool { return true }
	deny := func() bool { return false }
	for _, tc := range []struct {
		name   string
		guid   int64
		proven bool
		st     r2State
		want   r2Action
		notice byte
	}{
		{"retry of a handshake", -1, true, r2State{live: pending, full: true, pendingFull: true}, r2Resend, 0},
		{"retry once established", -1, true, r2State{live: established, full: true}, r2Resend, 0},
		{"another GUID, handshake", -2, true, r2State{live: pending, pendingFull: true}, r2Replace, 0},
		{"another GUID, established", -2, true, r2State{live: established}, r2AlreadyConnected, wire.IDAlreadyConnected},
		{"another GUID, established, full", -2, true, r2State{live: established, full: true}, r2AlreadyConnected, wire.IDAlreadyConnected},
		{"established at cap", -3, true, r2State{full: true}, r2Full, wire.IDNoFreeIncomingConnections},
		{"handshake pool full", -3, true, r2State{pendingFull: true}, r2Full, wire.IDNoFreeIncomingConnections},
		{"unproven", -3, false, r2State{pendingFull: true}, r2Accept, 0},
		{"unproven, its pool full", -3, false, r2State{unprovenFull: true}, r2Drop, 0},
		{"unproven at a handshake", -2, false, r2State{live: pending}, r2AlreadyConnected, wire.IDAlreadyConnected},
		{"unproven retry", -1, false, r2State{live: pending, unprovenFull: true}, r2Resend, 0},
		{"its IP at its cap", -3, true, r2State{ipFull: true}, r2PerIPFull, wire.IDNoFreeIncomingConnections},
		{"its IP at its cap, all full", -3, true, r2State{ipFull: true, full: true, ipRate: allow}, r2PerIPFull, wire.IDNoFreeIncomingConnections},
		{"unproven, its IP at its cap", -3, false, r2State{ipFull: true}, r2Accept, 0},
		{"within its IP's rate", -3, true, r2State{ipRate: allow}, r2Accept, 0},
		{"over its IP's rate", -3, true, r2State{ipRate: deny}, r2RateLimited, 0},
		{"replacing, over its IP's rate", -2, true, r2State{live: pending, ipRate: deny}, r2RateLimited, 0},
		{"retry, over its IP's rate", -1, true, r2State{live: pending, ipRate: deny}, r2Resend, 0},
		{"full, over its IP's rate", -3, true, r2State{full: true, ipRate: deny}, r2Full, wire.IDNoFreeIncomingConnections},
		{"unproven, over its IP's rate", -3, false, r2State{ipRate: deny}, r2Accept, 0},
	} {
		// The rate is charged only for a proven request about to be
		// accepted.
		charged := 0
		if rate := tc.st.ipRate; rate != nil {
			tc.st.ipRate = func() bool { charged++; return rate() }
		}
		wantCharged := 0
		if tc.st.ipRate != nil && tc.proven && (tc.want == r2Accept || tc.want == r2Replace || tc.want == r2RateLimited) {
			wantCharged = 1
		}
		d := r.request2(nil, req(tc.guid, 1000), tc.proven, from, tc.st)
		if d.action != tc.want || d.proven != tc.proven {
			t.Errorf("%s: got %v (proven %v), want %v", tc.name, d.action, d.proven, tc.want)
			continue
		}
		if charged != wantCharged {
			t.Errorf("%s: rate charged %d times, want %d", tc.name, charged, wantCharged)
		}
		switch {
		case tc.want == r2Resend && !bytes.Equal(d.reply, pending.reply2):
			t.Errorf("%s: reply % x, want the stored one", tc.name, d.reply)
		case tc.want == r2Replace && d.mtu != 1000:
			t.Errorf("%s: MTU %d, want 1000", tc.name, d.mtu)
		case (tc.want == r2Drop || tc.want == r2RateLimited) && len(d.reply) != 0:
			t.Errorf("%s: reply % x, want none", tc.name, d.reply)
		case tc.notice != 0 && notice(d.reply) != tc.notice:
			t.Errorf("%s: notice %#x, want %#x", tc.name, notice(d.reply), tc.notice)
		}
	}
}

// Reply1 carries a cookie for protocol 11 and none for 10; Request2 is
// proven by the cookie of its address, refused with another, unproven
// without one.
func TestResponderCookies(t *testing.T) {
	r := testResponder()
	r.cookies = guard.NewCookies([16]byte{1, 2, 3}, 10*time.Second)
	from := netip.MustParseAddrPort("127.0.0.2:5000")
	reply1 := func(proto byte, now time.Time) wire.OpenConnectionReply1 {
		out, err := r.reply1(nil, encode(&wire.OpenConnectionRequest1{Protocol: proto, Size: 1200}), from, now)
		var m wire.OpenConnectionReply1
		if err == nil {
			_, err = m.Decode(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := reply1(10, ctlT0); m.Security {
		t.Errorf("protocol 10: got a cookie, want none")
	}
	m := reply1(11, ctlT0)
	if !m.Security {
		t.Fatal("protocol 11: got no cookie")
	}
	req2 := func(cookie uint32, has bool, src netip.AddrPort) []byte {
		return encode(&wire.OpenConnectionRequest2{HasCookie: has, Cookie: cookie, ServerAddr: from, MTU: 1200, ClientGUID: -1})
	}
	for _, tc := range []struct {
		name              string
		b                 []byte
		src               netip.AddrPort
		at                time.Duration
		wantProven, wantB bool
	}{
		{"echoed", req2(m.Cookie, true, from), from, time.Second, true, false},
		{"echoed a period later", req2(m.Cookie, true, from), from, 15 * time.Second, true, false},
		{"echoed too late", req2(m.Cookie, true, from), from, 25 * time.Second, false, true},
		{"another port", req2(m.Cookie, true, from), netip.MustParseAddrPort("127.0.0.2:5001"), time.Second, false, true},
		{"forged", req2(m.Cookie^1, true, from), from, time.Second, false, true},
		{"none", req2(0, false, from), from, time.Second, false, false},
	} {
		_, proven, bad, err := r.check2(tc.b, tc.src, ctlT0.Add(tc.at))
		if err != nil || proven != tc.wantProven || bad != tc.wantB {
			t.Errorf("%s: got proven %v, bad %v (%v), want %v, %v", tc.name, proven, bad, err, tc.wantProven, tc.wantB)
		}
	}
	if _, _, _, err := r.check2(req2(0, false, from)[:20], from, ctlT0); err == nil {
		t.Error("truncated request: got no error")
	}
	// Answering a ping or a probe allocates nothing.
	probe := encode(&wire.OpenConnectionRequest1{Protocol: 11, Size: 1200})
	buf := make([]byte, 0, 1500)
	if n := testing.AllocsPerRun(100, func() { buf, _ = r.reply1(buf[:0], probe, from, ctlT0) }); n != 0 {
		t.Errorf("reply1: got %v allocations, want 0", n)
	}
}

func TestResponderShortProbe(t *testing.T) {
	r := testResponder()
	from := netip.MustParseAddrPort("127.0.0.2:1")
	for _, size := range []int{wire.OpenConnectionRequest1MinSize, MinMTU - ipv4Overhead - 1} {
		req := encode(&wire.OpenConnectionRequest1{Protocol: 11, Size: size})
		if out, err := r.reply1(nil, req, from, ctlT0); err == nil || len(out) != 0 {
			t.Errorf("%d-byte probe: got % x, %v; want no reply", len(req), out, err)
		}
	}
	req := encode(&wire.OpenConnectionRequest1{Protocol: 11, Size: MinMTU - ipv4Overhead})
	if out, err := r.reply1(nil, req, from, ctlT0); err != nil || len(out) == 0 {
		t.Errorf("probe at the minimum MTU: got % x, %v; want a reply", out, err)
	}
}
