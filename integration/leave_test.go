package integration

import (
	"context"
	"testing"
	"time"

	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// leaveWithin bounds the end of a session after its client's Disconnect:
// the session ends on reading it, not when the transport notices the
// client gone (a NetherNet data channel can outlive its client by many
// seconds). The bound is for a busy machine; on an idle one it is a few
// milliseconds.
const leaveWithin = 5 * time.Second

// TestClientDisconnectEndsSessionOnBothTransports has a player on each
// transport send its own Disconnect while its connection stays open: the
// server ends each session at once, closing the connection, and the player
// leaves the lobby.
func TestClientDisconnectEndsSessionOnBothTransports(t *testing.T) {
	srv, raknetAddr, nnAddr := netherNetServer(t, "lobby")
	ctx, cancel := context.WithTimeout(context.Background(), lobbyWait)
	defer cancel()
	steve, err := netherNetDial(ctx, nnAddr, "Steve", nil)
	if err != nil {
		t.Fatalf("NetherNet dial: %v", err)
	}
	t.Cleanup(func() { _ = steve.Close() })
	if err := steve.DoSpawnContext(ctx); err != nil {
		t.Fatalf("NetherNet spawn: %v", err)
	}
	alex := lobbyJoin(t, raknetAddr, "Alex")
	if n := srv.PlayerCount(); n != 2 {
		t.Fatalf("%d players, want 2", n)
	}
	for name, c := range map[string]*minecraft.Conn{"Steve (NetherNet)": steve, "Alex (RakNet)": alex} {
		if err := c.WritePacket(&packet.Disconnect{Message: "Client leaving"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Flush(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The server closes the connection: the client's read ends.
		_ = c.SetReadDeadline(time.Now().Add(leaveWithin))
		for {
			if _, err := c.ReadPacket(); err != nil {
				if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
					t.Fatalf("%s: the server did not close the connection within %v of the client's Disconnect", name, leaveWithin)
				}
				break
			}
		}
	}
	// PlayerCount drops when the session's goroutine has returned, just
	// after it closed the connection.
	if !eventually(leaveWithin, func() bool { return srv.PlayerCount() == 0 }) {
		t.Fatalf("%d players %v after both left, want 0", srv.PlayerCount(), leaveWithin)
	}
}
