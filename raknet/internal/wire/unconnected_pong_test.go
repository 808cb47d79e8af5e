package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// motdExample is the Bedrock MOTD example from PROTOCOL.md.
const motdExample = "MCPE;Dedicated Server;527;1.19.1;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;"

func TestUnconnectedPongGolden(t *testing.T) {
	tests := []struct {
		name string
		msg  UnconnectedPong
		hex  string
	}{
		{
			"motd",
			UnconnectedPong{
				Time:       1700000000000,
				ServerGUID: -5192883181380620751, // 13253860892328930865 as u64
				Data:       []byte(motdExample),
			},
			"1c | 00 00 01 8b cf e5 68 00 | b7 ef 2c 42 75 b5 2e 31 |" + magicHex + "| 00 60 |" +
				"4d 43 50 45 3b 44 65 64 69 63 61 74 65 64 20 53 " + // MCPE;Dedicated S
				"65 72 76 65 72 3b 35 32 37 3b 31 2e 31 39 2e 31 " + // erver;527;1.19.1
				"3b 30 3b 31 30 3b 31 33 32 35 33 38 36 30 38 39 " + // ;0;10;1325386089
				"32 33 32 38 39 33 30 38 36 35 3b 42 65 64 72 6f " + // 2328930865;Bedro
				"63 6b 20 6c 65 76 65 6c 3b 53 75 72 76 69 76 61 " + // ck level;Surviva
				"6c 3b 31 3b 31 39 31 33 32 3b 31 39 31 33 33 3b ", // l;1;19132;19133;
		},
		{
			"empty", UnconnectedPong{Time: -1, ServerGUID: 1, Data: []byte{}},
			"1c | ff ff ff ff ff ff ff ff | 00 00 00 00 00 00 00 01 |" + magicHex + "| 00 00",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			checkGolden(t, &tc.msg, want)
		})
	}
}

// TestUnconnectedPongTruncated checks the lenient decode the doc comment
// promises: a prefix that ends inside the fixed fields fails, and a prefix
// that ends inside the length or the data decodes with the rest of the
// datagram (length bytes included) as its data, consuming everything.
func TestUnconnectedPongTruncated(t *testing.T) {
	const fixed = 1 + 8 + 8 + 16
	m := UnconnectedPong{Time: 1, ServerGUID: 2, Data: []byte(motdExample)}
	b := m.Append(nil)
	for k := range len(b) {
		var got UnconnectedPong
		n, err := got.Decode(b[:k])
		if k < fixed {
			if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
				t.Errorf("Decode(first %d bytes): got %v, %v, want 0, %v", k, n, err, io.ErrUnexpectedEOF)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decode(first %d bytes): got error %v, want nil", k, err)
			continue
		}
		if n != k {
			t.Errorf("Decode(first %d bytes) consumed: got %v, want %v", k, n, k)
		}
		if want := b[fixed:k]; !bytes.Equal(got.Data, want) {
			t.Errorf("Decode(first %d bytes) data: got %q, want %q", k, got.Data, want)
		}
		if got.Time != m.Time || got.ServerGUID != m.ServerGUID {
			t.Errorf("Decode(first %d bytes): got time %v guid %v, want %v %v", k, got.Time, got.ServerGUID, m.Time, m.ServerGUID)
		}
	}
}

func TestUnconnectedPongLenient(t *testing.T) {
	head := "1c | 00 00 00 00 00 00 00 01 | 00 00 00 00 00 00 00 02 |" + magicHex
	tests := []struct {
		name     string
		hex      string
		data     string
		consumed int
	}{
		{"no length prefix", head + "| 41", "A", 34},
		{"length larger than rest", head + "| 00 05 41 42", "\x00\x05AB", 37},
		{"trailing bytes after data", head + "| 00 02 41 42 43 44", "AB", 37},
		{"exact", head + "| 00 02 41 42", "AB", 37},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got UnconnectedPong
			n, err := got.Decode(unhex(t, tc.hex))
			if err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if n != tc.consumed {
				t.Errorf("Decode consumed: got %v, want %v", n, tc.consumed)
			}
			if string(got.Data) != tc.data {
				t.Errorf("Decode data: got %q, want %q", got.Data, tc.data)
			}
		})
	}
}

func TestUnconnectedPongTooLong(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("Append with %d bytes of data: got no panic, want one", MaxPongData+1)
		}
	}()
	m := UnconnectedPong{Data: make([]byte, MaxPongData+1)}
	m.Append(nil)
}
