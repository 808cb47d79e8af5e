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
		{"tiny probe clamped", v4, 10, 100, MinMTU, false},
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
	d, err := r.request2(nil, req(-1, 1492), from, nil, false)
	if err != nil || d.action != r2Accept || d.mtu != 1400 || d.guid != -1 {
		t.Fatalf("new peer: got %+v (%v), want accept at 1400", d, err)
	}
	var reply wire.OpenConnectionReply2
	if _, err := reply.Decode(d.reply); err != nil || reply.ClientAddr != from || reply.MTU != 1400 || reply.ServerGUID != 99 {
		t.Errorf("reply2: got %+v (%v)", reply, err)
	}
	live := &peerView{guid: -1, reply2: d.reply}
	if d2, _ := r.request2(nil, req(-1, 1492), from, live, true); d2.action != r2Resend || !bytes.Equal(d2.reply, live.reply2) {
		t.Errorf("retry: got %v, want resend of the stored reply", d2.action)
	}
	if d2, _ := r.request2(nil, req(-2, 1000), from, live, true); d2.action != r2Replace || d2.mtu != 1000 {
		t.Errorf("another GUID: got %v at %d, want replace at 1000 even when full", d2.action, d2.mtu)
	}
	d2, _ := r.request2(nil, req(-3, 1000), from, nil, true)
	var n wire.Notice
	if _, err := n.Decode(d2.reply); d2.action != r2Full || err != nil || n.ID != wire.IDNoFreeIncomingConnections {
		t.Errorf("full: got %v %+v (%v), want NoFreeIncomingConnections", d2.action, n, err)
	}
	if _, err := r.request2(nil, req(-1, 1400)[:20], from, nil, false); err == nil {
		t.Error("truncated request: got no error")
	}
}
