package wire

// Message IDs: the first byte of an offline message or of a connected
// message carried inside a frame.
const (
	IDConnectedPing                  byte = 0x00
	IDUnconnectedPing                byte = 0x01
	IDUnconnectedPingOpenConnections byte = 0x02
	IDConnectedPong                  byte = 0x03
	IDDetectLostConnections          byte = 0x04
	IDOpenConnectionRequest1         byte = 0x05
	IDOpenConnectionReply1           byte = 0x06
	IDOpenConnectionRequest2         byte = 0x07
	IDOpenConnectionReply2           byte = 0x08
	IDConnectionRequest              byte = 0x09
	IDConnectionRequestAccepted      byte = 0x10
	IDAlreadyConnected               byte = 0x12
	IDNewIncomingConnection          byte = 0x13
	IDNoFreeIncomingConnections      byte = 0x14
	IDDisconnectionNotification      byte = 0x15
	IDConnectionBanned               byte = 0x17
	IDIncompatibleProtocolVersion    byte = 0x19
	IDIPRecentlyConnected            byte = 0x1a
	IDUnconnectedPong                byte = 0x1c
	IDGamePacket                     byte = 0xfe
)

// Magic is the 16-byte "offline message data ID" every offline message
// carries so that stray datagrams are not mistaken for RakNet traffic.
var Magic = [16]byte{0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78}
