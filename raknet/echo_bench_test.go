package raknet

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// echoPair is a dialed connection and its accepted end on loopback UDP,
// the accepted end echoing every message it reads until it closes.
type echoPair struct {
	client, server *Conn
}

func newEchoPair(tb testing.TB) *echoPair {
	tb.Helper()
	l, err := ListenConfig{}.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := Dialer{}.DialContext(ctx, l.Addr().String())
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	tb.Cleanup(func() { _ = client.Close() })
	server, err := l.AcceptConn()
	if err != nil {
		tb.Fatalf("accept: %v", err)
	}
	simEcho(tb, server)
	return &echoPair{client: client, server: server}
}

// exchange writes msg and reads the echo.
func (p *echoPair) exchange(tb testing.TB, msg []byte) {
	if _, err := p.client.Write(msg); err != nil {
		tb.Fatalf("write: %v", err)
	}
	got, err := p.client.ReadPacket()
	if err != nil {
		tb.Fatalf("read: %v", err)
	}
	if len(got) != len(msg) {
		tb.Fatalf("got %d bytes back, want %d", len(got), len(msg))
	}
}

// BenchmarkEcho measures request/response round trips over loopback UDP:
// the client writes a message, the server reads it and writes it back, the
// client reads the echo. ns/op is the mean round trip; p50 and p99 are
// reported too, and the datagrams each side sent per exchange, ACKs
// included. allocs/op counts both sides' allocations per exchange.
func BenchmarkEcho(b *testing.B) {
	for _, size := range []int{100, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			p := newEchoPair(b)
			msg := bytes.Repeat([]byte{0xfe}, size)
			for range 1000 {
				p.exchange(b, msg)
			}
			c0, s0 := p.client.Stats().DatagramsSent, p.server.Stats().DatagramsSent
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				p.exchange(b, msg)
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
			}
			b.StopTimer()
			c1, s1 := p.client.Stats().DatagramsSent, p.server.Stats().DatagramsSent
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(c1-c0)/float64(b.N), "client-dgrams/op")
			b.ReportMetric(float64(s1-s0)/float64(b.N), "server-dgrams/op")
		})
	}
}
