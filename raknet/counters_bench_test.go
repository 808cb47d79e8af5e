package raknet

import (
	"sync/atomic"
	"testing"
)

// BenchmarkCountersPong measures the counting one pong costs a reader (a
// datagram in, a ping, a datagram out) when every reader counts into one
// set (shared) and into a set of its own (split), from as many goroutines
// as GOMAXPROCS, as readers of that many sockets would.
func BenchmarkCountersPong(b *testing.B) {
	pong := func(n *counters) {
		n.in(33)
		n.pings.Add(1)
		n.out(120)
	}
	b.Run("shared", func(b *testing.B) {
		var n counters
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				pong(&n)
			}
		})
	})
	b.Run("split", func(b *testing.B) {
		var next atomic.Int32
		var sets [8]struct {
			n counters
			_ [128]byte
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := &sets[next.Add(1)%8].n
			for pb.Next() {
				pong(n)
			}
		})
	})
}
