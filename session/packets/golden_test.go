package packets

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
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
		// Unchanged.
		{"text", &packet.Text{TextType: packet.TextTypeRaw, Message: "hello"}},
		{"disconnect", &packet.Disconnect{Reason: 150, Message: "bye"}},
		{"play_status", &packet.PlayStatus{Status: packet.PlayStatusPlayerSpawn}},
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

// TestUnsupported2225 checks that a packet 2225 changed in a way Codec does
// not translate is refused both ways rather than sent in 2193's layout.
func TestUnsupported2225(t *testing.T) {
	c := Codec{Protocol: 2225}
	for _, pk := range []packet.Packet{
		&packet.PlayerList{},
		&packet.PlayerSkin{},
		&packet.DimensionData{},
		&packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{Actions: []protocol.StackRequestAction{&protocol.CraftResultsDeprecatedStackRequestAction{}}}}},
	} {
		if _, err := c.Append(nil, pk); !errors.Is(err, ErrUnsupported) {
			t.Errorf("append %T: got %v, want ErrUnsupported", pk, err)
		}
		if _, err := (Codec{}).Append(nil, pk); err != nil {
			t.Errorf("append %T at 2193: %v", pk, err)
		}
	}
	// A stack request without the renumbered actions is the same at both.
	ok := &packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{RequestID: -1, Actions: []protocol.StackRequestAction{&protocol.DropStackRequestAction{Count: 1}}}}}
	a, err1 := c.Append(nil, ok)
	b, err2 := Codec{}.Append(nil, ok)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("plain stack request: % x, %v at 2225; % x, %v at 2193", a, err1, b, err2)
	}
	// Decoding refuses it too: the client sends these.
	bad, _ := Codec{}.Append(nil, &packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{Actions: []protocol.StackRequestAction{&protocol.CraftNonImplementedStackRequestAction{}}}}})
	if _, err := c.Decode(sessionPacket(packet.IDItemStackRequest, bad)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("decode renumbered stack request: got %v, want ErrUnsupported", err)
	}
	inv, _ := Codec{}.Append(nil, &packet.InventoryTransaction{TransactionData: &protocol.NormalTransactionData{}})
	if _, err := c.Decode(sessionPacket(packet.IDInventoryTransaction, inv)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("decode InventoryTransaction: got %v, want ErrUnsupported", err)
	}
}

// sessionPacket is a raw packet.
func sessionPacket(id uint32, payload []byte) session.Packet {
	return session.Packet{ID: id, Payload: payload}
}
