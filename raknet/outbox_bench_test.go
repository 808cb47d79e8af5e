//go:build linux

package raknet

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
)

// BenchmarkSendReplyAndAck measures a connection's pass writing a 1 KiB
// reply and the ACK leaving with it to a peer on loopback, from a
// goroutine other than the socket's reader: as two writes (batch=off) and
// as one sendmmsg (batch=on). One op is one pass; cpu-ns/op is the
// process's CPU, the peer's draining included.
func BenchmarkSendReplyAndAck(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("batch=%v", on), func(b *testing.B) {
			var e *endpoint
			withBatching(on, func() {
				pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
				if err != nil {
					b.Fatal(err)
				}
				e = newEndpointSize(batchSize, pc)
			})
			b.Cleanup(e.close)
			sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				b.Fatal(err)
			}
			drained := make(chan int)
			go func() {
				buf := make([]byte, MaxMTU)
				n := 0
				for {
					if _, _, err := sink.ReadFromUDPAddrPort(buf); err != nil {
						drained <- n
						return
					}
					n++
				}
			}()
			to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
			c := &Conn{ep: e, wap: netip.AddrPortFrom(to.Addr(), to.Port())}
			reply, ack := make([]byte, 1024+40), make([]byte, 12)
			cpu0 := processCPU(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out := outboxes.Get().(*outbox)
				for _, p := range [][]byte{reply, ack} {
					bp := datagramBuffers.Get().(*[]byte)
					*bp = append((*bp)[:0], p...)
					out.add(bp, 1)
				}
				c.send(out)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			_ = sink.Close()
			<-drained
		})
	}
}
