package wire

import (
	"errors"
	"io"
	"testing"
)

func TestConnectedPingGolden(t *testing.T) {
	m := ConnectedPing{Time: 0x0102030405060708}
	checkGolden(t, &m, unhex(t, "00 | 01 02 03 04 05 06 07 08"))
}

func TestConnectedPongGolden(t *testing.T) {
	m := ConnectedPong{PingTime: 1, PongTime: -1}
	checkGolden(t, &m, unhex(t, "03 | 00 00 00 00 00 00 00 01 | ff ff ff ff ff ff ff ff"))
}

// TestConnectedPongTruncated checks the documented leniency: a pong that
// ends before the ping time fails, and one that ends anywhere in the pong
// time decodes with PongTime 0, consuming only the ping time.
func TestConnectedPongTruncated(t *testing.T) {
	m := ConnectedPong{PingTime: 7, PongTime: 8}
	b := m.Append(nil)
	for k := range len(b) {
		var got ConnectedPong
		n, err := got.Decode(b[:k])
		if k < 9 {
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
				t.Errorf("Decode(first %d bytes): got %v, %v, want 0, %v", k, n, err, io.ErrUnexpectedEOF)
			}
			continue
		}
		want := ConnectedPong{PingTime: 7}
		if err != nil || n != 9 || got != want {
			t.Errorf("Decode(first %d bytes): got %+v, %v, %v, want %+v, 9, nil", k, got, n, err, want)
		}
	}
}
