package reliability

import (
	"bytes"
	"testing"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// fragments cuts msg into count fragments of size bytes but the last, as
// RakNet senders do, or into the sizes given.
func fragments(msg []byte, sizes ...int) [][]byte {
	var out [][]byte
	for _, n := range sizes {
		out = append(out, msg[:n])
		msg = msg[n:]
	}
	return out
}

// Reassembly returns the message whatever order its fragments come in,
// and places fragments of RakNet's layout (one size, a last one no
// larger) straight into one buffer, the message, never joining parts; a
// fragment that breaks the layout still gives the right message.
func TestAssemblerLayouts(t *testing.T) {
	msg := make([]byte, maxDirectSplit+1)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	cases := []struct {
		name   string
		sizes  []int
		order  []int
		direct bool // reassembled in one buffer
	}{
		{"in order", []int{300, 300, 300, 100}, []int{0, 1, 2, 3}, true},
		{"reversed", []int{300, 300, 300, 100}, []int{3, 2, 1, 0}, true},
		{"last first", []int{300, 300, 300, 100}, []int{3, 0, 1, 2}, true},
		{"last as large", []int{250, 250, 250, 250}, []int{1, 3, 0, 2}, true},
		{"one fragment", []int{1000}, []int{0}, true},
		{"sizes differ", []int{300, 200, 400, 100}, []int{0, 1, 2, 3}, false},
		{"last larger", []int{100, 100, 800}, []int{0, 2, 1}, false},
		{"last larger, first", []int{100, 100, 800}, []int{2, 0, 1}, false},
		{"over maxDirectSplit", []int{maxDirectSplit / 2, maxDirectSplit / 2, 1}, []int{0, 1, 2}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := assembler{maxCount: 64, maxConc: 4, maxBytes: 1 << 20, timeout: time.Second, maxPart: 300}
			parts := fragments(msg, tc.sizes...)
			total := 0
			for _, n := range tc.sizes {
				total += n
			}
			want := msg[:total]
			var whole []byte
			for k, i := range tc.order {
				f := wire.Frame{Reliability: wire.ReliableOrdered, Split: true, SplitCount: uint32(len(parts)), SplitID: 9, SplitIndex: uint32(i), Payload: parts[i]}
				if m := a.find(9); m != nil && k == len(tc.order)-1 {
					if got := m.parts == nil; got != tc.direct {
						t.Errorf("one buffer before the last fragment: got %v, want %v", got, tc.direct)
					}
				}
				got, done, err := a.add(&f, t0)
				if err != nil {
					t.Fatalf("add fragment %d: %v", i, err)
				}
				// A duplicate of what arrived changes nothing.
				if !done {
					if _, dup, err := a.add(&f, t0); err != nil || dup {
						t.Fatalf("duplicate fragment %d: got %v, %v, want no message", i, dup, err)
					}
				}
				if done {
					whole = got.Payload
				}
			}
			if !bytes.Equal(whole, want) {
				t.Fatalf("got %d bytes, want the %d of the message back", len(whole), len(want))
			}
			if a.bytes != 0 || a.committed != 0 || len(a.list) != 0 {
				t.Errorf("after: got %d bytes, %d committed, %d in progress, want none", a.bytes, a.committed, len(a.list))
			}
		})
	}
}

// BenchmarkReassemble measures a 4 KiB message in 4 fragments through
// the layer, from datagrams to delivery: allocs/op are the message's
// buffer and the bookkeeping of its reassembly.
func BenchmarkReassemble(b *testing.B) {
	for _, order := range []string{"in order", "reversed"} {
		b.Run(order, func(b *testing.B) {
			var got int
			r := withSink(New(Config{MaxDatagram: testMaxDatagram}, t0), func(m []byte, owned bool) bool {
				got += len(m)
				return false
			})
			msg := make([]byte, 4096)
			size := (len(msg) + 3) / 4
			dgrams := make([][]byte, 4)
			var n uint32
			build := func(id uint32) {
				for i := range 4 {
					f := wire.Frame{Reliability: wire.ReliableOrdered, ReliableIndex: wire.Uint24(n), OrderIndex: wire.Uint24(id), Split: true, SplitCount: 4, SplitID: uint16(id), SplitIndex: uint32(i), Payload: msg[i*size : min(len(msg), (i+1)*size)]}
					j := i
					if order == "reversed" {
						j = 3 - i
					}
					h := wire.DatagramHeader{Flags: wire.FlagValid, Number: wire.Uint24(n)}
					dgrams[j] = f.Append(h.Append(dgrams[j][:0]))
					n++
				}
			}
			id := uint32(0)
			b.ReportAllocs()
			for b.Loop() {
				build(id)
				id++
				for _, d := range dgrams {
					if err := r.handleT(t0, d); err != nil {
						b.Fatal(err)
					}
				}
			}
			if got != b.N*len(msg) {
				b.Fatalf("delivered %d bytes, want %d", got, b.N*len(msg))
			}
		})
	}
}
