package session

import (
	"encoding/binary"
	"fmt"
	"io"
)

// requestNetworkSettings is the first packet a client sends (0xc1),
// uncompressed:
//
//	client protocol  int32 BE
type requestNetworkSettings struct {
	ClientProtocol int32
}

// Append appends the packet's fields to b.
func (m *requestNetworkSettings) Append(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(m.ClientProtocol))
}

// Decode reads the packet's fields from b and returns the bytes consumed.
// Trailing bytes are left to the caller.
func (m *requestNetworkSettings) Decode(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("decode REQUEST_NETWORK_SETTINGS: %w", io.ErrUnexpectedEOF)
	}
	m.ClientProtocol = int32(binary.BigEndian.Uint32(b))
	return 4, nil
}
