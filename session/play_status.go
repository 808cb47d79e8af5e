package session

import (
	"encoding/binary"
	"fmt"
	"io"
)

// PlayStatus is the status a PlayStatus packet (0x02) carries, an int32 BE on
// the wire. Before NetworkSettings it is how a server refuses a client's
// protocol.
type PlayStatus int32

// Play statuses, as numbered by Mojang's protocol docs and gophertunnel.
const (
	// PlayStatusLoginSuccess tells the client its login was accepted.
	PlayStatusLoginSuccess PlayStatus = 0
	// PlayStatusLoginFailedClient tells the client it is outdated: the
	// client shows "Outdated client!".
	PlayStatusLoginFailedClient PlayStatus = 1
	// PlayStatusLoginFailedServer tells the client the server is outdated:
	// the client shows "Outdated server!".
	PlayStatusLoginFailedServer PlayStatus = 2
	// PlayStatusPlayerSpawn tells the client to leave the loading screen.
	PlayStatusPlayerSpawn PlayStatus = 3
	// PlayStatusLoginFailedServerFull refuses a login because the server is
	// full (Mojang: LoginFailed_ServerFullSubClient).
	PlayStatusLoginFailedServerFull PlayStatus = 7
)

// String returns Mojang's name for the status.
func (p PlayStatus) String() string {
	switch p {
	case PlayStatusLoginSuccess:
		return "LoginSuccess"
	case PlayStatusLoginFailedClient:
		return "LoginFailed_ClientOld"
	case PlayStatusLoginFailedServer:
		return "LoginFailed_ServerOld"
	case PlayStatusPlayerSpawn:
		return "PlayerSpawn"
	case PlayStatusLoginFailedServerFull:
		return "LoginFailed_ServerFullSubClient"
	}
	return fmt.Sprintf("PlayStatus(%d)", int32(p))
}

// playStatus is the PlayStatus packet (0x02):
//
//	status  int32 BE
type playStatus struct {
	Status PlayStatus
}

// Append appends the packet's fields to b.
func (m *playStatus) Append(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(m.Status))
}

// Decode reads the packet's fields from b and returns the bytes consumed.
func (m *playStatus) Decode(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("decode PLAY_STATUS: %w", io.ErrUnexpectedEOF)
	}
	m.Status = PlayStatus(binary.BigEndian.Uint32(b))
	return 4, nil
}
