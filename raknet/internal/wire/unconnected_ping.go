package wire

// UnconnectedPing is 0x01 UnconnectedPing or, with OpenConnections set,
// 0x02 UnconnectedPingOpenConnections (answered only while slots are free).
//
//	u8 id | i64 client time | magic | u64 client GUID
type UnconnectedPing struct {
	OpenConnections bool
	Time            int64
	ClientGUID      int64
}

// Append appends the encoding of m.
func (m *UnconnectedPing) Append(b []byte) []byte {
	id := IDUnconnectedPing
	if m.OpenConnections {
		id = IDUnconnectedPingOpenConnections
	}
	b = appendI64(append(b, id), m.Time)
	b = append(b, Magic[:]...)
	return appendI64(b, m.ClientGUID)
}

// Decode decodes a ping of either id. Trailing bytes are ignored: some
// clients pad pings.
func (m *UnconnectedPing) Decode(b []byte) (int, error) {
	r := reader{b: b}
	switch id := r.u8(); {
	case r.err != nil:
	case id == IDUnconnectedPing || id == IDUnconnectedPingOpenConnections:
		m.OpenConnections = id == IDUnconnectedPingOpenConnections
	default:
		r.err = ErrUnexpectedID
	}
	m.Time = r.i64()
	r.magic()
	m.ClientGUID = r.i64()
	if r.err != nil {
		return 0, decodeErr("UNCONNECTED_PING", r.err)
	}
	return r.off, nil
}
