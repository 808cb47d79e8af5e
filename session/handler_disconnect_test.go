package session

import (
	"context"
	"errors"
	"testing"

	"github.com/basaltmc/basalt/integration/leaktest"
)

// leaveConn is a fakeConn of either transport.
type leaveConn interface {
	Conn
	send(b []byte)
	next(t *testing.T) []byte
	login(t *testing.T)
	negotiate(t *testing.T)
	sync(t *testing.T)
	waitClosed(t *testing.T)
	noMoreWrites(t *testing.T)
}

// TestClientDisconnectIsALeave checks that the client's own Disconnect ends
// the session at once, over RakNet and over a transport that frames and
// encrypts itself (NetherNet), before and after login: Run and HandleClose
// get a *LeaveError with the client's reason, what the handler buffered is
// not sent, and no Disconnect goes back.
func TestClientDisconnectIsALeave(t *testing.T) {
	bye := disconnect{Reason: DisconnectReasonDisconnected, Message: "Client leaving"}
	transports := []struct {
		name string
		conn func() leaveConn
	}{
		{"raknet", func() leaveConn { return newFakeConn() }},
		{"nethernet", func() leaveConn { return &framedConn{fakeConn: newFakeConn(), key: &testClientKey().PublicKey} }},
	}
	tests := []struct {
		name string
		// loggedIn: the Disconnect comes after the login, not before it.
		loggedIn bool
		payload  []byte
		want     LeaveError
	}{
		{"playing", true, bye.Append(nil), LeaveError{Reason: DisconnectReasonDisconnected, Message: "Client leaving"}},
		{"playing, screen hidden", true, (&disconnect{Reason: 7, HideScreen: true}).Append(nil), LeaveError{Reason: 7}},
		// A Disconnect that does not read is still a leave.
		{"playing, malformed", true, []byte{0x80}, LeaveError{}},
		{"before login", false, bye.Append(nil), LeaveError{Reason: DisconnectReasonDisconnected, Message: "Client leaving"}},
	}
	for _, tr := range transports {
		for _, tc := range tests {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				leaktest.Check(t)
				c := tr.conn()
				h := &recordingHandler{Handler: funcHandler{packet: func(s *Session, p Packet) error {
					// Buffered, never flushed: the client has left.
					return s.WritePacket(probeID, []byte("unsent"))
				}}}
				s := New(c, Config{NewHandler: handlerOf(h)})
				done := make(chan error, 1)
				go func() { done <- s.Run(context.Background()) }()
				if tc.loggedIn {
					c.login(t)
					c.send(clientBatch(t, plain, Packet{ID: probeID}, Packet{ID: IDDisconnect, Payload: tc.payload}))
				} else {
					c.negotiate(t)
					c.send(clientBatch(t, plain, Packet{ID: IDDisconnect, Payload: tc.payload}))
				}
				err := wait(t, done)
				le, ok := errors.AsType[*LeaveError](err)
				if !ok || *le != tc.want {
					t.Fatalf("Run: got %v, want %+v", err, tc.want)
				}
				if !errors.Is(err, ErrClientLeft) {
					t.Errorf("Run: %v does not wrap ErrClientLeft", err)
				}
				c.waitClosed(t)
				c.noMoreWrites(t)
				if tc.loggedIn {
					if n := h.closes.Load(); n != 1 {
						t.Fatalf("HandleClose called %d times, want 1", n)
					}
					if got := *h.closeErr.Load(); got != err {
						t.Errorf("HandleClose: got %v, want %v", got, err)
					}
				}
			})
		}
	}
}

func TestLeaveErrorMessage(t *testing.T) {
	tests := []struct {
		e    LeaveError
		want string
	}{
		{LeaveError{Reason: DisconnectReasonDisconnected, Message: "Client leaving"}, "client left: Client leaving"},
		{LeaveError{Reason: DisconnectReasonDisconnected}, "client left (Disconnected)"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
