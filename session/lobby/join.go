package lobby

import (
	"math"

	"github.com/go-gl/mathgl/mgl32"
	"github.com/google/uuid"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// The world the lobby spawns players in: an empty overworld, always noon,
// where each player floats as a spectator above the origin. Spectators fly,
// pass through everything and take no damage, so a player in a world
// without ground neither falls nor has anything to break; creative mode
// would let them fly too, but they would start on their feet and drop into
// the void until they thought to double-jump.
const (
	// spawnY is the player's eye height at spawn, a player's height above
	// spawnBlockY, where the ground would be.
	spawnY      = 65.62
	spawnBlockY = 64
	// noon is the time of day the world is locked at.
	noon = 6000
	// maxChunkRadius caps the view distance granted, in chunks: the chunks
	// are empty, so a client is sent only enough of them to leave its
	// loading screen.
	maxChunkRadius = 4
	// overworldSections is the number of 16-block sections in the
	// overworld's height, -64 to 320, each with its biome storage.
	overworldSections = 24
	// plainsBiome is the biome every empty chunk holds.
	plainsBiome = 1
)

// items are the item entries of the ItemRegistry the lobby sends: none, as
// nobody holds anything in an empty world. The shield item's runtime ID
// comes from them, so it is 0, the air item no stack carries data for.
var items []protocol.ItemEntry

// commands are the chat commands announced in AvailableCommands.
var commands = []protocol.Command{
	{Name: "list", Description: "Show who is in the lobby"},
	{Name: "leave", Description: "Leave the lobby"},
}

// loginPackets are sent as the lobby takes a logged-in player, after the
// PlayStatus LoginSuccess the session has buffered: the client is told
// there are no resource packs to download.
func loginPackets() []packet.Packet {
	return []packet.Packet{&packet.ResourcePacksInfo{}}
}

// packStack is the (empty) order in which to apply resource packs.
func (p *player) packStack() packet.Packet {
	return &packet.ResourcePackStack{BaseGameVersion: p.s.Version().Name}
}

// startGame returns what puts the player in the world, as gophertunnel's
// server sends it (minecraft/conn.go, startGame): the two registries newer
// clients expect before StartGame, StartGame, and the item registry, then
// the biome definitions a client reads chunks with.
func (p *player) startGame() []packet.Packet {
	return []packet.Packet{
		&packet.JigsawStructureData{StructureData: map[string]any{
			"processors":     []map[string]any{},
			"template_pools": []map[string]any{},
			"jigsaws":        []map[string]any{},
			"structure_sets": []map[string]any{},
		}},
		&packet.VoxelShapes{},
		&packet.StartGame{
			EntityUniqueID:  p.entityID,
			EntityRuntimeID: uint64(p.entityID),
			PlayerGameMode:  packet.GameTypeSpectator,
			PlayerPosition:  mgl32.Vec3{0.5, spawnY, 0.5},
			Dimension:       packet.DimensionOverworld,
			Generator:       2, // flat: the client generates nothing
			WorldGameMode:   packet.GameTypeSpectator,
			WorldSpawn:      protocol.BlockPos{0, spawnBlockY, 0},
			GameRules: []protocol.GameRule{
				{Name: "dodaylightcycle", Value: false},
				{Name: "doweathercycle", Value: false},
			},
			Time:                     noon,
			DayCycleLockTime:         noon,
			AchievementsDisabled:     true,
			MultiPlayerGame:          true,
			MultiPlayerCorrelationID: uuid.NewString(),
			CommandsEnabled:          true,
			PlayerPermissions:        packet.PermissionLevelMember,
			BaseGameVersion:          "*",
			WorldName:                p.lobby.worldName,
			GameVersion:              p.s.Version().Name,
			PropertyData:             map[string]any{},
			// The lobby has no inventory to speak of; this is what
			// current clients and servers expect.
			ServerAuthoritativeInventory: true,
		},
		&packet.ItemRegistry{Items: items},
		&packet.BiomeDefinitionList{},
	}
}

// chunkRadius returns the view distance granted for a requested one.
func chunkRadius(requested int32) int32 {
	return max(1, min(requested, maxChunkRadius))
}

// spawnPackets returns what answers the client's first RequestChunkRadius
// and spawns the player: the radius granted, the commands, the abilities
// that keep a spectator floating, the empty chunks around the spawn,
// PlayStatus PlayerSpawn and an empty creative inventory, in the order
// gophertunnel's server sends its part of them.
func (p *player) spawnPackets(requested int32) []packet.Packet {
	r := chunkRadius(requested)
	pks := []packet.Packet{
		&packet.ChunkRadiusUpdated{ChunkRadius: r},
		&packet.AvailableCommands{Commands: availableCommands()},
		p.abilities(),
		&packet.NetworkChunkPublisherUpdate{
			Position: protocol.BlockPos{0, spawnBlockY, 0},
			Radius:   uint32(r) * 16,
		},
	}
	for x := -r; x <= r; x++ {
		for z := -r; z <= r; z++ {
			if x*x+z*z <= r*r {
				pks = append(pks, emptyChunk(x, z))
			}
		}
	}
	return append(pks,
		&packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn},
		&packet.CreativeContent{},
	)
}

// availableCommands returns commands without aliases (the offset
// math.MaxUint32 points at no enum) and with one overload taking nothing.
func availableCommands() []protocol.Command {
	cs := make([]protocol.Command, len(commands))
	for i, c := range commands {
		c.AliasesOffset = math.MaxUint32
		c.Overloads = []protocol.CommandOverload{{}}
		cs[i] = c
	}
	return cs
}

// abilities returns the spectator's abilities: flying, through blocks,
// unhurt. The base layer sets every ability, so nothing is left to the
// client's defaults.
func (p *player) abilities() packet.Packet {
	return &packet.UpdateAbilities{AbilityData: protocol.AbilityData{
		EntityUniqueID:     p.entityID,
		PlayerPermissions:  packet.PermissionLevelMember,
		CommandPermissions: protocol.CommandPermissionLevelAny,
		Layers: []protocol.AbilityLayer{{
			Type:      protocol.AbilityLayerTypeBase,
			Abilities: protocol.AbilityCount - 1,
			Values: protocol.AbilityMayFly | protocol.AbilityFlying |
				protocol.AbilityNoClip | protocol.AbilityInvulnerable,
			FlySpeed:         protocol.AbilityBaseFlySpeed,
			VerticalFlySpeed: protocol.AbilityBaseVerticalFlySpeed,
			WalkSpeed:        protocol.AbilityBaseWalkSpeed,
		}},
	}}
}

// emptyChunkPayload is a chunk with no sub-chunks: one biome storage per
// section, the first a single-value palette of plains (header 0<<1|1, the
// runtime flag, then the biome as a varint32) and each later one 0x7f<<1|1,
// "same as the previous", then no border blocks.
var emptyChunkPayload = func() []byte {
	b := []byte{0<<1 | 1, plainsBiome << 1}
	for range overworldSections - 1 {
		b = append(b, 0x7f<<1|1)
	}
	return append(b, 0)
}()

// emptyChunk returns the empty chunk at chunk coordinates x, z.
func emptyChunk(x, z int32) packet.Packet {
	return &packet.LevelChunk{
		Position:   protocol.ChunkPos{x, z},
		Dimension:  packet.DimensionOverworld,
		RawPayload: emptyChunkPayload,
	}
}
