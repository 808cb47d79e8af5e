package raknet

import (
	"bytes"
	"net/netip"
	"testing"

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
		out, err := r.reply1(nil, req, tc.from)
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
	req := func(guid int64, mtu uint16) []byte {
		return encode(&wire.OpenConnectionRequest2{ServerAddr: netip.MustParseAddrPort("127.0.0.1:19132"), MTU: mtu, ClientGUID: guid})
	}
	notice := func(b []byte) byte {
		var n wire.Notice
		if _, err := n.Decode(b); err != nil {
			t.Fatalf("decode notice % x: %v", b, err)
		}
		return n.ID
	}
	d, err := r.request2(nil, req(-1, 1492), from, r2State{})
	if err != nil || d.action != r2Accept || d.mtu != 1400 || d.guid != -1 {
		t.Fatalf("new peer: got %+v (%v), want accept at 1400", d, err)
	}
	var reply wire.OpenConnectionReply2
	if _, err := reply.Decode(d.reply); err != nil || reply.ClientAddr != from || reply.MTU != 1400 || reply.ServerGUID != 99 {
		t.Errorf("reply2: got %+v (%v)", reply, err)
	}
	pending := &peerView{guid: -1, reply2: d.reply}
	established := &peerView{guid: -1, reply2: d.reply, established: true}
	for _, tc := range []struct {
		name   string
		guid   int64
		st     r2State
		want   r2Action
		notice byte
	}{
		{"retry of a handshake", -1, r2State{live: pending, full: true, pendingFull: true}, r2Resend, 0},
		{"retry once established", -1, r2State{live: established, full: true}, r2Resend, 0},
		{"another GUID, handshake", -2, r2State{live: pending, pendingFull: true}, r2Replace, 0},
		{"another GUID, established", -2, r2State{live: established}, r2AlreadyConnected, wire.IDAlreadyConnected},
		{"another GUID, established, full", -2, r2State{live: established, full: true}, r2AlreadyConnected, wire.IDAlreadyConnected},
		{"established at cap", -3, r2State{full: true}, r2Full, wire.IDNoFreeIncomingConnections},
		{"handshake pool full", -3, r2State{pendingFull: true}, r2Full, wire.IDNoFreeIncomingConnections},
	} {
		d, err := r.request2(nil, req(tc.guid, 1000), from, tc.st)
		if err != nil || d.action != tc.want {
			t.Errorf("%s: got %v (%v), want %v", tc.name, d.action, err, tc.want)
			continue
		}
		switch {
		case tc.want == r2Resend && !bytes.Equal(d.reply, pending.reply2):
			t.Errorf("%s: reply % x, want the stored one", tc.name, d.reply)
		case tc.want == r2Replace && d.mtu != 1000:
			t.Errorf("%s: MTU %d, want 1000", tc.name, d.mtu)
		case tc.notice != 0 && notice(d.reply) != tc.notice:
			t.Errorf("%s: notice %#x, want %#x", tc.name, notice(d.reply), tc.notice)
		}
	}
	if _, err := r.request2(nil, req(-1, 1400)[:20], from, r2State{}); err == nil {
		t.Error("truncated request: got no error")
	}
}

func TestResponderShortProbe(t *testing.T) {
	r := testResponder()
	from := netip.MustParseAddrPort("127.0.0.2:1")
	for _, size := range []int{wire.OpenConnectionRequest1MinSize, MinMTU - ipv4Overhead - 1} {
		req := encode(&wire.OpenConnectionRequest1{Protocol: 11, Size: size})
		if out, err := r.reply1(nil, req, from); err == nil || len(out) != 0 {
			t.Errorf("%d-byte probe: got % x, %v; want no reply", len(req), out, err)
		}
	}
	req := encode(&wire.OpenConnectionRequest1{Protocol: 11, Size: MinMTU - ipv4Overhead})
	if out, err := r.reply1(nil, req, from); err != nil || len(out) == 0 {
		t.Errorf("probe at the minimum MTU: got % x, %v; want a reply", out, err)
	}
}
