package raknet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/simnet"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// A path that silently drops datagrams above a size makes the dialer fall
// back to a smaller probe, and both ends then keep under it.
func TestDialMTUFallback(t *testing.T) {
	tests := []struct {
		name  string
		limit int // the largest UDP payload the path carries
		want  int
	}{
		{"all pass", 1500, DefaultMaxMTU},
		{"1492 dropped", 1200 - ipv4Overhead, 1200},
		{"1200 dropped", 1000, MinMTU},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				l := s.listen(ListenConfig{})
				big := func(b []byte) bool { return len(b) > tc.limit }
				f := &filterConn{dropWrite: big, dropRead: big}
				d := Dialer{ListenPacket: s.filter(f), limits: limits{dialRetry: 50 * time.Millisecond}}
				client, server := s.dial(d, l)
				if client.MTU() != tc.want || server.MTU() != tc.want {
					t.Fatalf("MTU: got client %d, server %d, want %d", client.MTU(), server.MTU(), tc.want)
				}
				// The probes went out largest first, each size that got no
				// answer dialAttempts times.
				count := map[int]int{}
				probes := f.sizesOf(wire.IDOpenConnectionRequest1)
				for i, size := range probes {
					count[size]++
					if i > 0 && size > probes[i-1] {
						t.Errorf("probe sizes: got %v, want them decreasing", probes)
					}
				}
				for _, mtu := range dialMTUs {
					size := mtu - ipv4Overhead
					switch {
					case size > tc.limit && count[size] != dialAttempts:
						t.Errorf("probes of %d bytes: got %d, want %d", size, count[size], dialAttempts)
					case size <= tc.limit && probes[0] == dialMTUs[0]-ipv4Overhead && size == tc.want-ipv4Overhead && count[size] == 0:
						t.Errorf("no probe of %d bytes", size)
					}
				}
				if len(probes) == 0 || probes[0] != dialMTUs[0]-ipv4Overhead {
					t.Errorf("probe sizes: got %v, want %d first", probes, dialMTUs[0]-ipv4Overhead)
				}
				msg := bytes.Repeat([]byte{0xfe, 7}, 50<<10)
				for _, pair := range [][2]*Conn{{client, server}, {server, client}} {
					if _, err := pair[0].Write(msg); err != nil {
						t.Fatal(err)
					}
					_ = pair[1].SetReadDeadline(time.Now().Add(3 * time.Second))
					if got, err := pair[1].ReadPacket(); err != nil || !bytes.Equal(got, msg) {
						t.Fatalf("read: got %d bytes, %v, want %d", len(got), err, len(msg))
					}
				}
			})
		})
	}
}

// A server that accepts only RakNet 10 answers 11 with 0x19; the dialer
// retries with 10.
func TestDialVersionFallback(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{ProtocolVersions: []byte{10}})
		f := &filterConn{}
		d := Dialer{ListenPacket: s.filter(f), limits: limits{dialRetry: 100 * time.Millisecond}}
		s.dial(d, l)
		var offered []byte
		for _, b := range f.written() {
			if b[0] == wire.IDOpenConnectionRequest1 {
				offered = append(offered, b[1+len(wire.Magic)])
			}
		}
		if len(offered) < 2 || offered[0] != 11 || offered[len(offered)-1] != 10 {
			t.Errorf("protocols offered: got %v, want 11 first and 10 last", offered)
		}
	})
}

func TestDialIncompatibleVersion(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		l := s.listen(ListenConfig{ProtocolVersions: []byte{9}})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := s.dialer(Dialer{}).DialContext(ctx, l.Addr().String())
		if !errors.Is(err, ErrIncompatibleProtocol) {
			t.Fatalf("dial: got %v, want ErrIncompatibleProtocol", err)
		}
	})
}

// fakeServer answers each datagram to a socket of the network with
// reply(datagram), or nothing when reply returns nil.
func (s *simNet) fakeServer(reply func(b []byte) [][]byte) net.Addr {
	s.t.Helper()
	c, err := s.n.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	pc := c.(*simnet.Conn)
	done := make(chan struct{})
	s.t.Cleanup(func() {
		_ = pc.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, maxDatagramSize)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			for _, out := range reply(buf[:n]) {
				_, _ = pc.WriteToUDPAddrPort(out, from)
			}
		}
	}()
	return pc.LocalAddr()
}

// Pong data is returned with or without a valid length prefix.
func TestPingLenientPong(t *testing.T) {
	data := []byte("MCPE;odd;1;2;")
	pongHead := func(ping []byte) []byte {
		b := append([]byte{wire.IDUnconnectedPong}, ping[1:9]...)
		b = binary.BigEndian.AppendUint64(b, 77)
		return append(b, wire.Magic[:]...)
	}
	tests := []struct {
		name string
		tail func() []byte
		want []byte
	}{
		{"length prefix", func() []byte { return append([]byte{0, byte(len(data))}, data...) }, data},
		{"no length prefix", func() []byte { return data }, data},
		{"length past the end", func() []byte { return append([]byte{0, 200}, data...) }, append([]byte{0, 200}, data...)},
		{"empty", func() []byte { return nil }, []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				addr := s.fakeServer(func(b []byte) [][]byte {
					if b[0] != wire.IDUnconnectedPing {
						return nil
					}
					return [][]byte{append(pongHead(b), tc.tail()...)}
				})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				got, err := s.dialer(Dialer{}).PingContext(ctx, addr.String())
				if err != nil || !bytes.Equal(got, tc.want) {
					t.Fatalf("ping: got %q, %v, want %q", got, err, tc.want)
				}
			})
		})
	}
}

func TestPingTimeout(t *testing.T) {
	inSim(t, func(t *testing.T, s *simNet) {
		addr := s.fakeServer(func([]byte) [][]byte { return nil })
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.dialer(Dialer{}).PingContext(ctx, addr.String())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ping a silent server: got %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 300*time.Millisecond {
			t.Errorf("ping took %v, want 300ms", d)
		}
	})
}

// Dial gives up when ctx ends, in each phase of the handshake, and leaves
// no goroutine behind (synctest fails a bubble whose goroutines outlive
// it).
func TestDialContextEnds(t *testing.T) {
	offline := func(b []byte) [][]byte {
		switch b[0] {
		case wire.IDOpenConnectionRequest1:
			r := wire.OpenConnectionReply1{ServerGUID: 1, MTU: 1400}
			return [][]byte{r.Append(nil)}
		case wire.IDOpenConnectionRequest2:
			r := wire.OpenConnectionReply2{ServerGUID: 1, MTU: 1400}
			return [][]byte{r.Append(nil)}
		}
		return nil // never accepts the ConnectionRequest
	}
	tests := []struct {
		name  string
		reply func([]byte) [][]byte
	}{
		{"silent", func([]byte) [][]byte { return nil }},
		{"no ConnectionRequestAccepted", offline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inSim(t, func(t *testing.T, s *simNet) {
				addr := s.fakeServer(tc.reply)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := s.dialer(Dialer{}).DialContext(ctx, addr.String())
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) && !isTimeout(err) {
					t.Fatalf("dial: got %v, want a deadline error", err)
				}
				var oe *net.OpError
				if !errors.As(err, &oe) || oe.Op != "dial" || oe.Net != "raknet" {
					t.Errorf("dial error: got %#v, want *net.OpError", err)
				}
				if d := time.Since(start); d != 300*time.Millisecond {
					t.Errorf("dial took %v, want 300ms", d)
				}
			})
		})
	}
}

// isTimeout reports whether err is a net.Error that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
