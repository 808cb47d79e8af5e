package packets

import (
	"fmt"

	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// Protocol 2225 (Minecraft 1.26.60 – 1.26.66) over 2193, from the diff of
// npm minecraft-data 3.119.0's bedrock/1.26.51/protocol.json and
// bedrock/1.26.60/protocol.json (golden bytes of each change in
// testdata/golden.json, made from that data by testdata/golden.js), and
// CloudburstMC/Protocol's *_v2225 serializers.
//
// Translated, new fields written as their neutral value and skipped when
// read:
//   - StartGame: u8 editor_level_migration_version (0 legacy,
//     1 editor_achievements) after exported_from_editor, before
//     day_cycle_stop_time. Written 0.
//   - LevelChunk: a trailing bool client_biome_update. Written false.
//   - AddPlayer: option<PassengerOfBlockData> before device_id; AddActor:
//     the same option at the end. Written absent.
//   - Animate: a trailing u8 hand (0 main hand, 1 off hand). Written 0.
//   - ItemStackRequest and PlayerAuthInput: a stack request action
//     craft_reserved is inserted before non_implemented, renumbering it and
//     results_deprecated; requests without those two translate unchanged,
//     requests with them are refused (ErrUnsupported).
//
// Not translated (ErrUnsupported): PlayerList (PlayerRecord gains
// play_fab_id; Skin loses it), PlayerSkin (Skin), InventoryTransaction
// (item_use_on_entity and item_release gain a hand), DimensionData (each
// definition gains cloud_height and render_clouds), EducationSettings,
// ClientboundUpdateSoundData (a type and a switch instead of options),
// ServerBoundDiagnostics (optional fields) and ClientboundAttributeLayerSync
// (attribute payloads).
//
// Unchanged in layout: Disconnect (DisconnectFailReason gains 150,
// sub_client_login_not_bound), LevelEvent (gains 16489,
// add_particle_ice_ball_break), CameraInstruction (EaseType becomes a
// varint, the same bytes for every value below 128, which all are), and
// enums of nested types (ContainerSlotType 68–71, PersonaPieceType,
// MemoryCategoryCounter). Login, RequestNetworkSettings, NetworkSettings,
// PlayStatus and the encryption handshake are unchanged. Nine packets are
// new (IDs 353–360); the client pool does not know them, so Decode returns
// ErrUnknownPacket.
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
			var hand uint8 // main hand
			io.Uint8(&hand)
		},
		packet.IDItemStackRequest: func(pk packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			// Checked before writing and after reading.
			for _, r := range pk.(*packet.ItemStackRequest).Requests {
				checkStackRequest2225(r)
			}
			prev(io)
			for _, r := range pk.(*packet.ItemStackRequest).Requests {
				checkStackRequest2225(r)
			}
		},
		packet.IDPlayerAuthInput: func(pk packet.Packet, io protocol.IO, prev func(protocol.IO)) {
			if r, ok := pk.(*packet.PlayerAuthInput).ItemStackRequest.Value(); ok {
				checkStackRequest2225(r)
			}
			prev(io)
			if r, ok := pk.(*packet.PlayerAuthInput).ItemStackRequest.Value(); ok {
				checkStackRequest2225(r)
			}
		},
	},
	unsupported: map[uint32]string{
		packet.IDPlayerList:                    "PlayerRecord gains play_fab_id, Skin loses it",
		packet.IDPlayerSkin:                    "Skin loses play_fab_id",
		packet.IDInventoryTransaction:          "item_use_on_entity and item_release gain a hand",
		packet.IDDimensionData:                 "definitions gain cloud_height and render_clouds",
		packet.IDEducationSettings:             "can_modify_blocks becomes an option",
		packet.IDClientboundUpdateSoundData:    "a type and a switch replace the options",
		packet.IDServerBoundDiagnostics:        "entity timing fields and memory categories become options",
		packet.IDClientBoundAttributeLayerSync: "attribute data becomes a switch on its payload type",
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

// checkStackRequest2225 refuses a stack request with an action whose number
// 2225 changed.
func checkStackRequest2225(r protocol.ItemStackRequest) {
	for _, a := range r.Actions {
		switch a.(type) {
		case *protocol.CraftNonImplementedStackRequestAction, *protocol.CraftResultsDeprecatedStackRequestAction:
			panic(fmt.Errorf("stack request action %T renumbered at protocol 2225: %w", a, ErrUnsupported))
		}
	}
}
