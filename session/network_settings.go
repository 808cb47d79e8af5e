package session

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// networkSettings is the server's reply to RequestNetworkSettings (0x8f),
// sent uncompressed; compression starts after it:
//
//	compression threshold    u16 LE (0 disables, 1 compresses everything)
//	compression algorithm    u16 LE (0 deflate, 1 snappy, 0xffff none)
//	client throttle          bool
//	client throttle threshold u8
//	client throttle scalar   f32 LE
type networkSettings struct {
	CompressionThreshold    uint16
	CompressionAlgorithm    uint16
	ClientThrottle          bool
	ClientThrottleThreshold uint8
	ClientThrottleScalar    float32
}

// networkSettingsSize is the encoded size of networkSettings.
const networkSettingsSize = 2 + 2 + 1 + 1 + 4

// compressionAlgorithmFlate is NetworkSettings' code for raw DEFLATE.
const compressionAlgorithmFlate uint16 = 0

// Append appends the packet's fields to b.
func (m *networkSettings) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, m.CompressionThreshold)
	b = binary.LittleEndian.AppendUint16(b, m.CompressionAlgorithm)
	b = appendBool(b, m.ClientThrottle)
	b = append(b, m.ClientThrottleThreshold)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(m.ClientThrottleScalar))
}

// Decode reads the packet's fields from b and returns the bytes consumed.
func (m *networkSettings) Decode(b []byte) (int, error) {
	if len(b) < networkSettingsSize {
		return 0, fmt.Errorf("decode NETWORK_SETTINGS: %w", io.ErrUnexpectedEOF)
	}
	throttle, err := readBool(b[4])
	if err != nil {
		return 0, fmt.Errorf("decode NETWORK_SETTINGS: client throttle: %w", err)
	}
	m.CompressionThreshold = binary.LittleEndian.Uint16(b)
	m.CompressionAlgorithm = binary.LittleEndian.Uint16(b[2:])
	m.ClientThrottle = throttle
	m.ClientThrottleThreshold = b[5]
	m.ClientThrottleScalar = math.Float32frombits(binary.LittleEndian.Uint32(b[6:]))
	return networkSettingsSize, nil
}

// appendBool appends v as one byte, 0 or 1.
func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// readBool decodes a bool byte, refusing anything but 0 and 1.
func readBool(c byte) (bool, error) {
	switch c {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, fmt.Errorf("bool byte %#02x", c)
}
