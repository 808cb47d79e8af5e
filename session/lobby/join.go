package lobby

import (
	"math"
	"slices"

	"github.com/basaltmc/basalt/session/join"
	"github.com/go-gl/mathgl/mgl32"
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
)

// items are the item entries of the ItemRegistry the lobby sends: none, as
// nobody holds anything in an empty world. The shield item's runtime ID
// comes from them, so it is 0, the air item no stack carries data for.
var items []protocol.ItemEntry

// commands are the chat commands announced in AvailableCommands, and
// operatorCommands those announced to operators too.
var (
	commands = []protocol.Command{
		{Name: "list", Description: "Show who is in the lobby", Overloads: []protocol.CommandOverload{{}}},
		{Name: "leave", Description: "Leave the lobby", Overloads: []protocol.CommandOverload{{}}},
	}
	operatorCommands = []protocol.Command{
		{Name: "transfer", Description: "Send yourself to another server", Overloads: []protocol.CommandOverload{{
			Parameters: []protocol.CommandParameter{{Name: "address", Type: protocol.CommandArgValid | protocol.CommandArgTypeRawText}},
		}}},
	}
)

// gameData returns the world the player joins, for session/join.
func (p *player) gameData() join.GameData {
	return join.GameData{
		EntityID:         p.entityID,
		WorldName:        p.lobby.worldName,
		PlayerGameMode:   packet.GameTypeSpectator,
		WorldGameMode:    packet.GameTypeSpectator,
		PlayerPosition:   mgl32.Vec3{0.5, spawnY, 0.5},
		Dimension:        packet.DimensionOverworld,
		Generator:        2, // flat: the client generates nothing
		WorldSpawn:       protocol.BlockPos{0, spawnBlockY, 0},
		Time:             noon,
		DayCycleLockTime: noon,
		GameRules: []protocol.GameRule{
			{Name: "dodaylightcycle", Value: false},
			{Name: "doweathercycle", Value: false},
		},
		PlayerPermissions: packet.PermissionLevelMember,
		Items:             items,
		MaxChunkRadius:    maxChunkRadius,
		BeforeSpawn: []packet.Packet{
			&packet.AvailableCommands{Commands: availableCommands(p.operator)},
			p.abilities(),
		},
	}
}

// availableCommands returns commands, and operatorCommands for an
// operator, without aliases (the offset math.MaxUint32 points at no enum).
func availableCommands(operator bool) []protocol.Command {
	cs := slices.Clone(commands)
	if operator {
		cs = append(cs, operatorCommands...)
	}
	for i := range cs {
		cs[i].AliasesOffset = math.MaxUint32
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
