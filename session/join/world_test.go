package join_test

import (
	"context"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/basaltmc/basalt/session/packets/packetstest"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// greeter is a join.Handler that records what it is told and greets the
// player on spawning. It claims every packet raw, to check that the join's
// own are decoded whatever a RawHandler says.
type greeter struct {
	packets.NopTypedHandler
	j      *join.Join
	spawns int
	got    chan packet.Packet
}

func (g *greeter) HandleSpawn(*session.Session) error {
	g.spawns++
	return g.j.Write(&packet.Text{TextType: packet.TextTypeRaw, Message: "welcome"})
}

func (g *greeter) HandleRawPacket(*session.Session, session.Packet) (bool, error) {
	return false, nil
}

func (g *greeter) HandlePacket(_ *session.Session, pk packet.Packet) error {
	g.got <- pk
	return nil
}

// TestWorld joins two players through one World: each gets an entity ID of
// its own, is greeted once on spawning, and its handler gets its packets
// only once it is in the world.
func TestWorld(t *testing.T) {
	leaktest.Check(t)
	handlers := make(chan *greeter, 2)
	w := &join.World{
		GameData: join.GameData{MaxChunkRadius: 1},
		NewPlayer: func(s *session.Session, j *join.Join) (join.Handler, error) {
			g := &greeter{j: j, got: make(chan packet.Packet, 8)}
			handlers <- g
			return g, nil
		},
	}
	ids := map[int64]bool{}
	for _, name := range []string{"Steve", "Alex"} {
		server, client := packetstest.Pipe()
		s := session.New(server, session.Config{NewHandler: w.NewHandler})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		c, err := packetstest.Login(client, name, wait)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		g := <-handlers
		// Before the spawn: chat the handler must not see.
		send(t, c,
			&packet.Text{TextType: packet.TextTypeChat, SourceName: name, Message: "early"},
			&packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted})
		sg := expect[*packet.StartGame](t, c)
		id := sg.EntityRuntimeID
		if id == 0 || uint64(sg.EntityUniqueID) != id || uint64(g.j.EntityID()) != id {
			t.Errorf("%s: StartGame IDs %d, %d, Join.EntityID %d; want one non-zero ID", name, sg.EntityUniqueID, id, g.j.EntityID())
		}
		if ids[int64(id)] {
			t.Errorf("%s: entity ID %d given twice", name, id)
		}
		ids[int64(id)] = true
		send(t, c, &packet.RequestChunkRadius{ChunkRadius: 1, MaxChunkRadius: 1})
		expect[*packet.PlayStatus](t, c)
		send(t, c, &packet.SetLocalPlayerAsInitialised{EntityRuntimeID: id})
		if txt := expect[*packet.Text](t, c); txt.Message != "welcome" {
			t.Errorf("%s: got %q, want the greeting", name, txt.Message)
		}
		send(t, c, &packet.Text{TextType: packet.TextTypeChat, SourceName: name, Message: "late"})
		select {
		case pk := <-g.got:
			if txt, ok := pk.(*packet.Text); !ok || txt.Message != "late" {
				t.Errorf("%s: handler got %#v first, want the chat sent after spawning", name, pk)
			}
		case <-time.After(wait):
			t.Fatalf("%s: handler got nothing after spawning", name)
		}
		if g.spawns != 1 {
			t.Errorf("%s: HandleSpawn called %d times, want 1", name, g.spawns)
		}
	}
}

func TestWorldNeedsNewPlayer(t *testing.T) {
	if _, err := (&join.World{}).NewHandler(nil); err == nil {
		t.Error("World without NewPlayer: got nil error")
	}
}
