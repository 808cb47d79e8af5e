package packets

import (
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// Protocol 2225 (Minecraft 1.26.60 – 1.26.66) over 2193, from the diff of
// npm minecraft-data 3.119.0's bedrock/1.26.51/protocol.json and
// bedrock/1.26.60/protocol.json (testdata/diff.js lists it), with the
// golden bytes of each change in testdata/golden.json, made from that data
// by testdata/golden.js, and CloudburstMC/Protocol's *_v2225 serializers.
//
// Every packet 2225 changed is translated. A field 2225 added that
// gophertunnel's structure has no place for is written as its neutral
// value and dropped when read; a field it removed is left out when written
// and zero when read:
//   - StartGame: u8 editor_level_migration_version (0 legacy,
//     1 editor_achievements) after exported_from_editor, before
//     day_cycle_stop_time. Written 0.
//   - LevelChunk: a trailing bool client_biome_update. Written false.
//   - AddPlayer: option<PassengerOfBlockData> before device_id; AddActor:
//     the same option at the end. Written absent.
//   - Animate: a trailing u8 hand (0 main hand, 1 off hand). Written 0.
//   - InventoryTransaction: item_use_on_entity gains a u8 hand before the
//     held item, item_release one at the end. Written 0 (main hand).
//   - ItemStackRequest and PlayerAuthInput: a stack request action
//     craft_reserved (CraftReservedStackRequestAction: a string and a u8)
//     is inserted as variant 16, before non_implemented and
//     results_deprecated, which become 17 and 18.
//   - PlayerList: each added player's record gains play_fab_id after its
//     XUID, written from and read into Skin.PlayFabID; PlayerList and
//     PlayerSkin: the Skin loses play_fab_id.
//   - DimensionData: each definition gains a varint cloud_height and a
//     bool render_clouds. Written 0 and false.
//   - EducationSettings: the agent capabilities, present when
//     CanModifyBlocks is set, hold can_modify_blocks as an option.
//   - ClientboundUpdateSoundData: one update, a u8 type and its fields,
//     instead of seven optional ones; the one written and read is Resume,
//     the one clients apply (gophertunnel's doc of the packet).
//   - ServerBoundDiagnostics: system_categories becomes an option (absent
//     when empty), and each entity timing's position and dimension
//     options (absent when zero).
//   - ClientBoundAttributeLayerSync: a layer loses its noise_name; an
//     environment attribute becomes a payload type (constant, transition,
//     noise transition) and its fields: varint ticks and ease type, a
//     clock_name (written empty), and for a noise transition its
//     noise_name (written empty) and alignment. FromAttribute and
//     ToAttribute present make a transition (Attribute stands for an
//     absent one, and is read as the start), NoiseTransition a noise one.
//
// Unchanged in layout: Disconnect (DisconnectFailReason gains 150,
// sub_client_login_not_bound), LevelEvent (gains 16489,
// add_particle_ice_ball_break), CameraInstruction (EaseType becomes a
// varint, the same bytes for every value below 128, which all are), and
// enums of nested types: ContainerSlotType gains 68–71 (InventoryContent,
// InventorySlot, ItemStackResponse, ContainerRegistryCleanup),
// PersonaPieceType and MemoryCategoryCounter are renumbered (values pass
// through). Login, RequestNetworkSettings, NetworkSettings, PlayStatus and
// the encryption handshake are unchanged. Eight packets are new (IDs
// 353–360); the client pool does not know them, so Decode returns
// ErrUnknownPacket and an Adapter skips them.
var v2225 = &delta{
	protocol: 2225,
	packets: map[uint32]func(packet.Packet, protocol.IO, func(protocol.IO)){
		packet.IDStartGame: func(pk packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			var migration uint8 // legacy
			before(io, &pk.(*packet.StartGame).DayCycleLockTime, func(io protocol.IO) { io.Uint8(&migration) }, prev)
		},
		packet.IDLevelChunk: func(_ packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			prev(io)
			var clientBiomeUpdate bool
			io.Bool(&clientBiomeUpdate)
		},
		packet.IDAddPlayer: func(pk packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			before(io, &pk.(*packet.AddPlayer).DeviceID, passengerOfBlock, prev)
		},
		packet.IDAddActor: func(_ packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			prev(io)
			passengerOfBlock(io)
		},
		packet.IDAnimate: func(_ packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			prev(io)
			hand(io)
		},
		packet.IDInventoryTransaction: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			inventoryTransaction2225(io, pk.(*packet.InventoryTransaction))
		},
		packet.IDItemStackRequest: func(_ packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			prev(stackActions2225(io))
		},
		packet.IDPlayerAuthInput: func(_ packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			prev(stackActions2225(io))
		},
		packet.IDPlayerList: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			protocol.FuncIOSlice(io, &pk.(*packet.PlayerList).Entries, playerListEntry2225)
		},
		packet.IDPlayerSkin: func(pk packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			s := &pk.(*packet.PlayerSkin).Skin
			instead(io, &s.PlayFabID, nil, prev)
		},
		packet.IDDimensionData: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			protocol.FuncIOSlice(io, &pk.(*packet.DimensionData).Definitions, func(io protocol.IO, d *protocol.DimensionDefinition) {
				d.Marshal(io)
				var cloudHeight uint32
				var renderClouds bool
				io.Varuint32(&cloudHeight)
				io.Bool(&renderClouds)
			})
		},
		packet.IDEducationSettings: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			educationSettings2225(io, pk.(*packet.EducationSettings))
		},
		packet.IDClientboundUpdateSoundData: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			sd := pk.(*packet.ClientboundUpdateSoundData)
			io.Uint64(&sd.ServerSoundHandle)
			soundDataUpdate2225(io, &sd.Resume)
		},
		packet.IDServerBoundDiagnostics: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			serverBoundDiagnostics2225(io, pk.(*packet.ServerBoundDiagnostics))
		},
		packet.IDClientBoundAttributeLayerSync: func(pk packet.Packet, io protocol.IO, _ func(protocol.IO)) {
			attributeLayerSync2225(io, pk.(*packet.ClientBoundAttributeLayerSync))
		},
	},
}

func init() { register(v2225) }

// passengerOfBlock marshals option<PassengerOfBlockData>, absent when
// written. One read is skipped: block position, offset, rotation, rotation
// limit, emote type (u8).
func passengerOfBlock(io protocol.IO) {
	var present bool
	io.Bool(&present)
	if !present {
		return
	}
	var (
		pos      protocol.BlockPos
		offset   = [3]float32{}
		rot, lim float32
		emote    uint8
	)
	io.BlockPos(&pos)
	io.Float32(&offset[0])
	io.Float32(&offset[1])
	io.Float32(&offset[2])
	io.Float32(&rot)
	io.Float32(&lim)
	io.Uint8(&emote)
}

// hand marshals the u8 hand 2225 added to several packets: 0, the main
// hand, when written; dropped when read.
func hand(io protocol.IO) {
	var h uint8
	io.Uint8(&h)
}

// inventoryTransaction2225 marshals an InventoryTransaction as
// gophertunnel's Marshal does, with the hand 2225 added to two kinds of
// transaction data.
func inventoryTransaction2225(io protocol.IO, pk *packet.InventoryTransaction) {
	io.Varint32(&pk.LegacyRequestID)
	hasLegacy := pk.LegacyRequestID < -1 && (pk.LegacyRequestID&1) == 0
	io.Bool(&hasLegacy)
	if hasLegacy {
		protocol.Slice(io, &pk.LegacySetItemSlots)
	}
	io.TransactionDataType(&pk.TransactionData)
	protocol.Slice(io, &pk.Actions)
	switch d := pk.TransactionData.(type) {
	case *protocol.UseItemOnEntityTransactionData:
		before(io, &d.HeldItem, hand, d.Marshal)
	case *protocol.ReleaseItemTransactionData:
		d.Marshal(io)
		hand(io)
	default:
		pk.TransactionData.Marshal(io)
	}
}

// playerListEntry2225 marshals a player list entry as gophertunnel's
// Marshal does, with play_fab_id, from the skin, after the XUID, and the
// skin without it.
func playerListEntry2225(io protocol.IO, e *protocol.PlayerListEntry) {
	// The action: a varuint32 variant (0 remove, 1 add) and a u8 legacy
	// action, which readers ignore.
	var variant uint32
	if e.ActionType == protocol.PlayerListActionAdd {
		variant = 1
	}
	io.Varuint32(&variant)
	legacy := e.ActionType
	io.Uint8(&legacy)
	switch variant {
	case 0:
		e.ActionType = protocol.PlayerListActionRemove
	case 1:
		e.ActionType = protocol.PlayerListActionAdd
	default:
		io.UnknownEnumOption(variant, "player list entry variant")
	}
	io.UUID(&e.UUID)
	if e.ActionType == protocol.PlayerListActionRemove {
		return
	}
	io.ActorUniqueID(&e.EntityUniqueID)
	io.String(&e.Username)
	io.String(&e.XUID)
	io.String(&e.Skin.PlayFabID)
	io.String(&e.PlatformChatID)
	io.Int32(&e.BuildPlatform)
	instead(io, &e.Skin.PlayFabID, nil, e.Skin.Marshal)
	io.Bool(&e.Teacher)
	io.Bool(&e.Host)
	io.Bool(&e.SubClient)
	io.BEARGB(&e.PlayerColour)
}

// educationSettings2225 marshals EducationSettings as gophertunnel does,
// but for the agent capabilities: gophertunnel writes CanModifyBlocks as
// one option (a presence bool, the value), 2225 as an option inside an
// option: capabilities present, then can_modify_blocks present, then the
// value. Capabilities read without the flag leave CanModifyBlocks unset.
func educationSettings2225(io protocol.IO, es *packet.EducationSettings) {
	io.String(&es.CodeBuilderDefaultURI)
	io.String(&es.CodeBuilderTitle)
	io.Bool(&es.CanResizeCodeBuilder)
	io.Bool(&es.DisableLegacyTitleBar)
	io.String(&es.PostProcessFilter)
	io.String(&es.ScreenshotBorderPath)
	educationAgent2225(io, es)
	protocol.OptionalFunc(io, &es.OverrideURI, io.String)
	io.Bool(&es.HasQuiz)
	protocol.OptionalMarshaler(io, &es.ExternalLinkSettings)
}

// educationAgent2225 marshals the agent capabilities of EducationSettings
// at 2225.
func educationAgent2225(io protocol.IO, es *packet.EducationSettings) {
	v, present := es.CanModifyBlocks.Value()
	io.Bool(&present)
	if !present {
		es.CanModifyBlocks = protocol.Optional[bool]{}
		return
	}
	inner := true
	io.Bool(&inner)
	if !inner {
		es.CanModifyBlocks = protocol.Optional[bool]{}
		return
	}
	io.Bool(&v)
	es.CanModifyBlocks = protocol.Option(v)
}

// soundDataUpdate2225 marshals one sound data update as 2225 lays it out:
// a u8 type, then the fields of that type.
func soundDataUpdate2225(io protocol.IO, u *protocol.SoundDataUpdate) {
	t := uint8(u.Type)
	io.Uint8(&t)
	u.Type = uint32(t)
	switch u.Type {
	case protocol.SoundDataUpdateStop, protocol.SoundDataUpdatePause, protocol.SoundDataUpdateResume:
	case protocol.SoundDataUpdateSetVolume:
		io.Float32(&u.Volume)
	case protocol.SoundDataUpdateSetPitch:
		io.Float32(&u.Pitch)
	case protocol.SoundDataUpdateFade:
		io.Float32(&u.Duration)
		io.Float32(&u.TargetVolume)
	case protocol.SoundDataUpdateSeekTo:
		io.Float32(&u.Seconds)
	default:
		io.UnknownEnumOption(u.Type, "sound data update type")
	}
}

// serverBoundDiagnostics2225 marshals ServerBoundDiagnostics with the
// options 2225 made of system_categories and of each entity timing's
// position and dimension.
func serverBoundDiagnostics2225(io protocol.IO, pk *packet.ServerBoundDiagnostics) {
	for _, f := range []*float32{
		&pk.AverageFramesPerSecond, &pk.AverageServerSimTickTime, &pk.AverageClientSimTickTime,
		&pk.AverageBeginFrameTime, &pk.AverageInputTime, &pk.AverageRenderTime,
		&pk.AverageEndFrameTime, &pk.AverageRemainderTimePercent, &pk.AverageUnaccountedTimePercent,
	} {
		io.Float32(f)
	}
	protocol.Slice(io, &pk.MemoryCategoryValues)
	protocol.FuncIOSlice(io, &pk.EntityDiagnostics, func(io protocol.IO, e *protocol.EntityDiagnosticTimingInfo) {
		io.String(&e.DisplayName)
		io.String(&e.Entity)
		io.Uint64(&e.DurationNanos)
		io.Uint8(&e.PercentOfTotal)
		present := e.Position != [3]float32{}
		if io.Bool(&present); present {
			io.Vec3(&e.Position)
		}
		present = e.Dimension != ""
		if io.Bool(&present); present {
			io.String(&e.Dimension)
		}
	})
	protocol.Slice(io, &pk.SystemDiagnostics)
	present := len(pk.SystemCategories) != 0
	if io.Bool(&present); present {
		protocol.Slice(io, &pk.SystemCategories)
	}
	protocol.Slice(io, &pk.WhiskerScopes)
}

// attributeLayerSync2225 marshals ClientBoundAttributeLayerSync with 2225's
// layers (no noise_name) and environment attributes, and the other two
// payloads as gophertunnel does.
func attributeLayerSync2225(io protocol.IO, pk *packet.ClientBoundAttributeLayerSync) {
	io.Varuint32(&pk.PayloadType)
	switch pk.PayloadType {
	case protocol.AttributeLayerPayloadTypeUpdateLayers:
		protocol.FuncIOSlice(io, &pk.Layers, func(io protocol.IO, l *protocol.AttributeLayerData) {
			io.String(&l.Name)
			io.Varint32(&l.DimensionID)
			protocol.Single(io, &l.Settings)
			protocol.FuncIOSlice(io, &l.EnvironmentAttributes, environmentAttribute2225)
		})
	case protocol.AttributeLayerPayloadTypeUpdateSettings:
		io.String(&pk.LayerName)
		io.Varint32(&pk.DimensionID)
		protocol.Single(io, &pk.Settings)
	case protocol.AttributeLayerPayloadTypeUpdateEnvironment:
		io.String(&pk.LayerName)
		io.Varint32(&pk.DimensionID)
		protocol.FuncIOSlice(io, &pk.EnvironmentAttributes, environmentAttribute2225)
	case protocol.AttributeLayerPayloadTypeRemoveEnvironment:
		io.String(&pk.LayerName)
		io.Varint32(&pk.DimensionID)
		protocol.FuncSlice(io, &pk.RemoveAttributeNames, io.String)
	default:
		io.UnknownEnumOption(pk.PayloadType, "attribute layer payload type")
	}
}

// environmentAttribute2225 marshals an environment attribute as 2225 lays
// it out: a payload type, constant (the attribute), transition or noise
// transition (from and to, varint ticks and ease type, a clock name, and
// for noise its local ticks, noise name and alignment).
func environmentAttribute2225(io protocol.IO, a *protocol.EnvironmentAttributeData) {
	const (
		constant = iota
		transition
		noiseTransition
	)
	io.String(&a.AttributeName)
	from, hasFrom := a.FromAttribute.Value()
	to, hasTo := a.ToAttribute.Value()
	var payload uint32
	switch {
	case a.NoiseTransition:
		payload = noiseTransition
	case hasFrom || hasTo:
		payload = transition
	}
	io.Varuint32(&payload)
	switch payload {
	case constant:
		protocol.Single(io, &a.Attribute)
		return
	case transition, noiseTransition:
	default:
		io.UnknownEnumOption(payload, "environment attribute payload type")
		return
	}
	if !hasFrom {
		from = a.Attribute
	}
	if !hasTo {
		to = a.Attribute
	}
	protocol.Single(io, &from)
	protocol.Single(io, &to)
	if reading(io) {
		// Attribute is where a transition starts.
		a.Attribute = from
		a.FromAttribute, a.ToAttribute = protocol.Option(from), protocol.Option(to)
		a.NoiseTransition = payload == noiseTransition
	}
	io.Varuint32(&a.TotalTransitionTicks)
	io.Varuint32(&a.CurrentTransitionTicks)
	ease := uint32(a.EaseType)
	io.Varuint32(&ease)
	a.EaseType = int32(ease)
	var clock string
	io.String(&clock)
	if payload == noiseTransition {
		io.Varuint32(&a.LocalTransitionTicks)
		var noiseName string
		io.String(&noiseName)
		protocol.Single(io, &a.NoiseAlignment)
	}
}
