package server

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/basaltmc/basalt/server/internal/servertest"
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
	srv := Config{Network: NetworkConfig{AddressV4: addr}}.New()
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

// TestListenErrorsSayTheFix checks every listener failure names its key and
// ends with a fix.
func TestListenErrorsSayTheFix(t *testing.T) {
	other := errors.New("boom")
	for _, err := range []error{syscall.EADDRINUSE, syscall.EACCES, syscall.EADDRNOTAVAIL, other} {
		for _, key := range []string{"network.address_v4", "network.address_v6", "metrics.address", "network.nethernet_ice_port"} {
			e := &listenError{key: key, addr: "0.0.0.0:80", err: err}
			servertest.Fixes(t, e, key, 0)
			if !errors.Is(e, err) {
				t.Errorf("%v: got it not wrapping %v", e, err)
			}
		}
	}
	for _, tc := range []struct {
		err error
		key string
	}{
		{fmt.Errorf("nethernet: TLS: %w", other), "network.nethernet_tls_cert"},
		{fmt.Errorf("nethernet: ICE socket: %w", syscall.EADDRINUSE), "network.nethernet_ice_port"},
		{fmt.Errorf("nethernet: signalling: %w", syscall.EADDRINUSE), "network.address_v4"},
		{fmt.Errorf("nethernet: signalling: %w", syscall.EACCES), "network.address_v4"},
		{fmt.Errorf("nethernet: %w", other), "network.nethernet"},
	} {
		err := netherNetListenError("network.address_v4", "0.0.0.0:19132", "0.0.0.0:19140", tc.err)
		servertest.Fixes(t, err, tc.key, 0)
		if !errors.Is(err, errors.Unwrap(tc.err)) {
			t.Errorf("%v: got it not wrapping %v", err, errors.Unwrap(tc.err))
		}
	}
}
