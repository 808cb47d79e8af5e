package nethernet

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestDemux(t *testing.T) {
	d := NewDemux(2)
	var wrote []byte
	var wroteTo netip.AddrPort
	d.Bind(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19132}, func(b []byte, to netip.AddrPort) error {
		wrote, wroteTo = append([]byte(nil), b...), to
		return nil
	})
	peer := netip.MustParseAddrPort("127.0.0.1:5000")
	src := []byte("stun")
	d.Deliver(src, peer)
	src[0] = 'X' // Deliver copied it
	d.Deliver([]byte("dtls"), peer)
	d.Deliver([]byte("third"), peer) // the queue holds 2
	if d.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", d.Dropped())
	}
	buf := make([]byte, 100)
	for _, want := range []string{"stun", "dtls"} {
		n, from, err := d.ReadFrom(buf)
		if err != nil || string(buf[:n]) != want || from.String() != peer.String() {
			t.Fatalf("ReadFrom = %q from %v, %v; want %q from %v", buf[:n], from, err, want, peer)
		}
	}
	_ = d.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, _, err := d.ReadFrom(buf); err == nil {
		t.Fatal("ReadFrom past the deadline: nil error")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("ReadFrom past the deadline: %v, want a timeout", err)
	}
	_ = d.SetReadDeadline(time.Time{})
	if n, err := d.WriteTo([]byte("answer"), net.UDPAddrFromAddrPort(peer)); err != nil || n != 6 {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
	if string(wrote) != "answer" || wroteTo != peer {
		t.Errorf("wrote %q to %v", wrote, wroteTo)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := d.ReadFrom(buf)
		done <- err
	}()
	_ = d.Close()
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("ReadFrom after Close: %v, want io.EOF", err)
	}
	if _, err := d.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(peer)); err == nil {
		t.Error("WriteTo after Close: nil error")
	}
	d.Deliver([]byte("late"), peer) // dropped quietly
}

func BenchmarkDemuxDeliverRead(b *testing.B) {
	d := NewDemux(0)
	d.Bind(&net.UDPAddr{}, func([]byte, netip.AddrPort) error { return nil })
	peer := netip.MustParseAddrPort("127.0.0.1:5000")
	dgram := make([]byte, 1200)
	buf := make([]byte, 1500)
	b.ReportAllocs()
	for b.Loop() {
		d.Deliver(dgram, peer)
		if _, _, err := d.ReadFrom(buf); err != nil {
			b.Fatal(err)
		}
	}
}
