package wire

import (
	"errors"
	"testing"
)

func TestOpenConnectionRequest2Golden(t *testing.T) {
	tests := []struct {
		name string
		msg  OpenConnectionRequest2
		hex  string
	}{
		{
			"no cookie ipv4",
			OpenConnectionRequest2{ServerAddr: addrV4, MTU: 1492, ClientGUID: -2},
			"07 |" + magicHex + "| 04 80 ff ff fe 4a bc | 05 d4 | ff ff ff ff ff ff ff fe",
		},
		{
			"cookie ipv4",
			OpenConnectionRequest2{HasCookie: true, Cookie: 0xdeadbeef, ServerAddr: addrV4, MTU: 1400, ClientGUID: -2},
			"07 |" + magicHex + "| de ad be ef | 00 | 04 80 ff ff fe 4a bc | 05 78 | ff ff ff ff ff ff ff fe",
		},
		{
			"no cookie ipv6",
			OpenConnectionRequest2{ServerAddr: addrV6, MTU: 1400, ClientGUID: 1},
			"07 |" + magicHex + "| 06 17 00 4a bd 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 |" +
				"05 78 | 00 00 00 00 00 00 00 01",
		},
		{
			"cookie ipv6",
			OpenConnectionRequest2{HasCookie: true, Cookie: 1, ServerAddr: addrV6, MTU: 1400, ClientGUID: 1},
			"07 |" + magicHex + "| 00 00 00 01 | 00 |" +
				"06 17 00 4a bd 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 |" +
				"05 78 | 00 00 00 00 00 00 00 01",
		},
		{
			// A cookie whose first byte looks like an address version is
			// still told apart by the length.
			"cookie starting with 04",
			OpenConnectionRequest2{HasCookie: true, Cookie: 0x04000000, ServerAddr: addrV4, MTU: 1400, ClientGUID: -2},
			"07 |" + magicHex + "| 04 00 00 00 | 00 | 04 80 ff ff fe 4a bc | 05 78 | ff ff ff ff ff ff ff fe",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.msg, unhex(t, tc.hex))
		})
	}
}

func TestOpenConnectionRequest2ZeroMTU(t *testing.T) {
	m := OpenConnectionRequest2{ServerAddr: addrV4, ClientGUID: -2}
	if _, err := new(OpenConnectionRequest2).Decode(m.Append(nil)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Decode: got error %v, want %v", err, ErrInvalid)
	}
}

func TestOpenConnectionReply2Golden(t *testing.T) {
	tests := []struct {
		name string
		msg  OpenConnectionReply2
		hex  string
	}{
		{
			"ipv4",
			OpenConnectionReply2{ServerGUID: 0x0102030405060708, ClientAddr: addrV4b, MTU: 1400},
			"08 |" + magicHex + "| 01 02 03 04 05 06 07 08 | 04 3f 57 fe eb d4 31 | 05 78 | 00",
		},
		{
			"ipv6 encryption",
			OpenConnectionReply2{ServerGUID: 1, ClientAddr: addrV6, MTU: 576, Encryption: true},
			"08 |" + magicHex + "| 00 00 00 00 00 00 00 01 |" +
				"06 17 00 4a bd 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 |" +
				"02 40 | 01",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, &tc.msg, unhex(t, tc.hex))
		})
	}
}

func TestOpenConnectionReply2ZeroMTU(t *testing.T) {
	m := OpenConnectionReply2{ServerGUID: 1, ClientAddr: addrV4}
	if _, err := new(OpenConnectionReply2).Decode(m.Append(nil)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Decode: got error %v, want %v", err, ErrInvalid)
	}
}

func TestOpenConnectionRequest2BadAddress(t *testing.T) {
	b := unhex(t, "07 |"+magicHex+"| 05 80 ff ff fe 4a bc | 05 d4 | ff ff ff ff ff ff ff fe")
	if _, err := new(OpenConnectionRequest2).Decode(b); err == nil {
		t.Errorf("Decode with address version 5: got error %v, want non-nil", err)
	}
}
