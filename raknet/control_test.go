package raknet

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

var (
	ctlT0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctlClient = netip.MustParseAddrPort("127.0.0.2:50000")
	ctlServer = netip.MustParseAddrPort("127.0.0.1:19132")
)

func encode(m interface{ Append([]byte) []byte }) []byte { return m.Append(nil) }

// The server side: request → accepted → NIC, in that order only.
func TestControlServerHandshake(t *testing.T) {
	c := newControl(false, ctlClient, ctlT0)
	nic := encode(&wire.NewIncomingConnection{ServerAddr: ctlServer})
	if ev, r := c.handle(nic, ctlT0); ev != evNone || len(r) != 0 || c.established() {
		t.Fatalf("NIC before request: got %v with %d replies (established %v), want none", ev, len(r), c.established())
	}
	req := encode(&wire.ConnectionRequest{ClientGUID: -5, Time: 77})
	ev, r := c.handle(req, ctlT0.Add(1500*time.Millisecond))
	if ev != evNone || len(r) != 1 || r[0].rel != wire.ReliableOrdered {
		t.Fatalf("request: got %v with %v, want one reliable ordered reply", ev, r)
	}
	var acc wire.ConnectionRequestAccepted
	if _, err := acc.Decode(r[0].b); err != nil {
		t.Fatalf("decode accepted: %v", err)
	}
	if acc.ClientAddr != ctlClient || acc.RequestTime != 77 || acc.AcceptTime != 1500 {
		t.Errorf("accepted: got addr %v request %d accept %d, want %v 77 1500", acc.ClientAddr, acc.RequestTime, acc.AcceptTime, ctlClient)
	}
	if c.guid != -5 {
		t.Errorf("guid: got %d, want -5", c.guid)
	}
	if ev, r := c.handle(req, ctlT0.Add(2*time.Second)); ev != evNone || len(r) != 0 {
		t.Errorf("retried request: got %v with %d replies, want none (the first is resent by the layer)", ev, len(r))
	}
	if ev, _ := c.handle(nic, ctlT0.Add(2*time.Second)); ev != evEstablished || !c.established() {
		t.Fatalf("NIC after request: got %v, want established", ev)
	}
	if ev, _ := c.handle(nic, ctlT0.Add(3*time.Second)); ev != evNone {
		t.Errorf("second NIC: got %v, want none", ev)
	}
	if ev, r := c.handle(req, ctlT0.Add(3*time.Second)); ev != evNone || len(r) != 0 {
		t.Errorf("request once established: got %v with %d replies, want none", ev, len(r))
	}
}

// The client side: accepted → NIC and a first ping.
func TestControlClientHandshake(t *testing.T) {
	c := newControl(true, ctlServer, ctlT0)
	req := c.request(-9, ctlT0.Add(10*time.Millisecond))
	var m wire.ConnectionRequest
	if _, err := m.Decode(req.b); err != nil || m.ClientGUID != -9 || m.Time != 10 || req.rel != wire.Reliable {
		t.Fatalf("request: got %+v (%v) %v, want GUID -9 at 10 ms, reliable", m, err, req.rel)
	}
	acc := encode(&wire.ConnectionRequestAccepted{ClientAddr: ctlClient, RequestTime: 10, AcceptTime: 900})
	now := ctlT0.Add(40 * time.Millisecond)
	ev, r := c.handle(acc, now)
	if ev != evEstablished || len(r) != 2 {
		t.Fatalf("accepted: got %v with %d replies, want established with NIC and ping", ev, len(r))
	}
	var nic wire.NewIncomingConnection
	if _, err := nic.Decode(r[0].b); err != nil || nic.ServerAddr != ctlServer || nic.PingTime != 900 || nic.PongTime != 40 {
		t.Errorf("NIC: got %+v (%v), want server %v ping 900 pong 40", nic, err, ctlServer)
	}
	var ping wire.ConnectedPing
	if _, err := ping.Decode(r[1].b); err != nil || ping.Time != 40 || r[1].rel != wire.Unreliable {
		t.Errorf("ping: got %+v (%v) %v, want time 40 unreliable", ping, err, r[1].rel)
	}
	if ev, r := c.handle(acc, now); ev != evNone || len(r) != 0 {
		t.Errorf("second accepted: got %v with %d replies, want none", ev, len(r))
	}
	// A server never gets a ConnectionRequest answered by a client.
	if ev, r := c.handle(encode(&wire.ConnectionRequest{ClientGUID: 1}), now); ev != evNone || len(r) != 0 {
		t.Errorf("request to a client: got %v with %d replies, want none", ev, len(r))
	}
}

func TestControlPingPong(t *testing.T) {
	c := newControl(false, ctlClient, ctlT0)
	ev, r := c.handle(encode(&wire.ConnectedPing{Time: 1234}), ctlT0.Add(5*time.Second))
	if ev != evNone || len(r) != 1 || r[0].rel != wire.Unreliable {
		t.Fatalf("ping: got %v with %v, want one unreliable pong", ev, r)
	}
	var pong wire.ConnectedPong
	if _, err := pong.Decode(r[0].b); err != nil || pong.PingTime != 1234 || pong.PongTime != 5000 {
		t.Errorf("pong: got %+v (%v), want ping 1234 pong 5000", pong, err)
	}

	// Our own ping's pong gives an exact round trip, smoothed 7/8.
	sent := ctlT0.Add(time.Second)
	p := c.ping(sent)
	var ping wire.ConnectedPing
	if _, err := ping.Decode(p.b); err != nil || ping.Time != 1000 {
		t.Fatalf("ping: got %+v (%v), want time 1000", ping, err)
	}
	c.handle(encode(&wire.ConnectedPong{PingTime: 1000, PongTime: 3}), sent.Add(40*time.Millisecond))
	if c.latency != 40*time.Millisecond {
		t.Errorf("first sample: got %v, want 40ms", c.latency)
	}
	sent = ctlT0.Add(2 * time.Second)
	c.ping(sent)
	c.handle(encode(&wire.ConnectedPong{PingTime: 2000}), sent.Add(80*time.Millisecond))
	if want := (7*40*time.Millisecond + 80*time.Millisecond) / 8; c.latency != want {
		t.Errorf("second sample: got %v, want %v", c.latency, want)
	}
	// A pong of an earlier ping counts from its timestamp; an implausible
	// one is ignored.
	before := c.latency
	c.handle(encode(&wire.ConnectedPong{PingTime: 10_000_000}), sent)
	c.handle(encode(&wire.ConnectedPong{PingTime: -1 << 40}), sent)
	if c.latency != before {
		t.Errorf("implausible pongs: latency %v, want %v", c.latency, before)
	}
	c.handle(encode(&wire.ConnectedPong{PingTime: 1900}), ctlT0.Add(2100*time.Millisecond))
	if want := (7*before + 200*time.Millisecond) / 8; c.latency != want {
		t.Errorf("earlier ping's pong: got %v, want %v", c.latency, want)
	}
}

func TestControlEvents(t *testing.T) {
	c := newControl(false, ctlClient, ctlT0)
	for _, tc := range []struct {
		name string
		msg  []byte
		want ctlEvent
	}{
		{"disconnect", []byte{wire.IDDisconnectionNotification}, evPeerClosed},
		{"game batch", []byte{0xfe, 1, 2}, evData},
		{"empty", nil, evMalformed},
		{"truncated ping", []byte{wire.IDConnectedPing, 1}, evMalformed},
		{"truncated pong", []byte{wire.IDConnectedPong}, evMalformed},
		{"truncated request", []byte{wire.IDConnectionRequest, 1, 2}, evMalformed},
	} {
		if ev, _ := c.handle(tc.msg, ctlT0); ev != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, ev, tc.want)
		}
	}
	ev, r := c.handle([]byte{wire.IDDetectLostConnections}, ctlT0.Add(time.Second))
	if ev != evNone || len(r) != 1 || r[0].b[0] != wire.IDConnectedPing {
		t.Errorf("detect lost connections: got %v with %v, want a ping", ev, r)
	}
	if d := disconnect(true); !bytes.Equal(d.b, []byte{wire.IDDisconnectionNotification}) || d.rel != wire.ReliableOrdered {
		t.Errorf("graceful disconnect: got %v", d)
	}
	if d := disconnect(false); d.rel != wire.Unreliable {
		t.Errorf("abort disconnect: got %v, want unreliable", d.rel)
	}
}

// Replies are built in the control's own buffer: handling a message
// allocates nothing.
func TestControlAllocs(t *testing.T) {
	c := newControl(false, ctlClient, ctlT0)
	ping := encode(&wire.ConnectedPing{Time: 1})
	if n := testing.AllocsPerRun(100, func() { c.handle(ping, ctlT0) }); n != 0 {
		t.Errorf("ping: got %v allocations, want 0", n)
	}
}
