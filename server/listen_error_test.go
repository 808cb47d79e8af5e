package server

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

// TestListenPortInUse checks a game port held by another program is
// reported with its key, the address once, and what to do.
func TestListenPortInUse(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	addr := pc.LocalAddr().String()
	srv := Config{AddressV4: addr}.New()
	err = srv.Listen()
	defer srv.Close()
	if err == nil {
		t.Fatal("got nil error, want the port in use")
	}
	msg := err.Error()
	if !strings.Contains(msg, "network.address_v4 "+addr+":") || strings.Count(msg, addr) != 1 ||
		!strings.Contains(msg, "in use") || !strings.Contains(msg, "free port") {
		t.Errorf("got %q, want the key, the address once, the cause and the fix", msg)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("got %v, want it to wrap EADDRINUSE", err)
	}
}

func TestListenErrorMessages(t *testing.T) {
	inner := &net.OpError{Op: "listen", Net: "udp", Err: &net.OpError{Op: "listen", Net: "udp", Err: errors.New("boom")}}
	tests := []struct {
		err  error
		want string
	}{
		{syscall.EACCES, "network.address_v4 0.0.0.0:80: permission denied, as ports below 1024 need root or CAP_NET_BIND_SERVICE; set network.address_v4 to a port of 1024 or above, or grant the binary CAP_NET_BIND_SERVICE"},
		{inner, "network.address_v4 0.0.0.0:80: boom; set network.address_v4 to an address of this machine with a free port"},
	}
	for _, tc := range tests {
		e := &listenError{key: "network.address_v4", addr: "0.0.0.0:80", err: tc.err}
		if got := e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
