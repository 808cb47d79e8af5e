package raknet

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

var initServer = netip.MustParseAddrPort("127.0.0.1:19132")

// probe polls h at now and returns the OpenConnectionRequest1 it sends.
func probe(t *testing.T, h *initiator, now time.Time) (size int, proto byte) {
	t.Helper()
	out, _ := h.poll(nil, now)
	if out == nil {
		t.Fatalf("poll at %v: got nothing, want a request", now.Sub(ctlT0))
	}
	var m wire.OpenConnectionRequest1
	if _, err := m.Decode(out); err != nil {
		t.Fatalf("decode request1: %v", err)
	}
	return m.Size, m.Protocol
}

// Each MTU is probed attempts times, retry apart, largest first; then the
// smallest is probed on until the dial gives up.
func TestInitiatorProbeSchedule(t *testing.T) {
	h := newInitiator(initServer, -1, 11, 1492, 3, 500*time.Millisecond)
	now := ctlT0
	var sizes []int
	for range 12 {
		size, _ := probe(t, h, now)
		sizes = append(sizes, size+ipv4Overhead)
		if out, next := h.poll(nil, now.Add(499*time.Millisecond)); out != nil || !next.Equal(now.Add(500*time.Millisecond)) {
			t.Fatalf("early poll: got %x %v, want nothing until %v", out, next, now.Add(500*time.Millisecond))
		}
		now = now.Add(500 * time.Millisecond)
	}
	want := []int{1492, 1492, 1492, 1200, 1200, 1200, 576, 576, 576, 576, 576, 576}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("probes: got %v, want %v", sizes, want)
		}
	}
	err := h.failure(context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "OPEN_CONNECTION_REQUEST_1") {
		t.Errorf("failure: got %v, want the deadline, naming Request1", err)
	}
}

func TestInitiatorHandshake(t *testing.T) {
	h := newInitiator(initServer, -1, 11, 1400, 3, 500*time.Millisecond)
	if size, _ := probe(t, h, ctlT0); size+ipv4Overhead != 1200 {
		t.Fatalf("first probe within a 1400 cap: got %d, want 1200", size+ipv4Overhead)
	}
	r1 := encode(&wire.OpenConnectionReply1{ServerGUID: 5, MTU: 1100, Security: true, Cookie: 0xdeadbeef})
	if done, err := h.handle(r1, ctlT0.Add(time.Millisecond)); done || err != nil || h.phase != phaseRequest2 {
		t.Fatalf("reply1: got %v %v in %v, want request2", done, err, h.phase)
	}
	out, _ := h.poll(nil, ctlT0.Add(time.Millisecond))
	var req wire.OpenConnectionRequest2
	if _, err := req.Decode(out); err != nil || !req.HasCookie || req.Cookie != 0xdeadbeef || req.MTU != 1100 || req.ClientGUID != -1 || req.ServerAddr != initServer {
		t.Fatalf("request2: got %+v (%v), want the cookie echoed at MTU 1100", req, err)
	}
	r2 := encode(&wire.OpenConnectionReply2{ServerGUID: 5, ClientAddr: ctlClient, MTU: 1000})
	if done, err := h.handle(r2, ctlT0.Add(2*time.Millisecond)); !done || err != nil || h.mtu != 1000 {
		t.Fatalf("reply2: got %v %v at MTU %d, want done at 1000", done, err, h.mtu)
	}
	if out, _ := h.poll(nil, ctlT0.Add(time.Hour)); out != nil {
		t.Errorf("poll once open: got %x, want nothing", out)
	}
}

// Request2 is sent on, retry apart, until the dial gives up.
func TestInitiatorRequest2Retried(t *testing.T) {
	h := newInitiator(initServer, -1, 11, 576, 2, time.Second)
	probe(t, h, ctlT0)
	h.handle(encode(&wire.OpenConnectionReply1{ServerGUID: 5, MTU: 576}), ctlT0)
	now := ctlT0
	for i := range 10 {
		out, next := h.poll(nil, now)
		if out == nil || out[0] != wire.IDOpenConnectionRequest2 || !next.Equal(now.Add(time.Second)) {
			t.Fatalf("request2 try %d: got %x, next %v", i, out, next)
		}
		now = now.Add(time.Second)
	}
	if err := h.failure(context.Canceled); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "OPEN_CONNECTION_REQUEST_2") {
		t.Errorf("failure: got %v, want the cause, naming Request2", err)
	}
}

func TestInitiatorVersionFallback(t *testing.T) {
	incompatible := func(v byte) []byte {
		return encode(&wire.IncompatibleProtocolVersion{Protocol: v, ServerGUID: 5})
	}
	h := newInitiator(initServer, -1, 11, 1492, 3, 500*time.Millisecond)
	probe(t, h, ctlT0)
	if _, err := h.handle(incompatible(10), ctlT0); err != nil {
		t.Fatalf("fallback to 10: %v", err)
	}
	if _, proto := probe(t, h, ctlT0); proto != 10 {
		t.Errorf("after fallback: probe in %d, want 10 at once", proto)
	}
	if _, err := h.handle(incompatible(10), ctlT0); err != nil {
		t.Errorf("late answer to an earlier probe: %v, want ignored", err)
	}
	if _, err := h.handle(incompatible(11), ctlT0); !errors.Is(err, ErrIncompatibleProtocol) {
		t.Errorf("second switch: got %v, want ErrIncompatibleProtocol", err)
	}
	h = newInitiator(initServer, -1, 11, 1492, 3, 500*time.Millisecond)
	probe(t, h, ctlT0)
	if _, err := h.handle(incompatible(9), ctlT0); !errors.Is(err, ErrIncompatibleProtocol) {
		t.Errorf("version 9: got %v, want ErrIncompatibleProtocol", err)
	}
}

func TestInitiatorRefused(t *testing.T) {
	for _, id := range []byte{wire.IDNoFreeIncomingConnections, wire.IDAlreadyConnected, wire.IDConnectionBanned, wire.IDIPRecentlyConnected} {
		h := newInitiator(initServer, -1, 11, 1492, 3, 500*time.Millisecond)
		probe(t, h, ctlT0)
		if _, err := h.handle(encode(&wire.Notice{ID: id, ServerGUID: 5}), ctlT0); !errors.Is(err, ErrConnectionRefused) {
			t.Errorf("notice %#x: got %v, want ErrConnectionRefused", id, err)
		}
	}
}
