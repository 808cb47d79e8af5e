package wire

// Notice is one of the offline refusals that carry only the server GUID:
// 0x12 AlreadyConnected, 0x14 NoFreeIncomingConnections, 0x17
// ConnectionBanned and 0x1a IpRecentlyConnected.
//
//	u8 id | magic | u64 server GUID
type Notice struct {
	ID         byte
	ServerGUID int64
}

// IsNotice reports whether id is one of the Notice messages.
func IsNotice(id byte) bool {
	switch id {
	case IDAlreadyConnected, IDNoFreeIncomingConnections, IDConnectionBanned, IDIPRecentlyConnected:
		return true
	}
	return false
}

// Append appends the encoding of m.
func (m *Notice) Append(b []byte) []byte {
	return appendI64(append(append(b, m.ID), Magic[:]...), m.ServerGUID)
}

// Decode decodes a notice of any of the four ids.
func (m *Notice) Decode(b []byte) (int, error) {
	r := reader{b: b}
	m.ID = r.u8()
	if r.err == nil && !IsNotice(m.ID) {
		r.err = ErrUnexpectedID
	}
	r.magic()
	m.ServerGUID = r.i64()
	if r.err != nil {
		return 0, decodeErr("offline notice", r.err)
	}
	return r.off, nil
}

// IncompatibleProtocolVersion (0x19) tells a client which RakNet protocol
// the server speaks.
//
//	u8 id | u8 server protocol | magic | u64 server GUID
type IncompatibleProtocolVersion struct {
	Protocol   byte
	ServerGUID int64
}

// Append appends the encoding of m.
func (m *IncompatibleProtocolVersion) Append(b []byte) []byte {
	b = append(append(b, IDIncompatibleProtocolVersion, m.Protocol), Magic[:]...)
	return appendI64(b, m.ServerGUID)
}

// Decode decodes the message.
func (m *IncompatibleProtocolVersion) Decode(b []byte) (int, error) {
	if err := checkID(b, IDIncompatibleProtocolVersion); err != nil {
		return 0, decodeErr("INCOMPATIBLE_PROTOCOL_VERSION", err)
	}
	r := reader{b: b, off: 1}
	m.Protocol = r.u8()
	r.magic()
	m.ServerGUID = r.i64()
	if r.err != nil {
		return 0, decodeErr("INCOMPATIBLE_PROTOCOL_VERSION", r.err)
	}
	return r.off, nil
}
