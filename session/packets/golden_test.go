package packets

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/basaltmc/basalt/session"
	"github.com/go-gl/mathgl/mgl32"
	"github.com/google/uuid"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// update rewrites testdata/golden.json: the base protocol's bytes from
// Codec, every later protocol's from minecraft-data (testdata/golden.js). It needs node and
// integration/js's packages (npm ci --prefix integration/js).
var update = flag.Bool("update", false, "rewrite testdata/golden.json from minecraft-data")

// goldenFile holds the golden bytes of each case at each protocol.
const goldenFile = "testdata/golden.json"

// jsModules is where integration/js installs bedrock-protocol and
// minecraft-data from its lock file.
var jsModules = filepath.Join("..", "..", "integration", "js", "node_modules")

// goldenCase is one packet at each protocol, header included, in hex by
// protocol number; the name is minecraft-data's.
type goldenCase struct {
	Name  string            `json:"name"`
	Bytes map[string]string `json:"bytes"`
}

// goldenPackets are the cases: every packet 2225 changed that Codec
// translates, as a server fills them in, and packets it left alone.
func goldenPackets() []struct {
	name string
	pk   packet.Packet
} {
	return []struct {
		name string
		pk   packet.Packet
	}{
		{"start_game", &packet.StartGame{
			EntityUniqueID:  7,
			EntityRuntimeID: 7,
			PlayerGameMode:  packet.GameTypeSpectator,
			PlayerPosition:  mgl32.Vec3{0.5, 65.62, 0.5},
			Dimension:       packet.DimensionOverworld,
			Generator:       2,
			WorldGameMode:   packet.GameTypeSpectator,
			WorldSpawn:      protocol.BlockPos{0, 64, 0},
			GameRules:       []protocol.GameRule{{Name: "dodaylightcycle", Value: false}},
			Time:            6000, DayCycleLockTime: 6000,
			AchievementsDisabled:         true,
			MultiPlayerGame:              true,
			MultiPlayerCorrelationID:     "4b1c2d3e-0000-4000-8000-000000000001",
			CommandsEnabled:              true,
			PlayerPermissions:            packet.PermissionLevelMember,
			BaseGameVersion:              "*",
			WorldName:                    "Basalt lobby",
			GameVersion:                  "1.26.60",
			PlayerMovementSettings:       protocol.PlayerMovementSettings{RewindHistorySize: 40, ServerAuthoritativeBlockBreaking: true},
			PropertyData:                 map[string]any{},
			ServerAuthoritativeInventory: true,
		}},
		{"level_chunk", &packet.LevelChunk{
			Position:   protocol.ChunkPos{-2, 3},
			Dimension:  packet.DimensionOverworld,
			RawPayload: []byte{1, 2, 0xff, 0xff, 0},
		}},
		{"add_player", &packet.AddPlayer{
			UUID:            uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"),
			Username:        "Steve",
			EntityRuntimeID: 9,
			Position:        mgl32.Vec3{1, 2, 3},
			GameType:        packet.GameTypeSpectator,
			EntityMetadata:  map[uint32]any{},
			AbilityData:     protocol.AbilityData{EntityUniqueID: 9},
			DeviceID:        "device",
			BuildPlatform:   7,
		}},
		{"add_entity", &packet.AddActor{
			EntityUniqueID:  10,
			EntityRuntimeID: 10,
			EntityType:      "minecraft:pig",
			Position:        mgl32.Vec3{1, 2, 3},
			EntityMetadata:  map[uint32]any{},
		}},
		{"animate", &packet.Animate{ActionType: packet.AnimateActionSwingArm, EntityRuntimeID: 9}},
		// 2225 renumbered two stack request actions; the others, here a
		// drop, are written the same.
		{"item_stack_request", &packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{
			RequestID: -3,
			Actions: []protocol.StackRequestAction{&protocol.DropStackRequestAction{
				Count:  1,
				Source: protocol.StackRequestSlotInfo{Container: protocol.FullContainerName{ContainerID: 12}, Slot: 2, StackNetworkID: 5},
			}},
			FilterStrings: []string{},
		}}}},
		{"player_auth_input", &packet.PlayerAuthInput{
			Position:  mgl32.Vec3{0.5, 65.62, 0.5},
			InputMode: packet.InputModeMouse,
			PlayMode:  packet.PlayModeNormal,
			Tick:      42,
		}},
		{"item_stack_request", &packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{
			RequestID: -5,
			Actions: []protocol.StackRequestAction{
				&protocol.CraftNonImplementedStackRequestAction{},
				&protocol.CraftResultsDeprecatedStackRequestAction{ResultItems: []protocol.StackRequestItem{}, TimesCrafted: 2},
			},
			FilterStrings: []string{},
		}}}},
		{"inventory_transaction", &packet.InventoryTransaction{
			LegacyRequestID: 0,
			Actions:         []protocol.InventoryAction{},
			TransactionData: &protocol.UseItemOnEntityTransactionData{
				TargetEntityRuntimeID: 9,
				ActionType:            protocol.UseItemOnEntityActionAttack,
				HotBarSlot:            2,
				Position:              mgl32.Vec3{0.5, 65.62, 0.5},
				ClickedPosition:       mgl32.Vec3{0, 1, 0},
			},
		}},
		{"inventory_transaction", &packet.InventoryTransaction{
			Actions: []protocol.InventoryAction{},
			TransactionData: &protocol.ReleaseItemTransactionData{
				ActionType:   protocol.ReleaseItemActionConsume,
				HotBarSlot:   1,
				HeadPosition: mgl32.Vec3{0.5, 65.62, 0.5},
			},
		}},
		{"player_list", &packet.PlayerList{Entries: []protocol.PlayerListEntry{{
			ActionType:     protocol.PlayerListActionAdd,
			UUID:           uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"),
			EntityUniqueID: 9,
			Username:       "Steve",
			XUID:           "2535",
			BuildPlatform:  7,
			Skin:           goldenSkin(),
			PlayerColour:   color.RGBA{R: 1, G: 2, B: 3, A: 0xff},
		}}}},
		{"player_list", &packet.PlayerList{Entries: []protocol.PlayerListEntry{{
			ActionType: protocol.PlayerListActionRemove,
			UUID:       uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"),
		}}}},
		// 2225's skin has no play_fab_id, so a PlayerSkin cannot carry
		// one: the case's is empty, so the skin reads back the same.
		{"player_skin", &packet.PlayerSkin{
			UUID:        uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"),
			Skin:        func() protocol.Skin { s := goldenSkin(); s.PlayFabID = ""; return s }(),
			NewSkinName: "new",
			OldSkinName: "old",
		}},
		{"dimension_data", &packet.DimensionData{Definitions: []protocol.DimensionDefinition{{
			Name: "minecraft:overworld", MinimumY: -64, HeightRange: 384, Generator: 2,
			PackID: uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"), DefaultBiome: "plains",
		}}}},
		{"education_settings", &packet.EducationSettings{
			CodeBuilderDefaultURI: "uri", CodeBuilderTitle: "title",
			CanModifyBlocks: protocol.Option(true),
			OverrideURI:     protocol.Option("override"),
		}},
		{"clientbound_update_sound_data", &packet.ClientboundUpdateSoundData{
			ServerSoundHandle: 42,
			Resume:            protocol.SoundDataUpdate{Type: protocol.SoundDataUpdateFade, Duration: 1.5, TargetVolume: 0.25},
		}},
		{"serverbound_diagnostics", &packet.ServerBoundDiagnostics{
			AverageFramesPerSecond: 60,
			MemoryCategoryValues:   []protocol.MemoryCategoryCounter{},
			EntityDiagnostics: []protocol.EntityDiagnosticTimingInfo{
				{DisplayName: "Pig", Entity: "minecraft:pig", DurationNanos: 1000, PercentOfTotal: 3, Position: mgl32.Vec3{1, 2, 3}, Dimension: "overworld"},
				{DisplayName: "Cow", Entity: "minecraft:cow"},
			},
			SystemDiagnostics: []protocol.SystemDiagnosticTimingInfo{},
			SystemCategories:  []protocol.SystemCategory{{CategoryName: "ticking", SystemIndex: 2}},
			WhiskerScopes:     []protocol.WhiskerScopeDataSummary{},
		}},
		{"clientbound_attribute_layer_sync", &packet.ClientBoundAttributeLayerSync{
			PayloadType: protocol.AttributeLayerPayloadTypeUpdateEnvironment,
			LayerName:   "weather",
			DimensionID: 0,
			EnvironmentAttributes: []protocol.EnvironmentAttributeData{
				{AttributeName: "rain", Attribute: protocol.AttributeData{Type: protocol.AttributeDataTypeBool, BoolValue: true}},
				{
					AttributeName:          "fog",
					FromAttribute:          protocol.Option(protocol.AttributeData{Type: protocol.AttributeDataTypeFloat, FloatValue: 0.25}),
					ToAttribute:            protocol.Option(protocol.AttributeData{Type: protocol.AttributeDataTypeFloat, FloatValue: 0.75}),
					Attribute:              protocol.AttributeData{Type: protocol.AttributeDataTypeFloat, FloatValue: 0.25},
					TotalTransitionTicks:   40,
					CurrentTransitionTicks: 10,
					EaseType:               3,
				},
			},
		}},
		// Unchanged in layout: 2225 added enum values (a level event,
		// container slot types 68–71) or made a u8 enum a varint that
		// writes the same bytes for every value (CameraInstruction's
		// ease type).
		{"level_event", &packet.LevelEvent{EventType: packet.LevelEventStartRaining, Position: mgl32.Vec3{1, 2, 3}, EventData: 5}},
		{"inventory_slot", &packet.InventorySlot{
			Slot:      3,
			Container: protocol.Option(protocol.FullContainerName{ContainerID: 12, DynamicContainerID: protocol.Option(uint32(4))}),
			NewItem:   protocol.ItemInstance{Stack: protocol.ItemStack{CanBePlacedOn: []string{}, CanBreak: []string{}}},
		}},
		{"inventory_content", &packet.InventoryContent{
			WindowID:    1,
			Content:     []protocol.ItemInstance{{Stack: protocol.ItemStack{CanBePlacedOn: []string{}, CanBreak: []string{}}}},
			Container:   protocol.FullContainerName{ContainerID: 12},
			StorageItem: protocol.ItemInstance{Stack: protocol.ItemStack{CanBePlacedOn: []string{}, CanBreak: []string{}}},
		}},
		{"item_stack_response", &packet.ItemStackResponse{Responses: []protocol.ItemStackResponse{{
			RequestID: -1,
			ContainerInfo: []protocol.StackResponseContainerInfo{{
				Container: protocol.FullContainerName{ContainerID: 12},
				SlotInfo:  []protocol.StackResponseSlotInfo{{Slot: 1, HotbarSlot: 1, Count: 2, StackNetworkID: 5}},
			}},
		}}}},
		{"container_registry_cleanup", &packet.ContainerRegistryCleanup{RemovedContainers: []protocol.FullContainerName{{ContainerID: 12}}}},
		{"camera_instruction", &packet.CameraInstruction{Set: protocol.Option(protocol.CameraInstructionSet{
			Preset: 1,
			Ease:   protocol.Option(protocol.CameraEase{Type: 3, Duration: 1.5}),
		})}},
		// Unchanged.
		{"text", &packet.Text{TextType: packet.TextTypeRaw, Message: "hello"}},
		{"disconnect", &packet.Disconnect{Reason: 150, Message: "bye"}},
		{"play_status", &packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn}},
	}
}

// goldenSkin is a skin with every field of the layouts set.
func goldenSkin() protocol.Skin {
	return protocol.Skin{
		SkinID:                    "skin",
		PlayFabID:                 "playfab",
		SkinResourcePatch:         []byte("{}"),
		SkinImageWidth:            1,
		SkinImageHeight:           1,
		SkinData:                  []byte{1, 2, 3, 4},
		Animations:                []protocol.SkinAnimation{},
		CapeData:                  []byte{},
		SkinGeometry:              []byte("{}"),
		AnimationData:             []byte{},
		GeometryDataEngineVersion: []byte("1.0.0"),
		FullID:                    "full",
		SkinColour:                color.RGBA{R: 9, G: 8, B: 7, A: 0xff},
		ArmSize:                   1,
		PersonaPieces:             []protocol.PersonaPiece{},
		PieceTintColours:          []protocol.PersonaPieceTintColour{},
		Trusted:                   true,
	}
}

// withHeader encodes pk at protocol p with its packet header.
func withHeader(t *testing.T, p int32, pk packet.Packet) []byte {
	t.Helper()
	b, err := Codec{Protocol: p}.Append(binary.AppendUvarint(nil, uint64(pk.ID())), pk)
	if err != nil {
		t.Fatalf("%T at %d: %v", pk, p, err)
	}
	return b
}

// fromMinecraftData runs golden.js on cases, filling in the bytes of every
// protocol after the base.
func fromMinecraftData(t *testing.T, cases []goldenCase) []goldenCase {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(jsModules, "minecraft-data")); err != nil {
		t.Skip("integration/js's packages are not installed: npm ci --prefix integration/js")
	}
	in, _ := json.Marshal(cases)
	modules, _ := filepath.Abs(jsModules)
	cmd := exec.Command(node, "testdata/golden.js", modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("golden.js: %v\n%s", err, stderr.Bytes())
	}
	var got []goldenCase
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("golden.js: %v\n%s", err, out)
	}
	return got
}

// baseCases returns the cases with their bytes at BaseProtocol.
func baseCases(t *testing.T) []goldenCase {
	var cases []goldenCase
	for _, c := range goldenPackets() {
		cases = append(cases, goldenCase{Name: c.name, Bytes: map[string]string{
			strconv.Itoa(int(BaseProtocol)): hex.EncodeToString(withHeader(t, BaseProtocol, c.pk)),
		}})
	}
	return cases
}

// checkGolden compares Codec's bytes of every case at every protocol with
// golden's.
func checkGolden(t *testing.T, golden []goldenCase, source string) {
	t.Helper()
	if len(golden) != len(goldenPackets()) {
		t.Fatalf("%s has %d cases, want %d: run go test -run TestGolden -args -update", source, len(golden), len(goldenPackets()))
	}
	for i, c := range goldenPackets() {
		g := golden[i]
		if g.Name != c.name {
			t.Fatalf("case %d: %s has %s, want %s", i, source, g.Name, c.name)
		}
		for _, p := range Protocols() {
			want, ok := g.Bytes[strconv.Itoa(int(p))]
			if !ok {
				t.Errorf("%s at %d: not in %s", c.name, p, source)
				continue
			}
			if got := hex.EncodeToString(withHeader(t, p, c.pk)); got != want {
				t.Errorf("%s at %d:\n Codec writes %s\n%s has     %s", c.name, p, got, source, want)
			}
		}
	}
}

// TestGolden checks Codec's bytes at each protocol against the golden
// bytes made from minecraft-data.
func TestGolden(t *testing.T) {
	if *update {
		out, _ := json.MarshalIndent(fromMinecraftData(t, baseCases(t)), "", " ")
		if err := os.WriteFile(goldenFile, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var golden []goldenCase
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, golden, goldenFile)
}

// TestGoldenFromMinecraftData makes the bytes afresh from minecraft-data and
// checks Codec against them, so a golden file edited by hand, or a Codec
// change, cannot slip through.
func TestGoldenFromMinecraftData(t *testing.T) {
	checkGolden(t, fromMinecraftData(t, baseCases(t)), "minecraft-data")
}

// TestDecode2225 reads the bytes back at 2225: every packet reads back to
// what was written (compared by its 2193 bytes, as the reader makes empty
// slices of nil ones), and the new fields are skipped, present or not.
func TestDecode2225(t *testing.T) {
	read := func(pk packet.Packet, b []byte) (packet.Packet, int) {
		t.Helper()
		got := reflect.New(reflect.TypeOf(pk).Elem()).Interface().(packet.Packet)
		m, err := marshaler(deltas, got)
		if err != nil {
			t.Fatal(err)
		}
		buf := bytes.NewBuffer(b)
		m(protocol.NewReader(buf, 0, true))
		return got, buf.Len()
	}
	for _, c := range goldenPackets() {
		b := withHeader(t, 2225, c.pk)
		_, n := binary.Uvarint(b)
		got, left := read(c.pk, b[n:])
		if left != 0 {
			t.Errorf("%s: %d bytes left over", c.name, left)
		}
		if g, w := withHeader(t, 2193, got), withHeader(t, 2193, c.pk); !bytes.Equal(g, w) {
			t.Errorf("%s: read back as % x, want % x", c.name, g, w)
		}
	}
	// A passenger of a block, which Basalt never writes, is skipped.
	pk := &packet.AddActor{EntityType: "minecraft:pig", EntityMetadata: map[uint32]any{}}
	b := withHeader(t, 2193, pk)[1:]
	b = append(b, 1)                    // present
	b = append(b, 2, 4, 6)              // block position (varint32 x, varuint32 y, varint32 z)
	b = append(b, make([]byte, 5*4)...) // offset, rotation, rotation limit
	b = append(b, 1)                    // emote type riding
	got, left := read(pk, b)
	if g, w := withHeader(t, 2193, got), withHeader(t, 2193, pk); left != 0 || !bytes.Equal(g, w) {
		t.Errorf("AddActor with a passenger of a block: %d bytes left, read back as % x, want % x", left, g, w)
	}
}

// TestNothingUnsupported2225 checks that 2225 refuses no packet: every
// packet of gophertunnel's pools, zero, encodes at 2225 without
// ErrUnsupported (some refuse a zero field, which is another error).
func TestNothingUnsupported2225(t *testing.T) {
	if n := len(v2225.unsupported); n != 0 {
		t.Errorf("the 2225 delta refuses %d packets: %v", n, v2225.unsupported)
	}
	c := Codec{Protocol: 2225}
	for _, pool := range []packet.Pool{packet.NewClientPool(), packet.NewServerPool()} {
		for _, newPacket := range pool {
			pk := newPacket()
			if _, err := c.Append(nil, pk); errors.Is(err, ErrUnsupported) {
				t.Errorf("append %T at 2225: %v", pk, err)
			}
		}
	}
}

// TestStackActions2225 checks the renumbered stack request actions: each
// reads back as written at 2225, the added one cannot be written at 2193,
// and the two it renumbered are one higher at 2225.
func TestStackActions2225(t *testing.T) {
	c := Codec{Protocol: 2225}
	for _, a := range []protocol.StackRequestAction{
		&CraftReservedStackRequestAction{ReservedID: "x", TimesCrafted: 2},
		&protocol.CraftNonImplementedStackRequestAction{},
		&protocol.CraftResultsDeprecatedStackRequestAction{TimesCrafted: 3, ResultItems: []protocol.StackRequestItem{}},
		&protocol.DropStackRequestAction{Count: 1},
	} {
		pk := &packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{RequestID: -1, Actions: []protocol.StackRequestAction{a}, FilterStrings: []string{}}}}
		b, err := c.Append(nil, pk)
		if err != nil {
			t.Fatalf("%T: %v", a, err)
		}
		got, err := c.Decode(sessionPacket(pk.ID(), b))
		if err != nil {
			t.Fatalf("%T: decode: %v", a, err)
		}
		if !reflect.DeepEqual(got, pk) {
			t.Errorf("%T: read back as %#v, want %#v", a, got, pk)
		}
		old, err := Codec{}.Append(nil, pk)
		if _, reserved := a.(*CraftReservedStackRequestAction); reserved {
			if err == nil {
				t.Errorf("%T written at 2193", a)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%T at 2193: %v", a, err)
		}
		// The request count, RequestID -1 and the action count are a
		// byte each: the variant is the fourth.
		want := old[3]
		if _, renumbered := a.(*protocol.DropStackRequestAction); !renumbered {
			want++
		}
		if b[3] != want {
			t.Errorf("%T: variant %d at 2225, want %d (%d at 2193)", a, b[3], want, old[3])
		}
	}
}

// sessionPacket is a raw packet.
func sessionPacket(id uint32, payload []byte) session.Packet {
	return session.Packet{ID: id, Payload: payload}
}

// TestEveryChangeHasAGoldenCase runs testdata/diff.js on each step of
// golden.js's versions and checks that every packet whose layout the step
// changed has a golden case, so a delta cannot leave one untested.
func TestEveryChangeHasAGoldenCase(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(jsModules, "minecraft-data")); err != nil {
		t.Skip("integration/js's packages are not installed: npm ci --prefix integration/js")
	}
	cases := map[string]bool{}
	for _, c := range goldenPackets() {
		cases[c.name] = true
	}
	modules, _ := filepath.Abs(jsModules)
	for _, step := range [][2]string{{"1.26.51", "1.26.60"}} {
		out, err := exec.Command(node, "testdata/diff.js", modules, step[0], step[1]).Output()
		if err != nil {
			t.Fatalf("diff.js %s %s: %v", step[0], step[1], err)
		}
		var diff struct {
			Changed []struct {
				Name string `json:"name"`
			} `json:"changed"`
		}
		if err := json.Unmarshal(out, &diff); err != nil {
			t.Fatal(err)
		}
		if len(diff.Changed) == 0 {
			t.Fatalf("diff.js %s %s lists no changed packet", step[0], step[1])
		}
		for _, c := range diff.Changed {
			if !cases[c.Name] {
				t.Errorf("%s changed from %s to %s and has no golden case", c.Name, step[0], step[1])
			}
		}
	}
}
