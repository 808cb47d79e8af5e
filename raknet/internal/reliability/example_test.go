package reliability_test

import (
	"fmt"
	"time"

	"github.com/basaltmc/basalt/raknet/internal/reliability"
	"github.com/basaltmc/basalt/raknet/internal/wire"
)

// Two layers over a perfect link, driven as the package doc shows: one
// sends a message, its datagrams are handed to the other, which delivers
// it, and the ACK goes back.
func Example() {
	now := time.Unix(1_700_000_000, 0)
	var got [][]byte
	recv := reliability.New(reliability.Config{
		MaxDatagram: 1400 - 28, // required: the MTU less the IP and UDP headers
	}, now)
	defer recv.Close()
	send := reliability.New(reliability.Config{MaxDatagram: 1400 - 28}, now)
	defer send.Close()

	if _, err := send.Send([]byte("hello"), wire.ReliableOrdered, 0); err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 0, 1500)
	for d := send.AppendDatagram(buf[:0], now); d != nil; d = send.AppendDatagram(buf[:0], now) {
		_ = recv.HandleDatagram(now, d) // may deliver messages
	}
	for msg, _, ok := recv.Next(); ok; msg, _, ok = recv.Next() {
		// Kept for the reader: counts as held until Consumed. One not
		// kept would be given back at once with Release.
		got = append(got, append([]byte(nil), msg...))
	}
	recv.Consumed(now, len(got[0])) // the reader took it
	now = now.Add(time.Second)      // past the ACK delay
	for d := recv.AppendDatagram(buf[:0], now); d != nil; d = recv.AppendDatagram(buf[:0], now) {
		_ = send.HandleDatagram(now, d) // the ACK
	}
	fmt.Printf("%s, in flight: %d\n", got[0], send.Stats().InFlight)
	if d := send.NextDeadline(now); d.IsZero() {
		fmt.Println("nothing due")
	}
	// Output:
	// hello, in flight: 0
	// nothing due
}
