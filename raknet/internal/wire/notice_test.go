package wire

import "testing"

func TestNoticeGolden(t *testing.T) {
	tests := []struct {
		name string
		id   byte
		hex  string
	}{
		{"AlreadyConnected", IDAlreadyConnected, "12"},
		{"NoFreeIncomingConnections", IDNoFreeIncomingConnections, "14"},
		{"ConnectionBanned", IDConnectionBanned, "17"},
		{"IPRecentlyConnected", IDIPRecentlyConnected, "1a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !IsNotice(tc.id) {
				t.Errorf("IsNotice(%#02x): got false, want true", tc.id)
			}
			m := Notice{ID: tc.id, ServerGUID: 0x0a0b0c0d0e0f1011}
			checkGolden(t, &m, unhex(t, tc.hex+"|"+magicHex+"| 0a 0b 0c 0d 0e 0f 10 11"))
		})
	}
}

func TestIsNotice(t *testing.T) {
	n := 0
	for id := range 256 {
		if IsNotice(byte(id)) {
			n++
		}
	}
	if n != 4 {
		t.Errorf("IsNotice true for: got %v ids, want %v", n, 4)
	}
}

func TestIncompatibleProtocolVersionGolden(t *testing.T) {
	m := IncompatibleProtocolVersion{Protocol: 11, ServerGUID: 2}
	checkGolden(t, &m, unhex(t, "19 0b |"+magicHex+"| 00 00 00 00 00 00 00 02"))
}
