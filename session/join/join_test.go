package join_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/join"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/basaltmc/basalt/session/packets/packetstest"
	"github.com/go-gl/mathgl/mgl32"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

const wait = 5 * time.Second

// world is the smallest handler that spawns players with a Join.
type world struct {
	packets.NopTypedHandler
	j       *join.Join
	spawned chan struct{}
}

func (w *world) HandlePacket(_ *session.Session, pk packet.Packet) error {
	spawned, err := w.j.HandlePacket(pk)
	if spawned {
		close(w.spawned)
	}
	return err
}

// start runs a session whose player joins gd's world, for a bare client
// speaking protocol p.
func start(t *testing.T, gd join.GameData, p int32) (*world, *packetstest.Client) {
	t.Helper()
	return startFlush(t, gd, p, 0)
}

// startFlush is start with the session's FlushInterval.
func startFlush(t *testing.T, gd join.GameData, p int32, flush time.Duration) (*world, *packetstest.Client) {
	t.Helper()
	w := &world{spawned: make(chan struct{})}
	server, client := packetstest.Pipe()
	s := session.New(server, session.Config{FlushInterval: flush, NewHandler: func(s *session.Session) (session.Handler, error) {
		j, err := join.Start(s, packets.Codec{}, gd)
		if err != nil {
			return nil, err
		}
		w.j = j
		return packets.Adapt(w, packets.Codec{}), nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := packetstest.LoginProtocol(client, "Steve", p, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return w, c
}

func expect[T packet.Packet](t *testing.T, c *packetstest.Client) T {
	t.Helper()
	pk, err := c.Expect(wait, func(pk packet.Packet) bool { _, ok := pk.(T); return ok })
	if err != nil {
		var zero T
		t.Fatalf("waiting for %T: %v", zero, err)
	}
	return pk.(T)
}

func send(t *testing.T, c *packetstest.Client, pks ...packet.Packet) {
	t.Helper()
	for _, pk := range pks {
		if err := c.WritePacket(pk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpawn joins at every protocol, in each dimension, and checks the IDs,
// the chunks and the attributes the package doc promises.
func TestSpawn(t *testing.T) {
	leaktest.Check(t)
	for _, p := range packets.Protocols() {
		for _, dim := range []struct {
			id       int32
			sections int
		}{{packet.DimensionOverworld, 24}, {packet.DimensionNether, 8}, {packet.DimensionEnd, 16}} {
			gd := join.GameData{EntityID: 42, Dimension: dim.id, PlayerPosition: mgl32.Vec3{40, 70, -20}, MaxChunkRadius: 2}
			w, c := start(t, gd, p)
			send(t, c, &packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted})
			sg := expect[*packet.StartGame](t, c)
			if sg.EntityUniqueID != 42 || sg.EntityRuntimeID != 42 {
				t.Errorf("%d: StartGame IDs %d, %d; want 42 both", p, sg.EntityUniqueID, sg.EntityRuntimeID)
			}
			if v, _ := session.LookupProtocol(p); sg.GameVersion != v.Name {
				t.Errorf("%d: game version %q, want %q", p, sg.GameVersion, v.Name)
			}
			if m := sg.PlayerMovementSettings; m.RewindHistorySize <= 0 || !m.ServerAuthoritativeBlockBreaking {
				t.Errorf("%d: movement settings %+v, want a rewind history and server block breaking", p, m)
			}
			if items := expect[*packet.ItemRegistry](t, c).Items; len(items) != 0 {
				t.Errorf("%d: %d items, want none", p, len(items))
			}
			if cc := expect[*packet.CreativeContent](t, c); len(cc.Groups)+len(cc.Items) != 0 {
				t.Errorf("%d: creative content %+v, want empty", p, cc)
			}
			send(t, c, &packet.RequestChunkRadius{ChunkRadius: 8, MaxChunkRadius: 8})
			if r := expect[*packet.ChunkRadiusUpdated](t, c).ChunkRadius; r != 2 {
				t.Errorf("%d: radius %d, want 2", p, r)
			}
			var chunks int
			for {
				pk, err := c.Expect(wait, func(packet.Packet) bool { return true })
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := pk.(*packet.PlayStatus); ok {
					break
				}
				lc, ok := pk.(*packet.LevelChunk)
				if !ok {
					continue
				}
				chunks++
				// Around chunk (2, -2), where the player stands.
				if dx, dz := lc.Position[0]-2, lc.Position[1]+2; dx*dx+dz*dz > 4 {
					t.Errorf("%d: chunk %v outside radius 2 of (2, -2)", p, lc.Position)
				}
				if lc.SubChunkCount != 0 || lc.Dimension != dim.id {
					t.Errorf("%d: chunk with %d sub-chunks in dimension %d", p, lc.SubChunkCount, lc.Dimension)
				}
				want := append([]byte{1, 2}, make([]byte, dim.sections-1)...)
				for i := 2; i < len(want); i++ {
					want[i] = 0xff
				}
				want = append(want, 0)
				if string(lc.RawPayload) != string(want) {
					t.Errorf("%d: dimension %d chunk payload % x, want % x", p, dim.id, lc.RawPayload, want)
				}
			}
			if chunks != 13 {
				t.Errorf("%d: %d chunks, want 13 within radius 2", p, chunks)
			}
			a := expect[*packet.UpdateAttributes](t, c)
			if a.EntityRuntimeID != 42 || len(a.Attributes) != 1 || a.Attributes[0].Name != "minecraft:movement" || a.Attributes[0].Value != 0.1 {
				t.Errorf("%d: attributes %+v, want movement 0.1 for 42", p, a)
			}
			send(t, c, &packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 42})
			select {
			case <-w.spawned:
			case <-time.After(wait):
				t.Fatalf("%d: not spawned", p)
			}
			// Later radius requests are confirmed, nothing more.
			send(t, c, &packet.RequestChunkRadius{ChunkRadius: 1, MaxChunkRadius: 1})
			if r := expect[*packet.ChunkRadiusUpdated](t, c).ChunkRadius; r != 1 {
				t.Errorf("%d: radius %d, want 1", p, r)
			}
		}
	}
}

// TestWrongRuntimeID checks that SetLocalPlayerAsInitialised must name
// StartGame's runtime ID.
// TestStepsFlushed joins with a flush interval longer than the test: every
// answer the client waits for before its next step must be flushed at
// once, or the join waits a flush interval for it.
func TestStepsFlushed(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name string
		pack packet.ResourcePackClientResponse
	}{
		{"all packs downloaded", packet.ResourcePackClientResponse{Response: packet.PackResponseAllPacksDownloaded}},
		{"send no packs", packet.ResourcePackClientResponse{Response: packet.PackResponseSendPacks}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c := startFlush(t, join.GameData{EntityID: 7, MaxChunkRadius: 1}, packets.Protocols()[0], time.Hour)
			expect[*packet.ResourcePacksInfo](t, c)
			send(t, c, &tc.pack)
			expect[*packet.ResourcePackStack](t, c)
			send(t, c, &packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted})
			expect[*packet.StartGame](t, c)
			send(t, c, &packet.RequestChunkRadius{ChunkRadius: 4})
			expect[*packet.PlayStatus](t, c)
			send(t, c, &packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 7})
			select {
			case <-w.spawned:
			case <-time.After(wait):
				t.Fatal("not spawned")
			}
		})
	}
}

func TestWrongRuntimeID(t *testing.T) {
	leaktest.Check(t)
	w, c := start(t, join.GameData{EntityID: 7}, packets.BaseProtocol)
	send(t, c,
		&packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted},
		&packet.RequestChunkRadius{ChunkRadius: 1, MaxChunkRadius: 1},
		&packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 8})
	if _, err := c.Expect(wait, func(packet.Packet) bool { return false }); err == nil || errors.Is(err, packetstest.ErrTimeout) {
		t.Fatalf("got %v, want the session ended", err)
	}
	if w.j.Spawned() || w.j.Phase() != join.PhaseSpawn {
		t.Errorf("phase %v after a wrong runtime ID, want %v", w.j.Phase(), join.PhaseSpawn)
	}
}

func TestStartNeedsSession(t *testing.T) {
	if _, err := join.Start(nil, packets.Codec{}, join.GameData{}); err == nil {
		t.Error("Start with a nil session: got nil error")
	}
}

func TestBiomeChunk(t *testing.T) {
	for _, tc := range []struct {
		dim  int32
		size int
	}{{packet.DimensionOverworld, 2 + 23 + 1}, {packet.DimensionNether, 2 + 7 + 1}, {packet.DimensionEnd, 2 + 15 + 1}} {
		b := join.BiomeChunk(tc.dim)
		if len(b) != tc.size || b[0] != 1 || b[1] != join.Plains<<1 || b[len(b)-1] != 0 {
			t.Errorf("dimension %d: % x, want %d bytes: a single-value palette, copies, a border byte", tc.dim, b, tc.size)
		}
	}
}
