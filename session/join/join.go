package join

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/go-gl/mathgl/mgl32"
	"github.com/google/uuid"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// DefaultMaxChunkRadius is the view distance granted, in chunks, unless
// GameData.MaxChunkRadius says otherwise.
const DefaultMaxChunkRadius = 4

// GameData is what a player is told about the world and itself on joining.
// Its zero value is ready to use: an overworld spawn at the origin in
// survival mode, with an entity ID of its own for each player.
type GameData struct {
	// EntityID is the player's entity: StartGame's unique and runtime ID
	// both, the ID of its attributes, and the runtime ID
	// SetLocalPlayerAsInitialised must name. Zero means one from
	// NewEntityID; Join.EntityID tells which.
	EntityID int64
	// WorldName is shown in the client's pause menu.
	WorldName string
	// PlayerGameMode and WorldGameMode are packet.GameType values.
	PlayerGameMode, WorldGameMode int32
	// PlayerPosition is where the player spawns: its eye position.
	PlayerPosition mgl32.Vec3
	// Pitch and Yaw are the player's view at spawn, in degrees.
	Pitch, Yaw float32
	// Dimension is packet.DimensionOverworld, DimensionNether or
	// DimensionEnd; it sets how many biome sections each chunk has.
	Dimension int32
	// Generator is StartGame's generator (2 = flat: the client generates
	// nothing of its own).
	Generator int32
	// WorldSpawn is the world's spawn block.
	WorldSpawn protocol.BlockPos
	// Time is the time of day at spawn; with DayCycleLockTime the time the
	// cycle stands at when the dodaylightcycle game rule is off.
	Time             int64
	DayCycleLockTime int32
	// GameRules are the world's game rules.
	GameRules []protocol.GameRule
	// PlayerPermissions is a packet.PermissionLevel value.
	PlayerPermissions uint8
	// Items are the entries of the ItemRegistry. None is enough while no
	// item is sent; the shield's runtime ID among them must be the
	// Codec's ShieldID.
	Items []protocol.ItemEntry
	// MaxChunkRadius caps the view distance granted, in chunks; the
	// chunks within it around the spawn are sent, biomes only, before
	// the player spawns. Zero means DefaultMaxChunkRadius.
	MaxChunkRadius int32
	// BeforeSpawn are sent after ChunkRadiusUpdated and before the
	// chunks: the world's commands, the player's abilities.
	BeforeSpawn []packet.Packet
}

// Phase is how far a player has come in joining.
type Phase uint8

// The phases of a join, in order.
const (
	// PhasePacks: ResourcePacksInfo sent, waiting for the client to say it
	// has every pack.
	PhasePacks Phase = iota
	// PhaseStack: ResourcePackStack sent, waiting for Completed.
	PhaseStack
	// PhaseChunkRadius: StartGame sent, waiting for RequestChunkRadius.
	PhaseChunkRadius
	// PhaseSpawn: PlayStatus PlayerSpawn sent, waiting for
	// SetLocalPlayerAsInitialised.
	PhaseSpawn
	// PhaseSpawned: in the world.
	PhaseSpawned
)

// String returns the phase's name.
func (p Phase) String() string {
	switch p {
	case PhasePacks:
		return "packs"
	case PhaseStack:
		return "stack"
	case PhaseChunkRadius:
		return "chunk radius"
	case PhaseSpawn:
		return "spawn"
	case PhaseSpawned:
		return "spawned"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Join is one player's join. Create it with Start.
type Join struct {
	s     *session.Session
	codec packets.Codec
	gd    GameData
	phase atomic.Uint32
}

// Start begins the join of the logged-in player of s into the world gd
// describes: it writes ResourcePacksInfo, encoded with codec for the
// session's protocol. Call it from NewHandler, after which the session's
// handler passes the packets the client sends to HandlePacket, as Adapt
// and World do.
func Start(s *session.Session, codec packets.Codec, gd GameData) (*Join, error) {
	if s == nil {
		return nil, errors.New("join: Start with a nil session")
	}
	if gd.EntityID == 0 {
		gd.EntityID = NewEntityID()
	}
	if gd.MaxChunkRadius <= 0 {
		gd.MaxChunkRadius = DefaultMaxChunkRadius
	}
	j := &Join{s: s, codec: codec, gd: gd}
	if err := j.write(&packet.ResourcePacksInfo{}); err != nil {
		return nil, err
	}
	return j, nil
}

// Phase returns the phase of the join. It is safe to call from any
// goroutine.
func (j *Join) Phase() Phase { return Phase(j.phase.Load()) }

// Spawned reports whether the player is in the world.
func (j *Join) Spawned() bool { return j.Phase() == PhaseSpawned }

func (j *Join) setPhase(p Phase) { j.phase.Store(uint32(p)) }

// EntityID returns the player's entity ID: StartGame's unique and runtime
// ID, GameData.EntityID or the one Start made.
func (j *Join) EntityID() int64 { return j.gd.EntityID }

// Write encodes pk with the join's Codec for the player's protocol and
// buffers it on the session, as packets.Codec.Write does. It is safe to
// call from any goroutine.
func (j *Join) Write(pk packet.Packet) error { return j.codec.Write(j.s, pk) }

// write is Write.
func (j *Join) write(pk packet.Packet) error { return j.Write(pk) }

// writeAll writes pks and flushes them.
func (j *Join) writeAll(pks []packet.Packet) error {
	for _, pk := range pks {
		if err := j.write(pk); err != nil {
			return err
		}
	}
	return j.s.Flush()
}

// Wants reports whether the join needs packets with id decoded: a handler
// that lets packets by raw (packets.RawHandler) must not skip them.
func Wants(id uint32) bool {
	switch id {
	case packet.IDResourcePackClientResponse, packet.IDRequestChunkRadius, packet.IDSetLocalPlayerAsInitialised:
		return true
	}
	return false
}

// HandlePacket advances the join with a packet the client sent. It returns
// spawned true exactly once: for the SetLocalPlayerAsInitialised that puts
// the player in the world, after which the handler greets the player, tells
// the others, and so on. RequestChunkRadius is answered in every phase
// after StartGame, also once spawned. Packets the join has no use for, and
// responses out of turn or repeated, change nothing. An error ends the
// session; a *session.DisconnectError (a refused pack) is shown first.
func (j *Join) HandlePacket(pk packet.Packet) (spawned bool, err error) {
	switch pk := pk.(type) {
	case *packet.ResourcePackClientResponse:
		return false, j.handlePackResponse(pk)
	case *packet.RequestChunkRadius:
		return false, j.handleRequestChunkRadius(pk)
	case *packet.SetLocalPlayerAsInitialised:
		return j.handleInitialised(pk)
	}
	return false, nil
}

// handlePackResponse moves through the resource pack phases: see the
// package doc for why Completed is taken in either.
func (j *Join) handlePackResponse(pk *packet.ResourcePackClientResponse) error {
	switch pk.Response {
	case packet.PackResponseRefused:
		return session.Kick("You must accept the server's resource packs to join.")
	case packet.PackResponseSendPacks:
		if len(pk.PacksToDownload) != 0 {
			return fmt.Errorf("client asked for %d resource packs the server does not have", len(pk.PacksToDownload))
		}
		// Asking for no packs is having them all.
		fallthrough
	case packet.PackResponseAllPacksDownloaded:
		if j.Phase() != PhasePacks {
			return nil
		}
		j.setPhase(PhaseStack)
		// Flushed: the client waits for the stack before it says
		// Completed, so a stack left to the flush interval would add it
		// to every join.
		return j.writeAll([]packet.Packet{&packet.ResourcePackStack{BaseGameVersion: j.s.Version().Name}})
	case packet.PackResponseCompleted:
		if p := j.Phase(); p != PhasePacks && p != PhaseStack {
			return nil
		}
		j.setPhase(PhaseChunkRadius)
		return j.writeAll(j.startGame())
	}
	return fmt.Errorf("unknown resource pack response %d", pk.Response)
}

// startGame returns what puts the player in the world.
func (j *Join) startGame() []packet.Packet {
	gd := j.gd
	return []packet.Packet{
		&packet.JigsawStructureData{StructureData: map[string]any{
			"processors":     []map[string]any{},
			"template_pools": []map[string]any{},
			"jigsaws":        []map[string]any{},
			"structure_sets": []map[string]any{},
		}},
		&packet.VoxelShapes{},
		&packet.StartGame{
			EntityUniqueID:           gd.EntityID,
			EntityRuntimeID:          uint64(gd.EntityID),
			PlayerGameMode:           gd.PlayerGameMode,
			PlayerPosition:           gd.PlayerPosition,
			Pitch:                    gd.Pitch,
			Yaw:                      gd.Yaw,
			Dimension:                gd.Dimension,
			Generator:                gd.Generator,
			WorldGameMode:            gd.WorldGameMode,
			WorldSpawn:               gd.WorldSpawn,
			GameRules:                gd.GameRules,
			Time:                     gd.Time,
			DayCycleLockTime:         gd.DayCycleLockTime,
			AchievementsDisabled:     true,
			MultiPlayerGame:          true,
			MultiPlayerCorrelationID: uuid.NewString(),
			CommandsEnabled:          true,
			PlayerPermissions:        gd.PlayerPermissions,
			BaseGameVersion:          "*",
			WorldName:                gd.WorldName,
			GameVersion:              j.s.Version().Name,
			PropertyData:             map[string]any{},
			PlayerMovementSettings: protocol.PlayerMovementSettings{
				RewindHistorySize:                rewindHistorySize,
				ServerAuthoritativeBlockBreaking: true,
			},
			ServerAuthoritativeInventory: true,
		},
		&packet.ItemRegistry{Items: gd.Items},
		&packet.CreativeContent{},
	}
}

// rewindHistorySize is how many ticks of input the client keeps for the
// server to rewind movement to: server-authoritative movement with rewind.
const rewindHistorySize = 40

// ChunkRadius returns the view distance granted for a requested one.
func (j *Join) ChunkRadius(requested int32) int32 {
	return max(1, min(requested, j.gd.MaxChunkRadius))
}

// handleRequestChunkRadius answers the client's view distance; the first
// one, after StartGame, spawns the player.
func (j *Join) handleRequestChunkRadius(pk *packet.RequestChunkRadius) error {
	switch j.Phase() {
	case PhaseChunkRadius:
		if pk.ChunkRadius < 1 {
			return fmt.Errorf("chunk radius %d: want at least 1", pk.ChunkRadius)
		}
		j.setPhase(PhaseSpawn)
		return j.writeAll(j.spawn(j.ChunkRadius(pk.ChunkRadius)))
	case PhaseSpawn, PhaseSpawned:
		// The chunks around the spawn are sent; confirm, send nothing
		// more.
		return j.write(&packet.ChunkRadiusUpdated{ChunkRadius: j.ChunkRadius(pk.ChunkRadius)})
	}
	return nil
}

// spawn returns what answers the first RequestChunkRadius and spawns the
// player.
func (j *Join) spawn(r int32) []packet.Packet {
	gd := j.gd
	center := protocol.ChunkPos{int32(gd.PlayerPosition[0]) >> 4, int32(gd.PlayerPosition[2]) >> 4}
	pks := []packet.Packet{&packet.ChunkRadiusUpdated{ChunkRadius: r}}
	pks = append(pks, gd.BeforeSpawn...)
	pks = append(pks, &packet.NetworkChunkPublisherUpdate{
		Position: protocol.BlockPos{int32(gd.PlayerPosition[0]), int32(gd.PlayerPosition[1]), int32(gd.PlayerPosition[2])},
		Radius:   uint32(r) * 16,
	})
	payload := BiomeChunk(gd.Dimension)
	for x := -r; x <= r; x++ {
		for z := -r; z <= r; z++ {
			if x*x+z*z <= r*r {
				pks = append(pks, &packet.LevelChunk{
					Position:   protocol.ChunkPos{center[0] + x, center[1] + z},
					Dimension:  gd.Dimension,
					RawPayload: payload,
				})
			}
		}
	}
	return append(pks,
		&packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn},
		&packet.UpdateAttributes{
			EntityRuntimeID: uint64(gd.EntityID),
			Attributes: []protocol.Attribute{{
				AttributeValue: protocol.AttributeValue{Name: "minecraft:movement", Value: 0.1, Max: 1024},
				DefaultMax:     1024,
				Default:        0.1,
			}},
		},
	)
}

// handleInitialised puts the player in the world.
func (j *Join) handleInitialised(pk *packet.SetLocalPlayerAsInitialised) (bool, error) {
	if j.Phase() != PhaseSpawn {
		return false, nil
	}
	if pk.EntityRuntimeID != uint64(j.gd.EntityID) {
		return false, fmt.Errorf("initialised entity %d, want %d (from StartGame)", pk.EntityRuntimeID, j.gd.EntityID)
	}
	j.setPhase(PhaseSpawned)
	return true, nil
}

// Plains is the biome BiomeChunk fills chunks with.
const Plains = 1

// BiomeChunk returns the payload of a LevelChunk with no sub-chunks in dim:
// one biome section per 16 blocks of the dimension's height, the first a
// single-value palette of plains (header 0<<1|1, the runtime flag, then the
// biome as a varint32) and each later one 0x7f<<1|1, "same as the
// previous", then a border block count of 0. The slice is shared: do not
// modify it.
func BiomeChunk(dim int32) []byte {
	switch dim {
	case packet.DimensionNether:
		return netherChunk
	case packet.DimensionEnd:
		return endChunk
	}
	return overworldChunk
}

// Section counts: the overworld is 384 blocks high (-64 to 320), the
// nether 128, the end 256.
var (
	overworldChunk = biomeChunk(384 / 16)
	netherChunk    = biomeChunk(128 / 16)
	endChunk       = biomeChunk(256 / 16)
)

func biomeChunk(sections int) []byte {
	b := []byte{0<<1 | 1, Plains << 1}
	for range sections - 1 {
		b = append(b, 0x7f<<1|1)
	}
	return append(b, 0)
}
