package wire

// ConnectedPing (0x00) keeps a connection alive and measures its RTT.
//
//	u8 id | i64 time
type ConnectedPing struct {
	Time int64
}

// ConnectedPingSize is the size of an encoded ConnectedPing.
const ConnectedPingSize = 1 + 8

// Append appends the encoding of m.
func (m *ConnectedPing) Append(b []byte) []byte {
	return appendI64(append(b, IDConnectedPing), m.Time)
}

// Decode decodes the message.
func (m *ConnectedPing) Decode(b []byte) (int, error) {
	if err := checkID(b, IDConnectedPing); err != nil {
		return 0, decodeErr("CONNECTED_PING", err)
	}
	r := reader{b: b, off: 1}
	m.Time = r.i64()
	if r.err != nil {
		return 0, decodeErr("CONNECTED_PING", r.err)
	}
	return r.off, nil
}

// ConnectedPong (0x03) answers a ConnectedPing.
//
//	u8 id | i64 echoed ping time | i64 pong time
type ConnectedPong struct {
	PingTime int64
	PongTime int64
}

// ConnectedPongSize is the size of an encoded ConnectedPong.
const ConnectedPongSize = 1 + 8 + 8

// Append appends the encoding of m.
func (m *ConnectedPong) Append(b []byte) []byte {
	return appendI64(appendI64(append(b, IDConnectedPong), m.PingTime), m.PongTime)
}

// Decode decodes the message. A pong without the pong time (as some peers
// send) is accepted with PongTime 0.
func (m *ConnectedPong) Decode(b []byte) (int, error) {
	if err := checkID(b, IDConnectedPong); err != nil {
		return 0, decodeErr("CONNECTED_PONG", err)
	}
	r := reader{b: b, off: 1}
	m.PingTime = r.i64()
	m.PongTime = 0
	if r.err == nil && r.remaining() >= 8 {
		m.PongTime = r.i64()
	}
	if r.err != nil {
		return 0, decodeErr("CONNECTED_PONG", r.err)
	}
	return r.off, nil
}
