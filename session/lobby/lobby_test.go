package lobby

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basaltmc/basalt/integration/leaktest"
	"github.com/basaltmc/basalt/session"
	"github.com/basaltmc/basalt/session/packets"
	"github.com/basaltmc/basalt/session/packets/packetstest"
	"github.com/rs/zerolog"
	"github.com/sandertv/gophertunnel/minecraft"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/login"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// wait bounds every wait on a client or session.
const wait = 5 * time.Second

// startGameIDs are the packets the lobby sends on Completed, in order.
var startGameIDs = []uint32{packet.IDJigsawStructureData, packet.IDVoxelShapes, packet.IDStartGame,
	packet.IDItemRegistry, packet.IDCreativeContent}

// world is a Lobby whose sessions run over memory, for gophertunnel's
// client or a bare one.
type world struct {
	lobby   *Lobby
	network packetstest.Network
	wg      sync.WaitGroup
	mu      sync.Mutex
	ended   []error
}

// newWorld starts a lobby configured by cfg; its sessions are ended and
// waited for when the test ends.
func newWorld(t *testing.T, cfg Config) *world {
	t.Helper()
	return newLoggedWorld(t, cfg, nil)
}

// newLoggedWorld is newWorld with log as every session's logger.
func newLoggedWorld(t *testing.T, cfg Config, log *zerolog.Logger) *world {
	t.Helper()
	w := &world{lobby: New(cfg)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		w.wg.Wait()
	})
	w.network = packetstest.Network{Accept: func(conn *packetstest.End) {
		s := session.New(conn, session.Config{NewHandler: w.lobby.NewHandler, Log: log})
		w.wg.Go(func() {
			err := s.Run(ctx)
			w.mu.Lock()
			w.ended = append(w.ended, err)
			w.mu.Unlock()
		})
	}}
	return w
}

// dial joins the lobby with gophertunnel's client as name and spawns.
func (w *world) dial(t *testing.T, name string) *minecraft.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	d := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}
	conn, err := d.DialContextNetwork(ctx, w.network, "lobby")
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.DoSpawnTimeout(wait); err != nil {
		t.Fatalf("%s: spawn: %v", name, err)
	}
	return conn
}

// bare logs a bare client in, with nothing of the join done.
func (w *world) bare(t *testing.T, name string) *packetstest.Client {
	t.Helper()
	return w.bareAt(t, name, packets.BaseProtocol)
}

// bareAt logs a bare client in speaking protocol p.
func (w *world) bareAt(t *testing.T, name string, p int32) *packetstest.Client {
	t.Helper()
	server, client := packetstest.Pipe()
	w.network.Accept(server)
	c, err := packetstest.LoginProtocol(client, name, p, wait)
	if err != nil {
		t.Fatalf("%s: login: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// expectText reads from conn until a Text packet containing substr.
func expectText(t *testing.T, conn *minecraft.Conn, substr string) *packet.Text {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	defer conn.SetReadDeadline(time.Time{})
	for {
		pk, err := conn.ReadPacket()
		if err != nil {
			t.Fatalf("waiting for a Text with %q: %v", substr, err)
		}
		if txt, ok := pk.(*packet.Text); ok && strings.Contains(txt.Message, substr) {
			return txt
		}
	}
}

// expectDisconnect reads from conn until it is closed and returns the
// disconnect message.
func expectDisconnect(t *testing.T, conn *minecraft.Conn) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	for {
		_, err := conn.ReadPacket()
		if err == nil {
			continue
		}
		var de minecraft.DisconnectError
		if !errors.As(err, &de) {
			t.Fatalf("got %v, want a disconnect", err)
		}
		return string(de)
	}
}

func TestJoin(t *testing.T) {
	w := newWorld(t, Config{Greeting: "Hi {player}, welcome!", WorldName: "Test lobby"})
	conn := w.dial(t, "Steve")
	gd := conn.GameData()
	if gd.PlayerGameMode != packet.GameTypeSpectator {
		t.Errorf("got game mode %d, want spectator (%d)", gd.PlayerGameMode, packet.GameTypeSpectator)
	}
	if gd.WorldName != "Test lobby" {
		t.Errorf("got world name %q, want %q", gd.WorldName, "Test lobby")
	}
	if gd.ChunkRadius != maxChunkRadius {
		t.Errorf("got chunk radius %d, want %d (gophertunnel asks for 16)", gd.ChunkRadius, maxChunkRadius)
	}
	txt := expectText(t, conn, "welcome")
	if txt.Message != "Hi Steve, welcome!" {
		t.Errorf("got greeting %q, want %q", txt.Message, "Hi Steve, welcome!")
	}
	if got := w.lobby.Players(); len(got) != 1 || got[0] != "Steve" {
		t.Errorf("got players %q, want [Steve]", got)
	}
}

func TestOthersJoinListAndLeave(t *testing.T) {
	w := newWorld(t, Config{})
	alex := w.dial(t, "alex")
	expectText(t, alex, "Welcome")
	steve := w.dial(t, "Steve")
	expectText(t, steve, "Welcome")
	if txt := expectText(t, alex, "joined"); !strings.Contains(txt.Message, "Steve joined the lobby") {
		t.Errorf("alex got %q, want Steve's join", txt.Message)
	}

	// /list as the client sends a command, and as chat.
	if err := alex.WritePacket(&packet.CommandRequest{
		CommandLine:   "/list",
		CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer},
	}); err != nil {
		t.Fatal(err)
	}
	if txt := expectText(t, alex, "players in the lobby"); !strings.HasSuffix(txt.Message, ": alex, Steve") {
		t.Errorf("/list answered %q, want both names", txt.Message)
	}
	if err := steve.WritePacket(&packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "/LIST"}); err != nil {
		t.Fatal(err)
	}
	expectText(t, steve, "2 players in the lobby: alex, Steve")

	// Chat goes to everyone, the sender too.
	if err := steve.WritePacket(&packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "hello\nalex"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*minecraft.Conn{alex, steve} {
		txt := expectText(t, c, "hello")
		if txt.TextType != packet.TextTypeChat || txt.SourceName != "Steve" || txt.Message != "hello alex" {
			t.Errorf("got %+v, want Steve's chat with the line break replaced", txt)
		}
	}

	if err := steve.WritePacket(&packet.CommandRequest{CommandLine: "/leave"}); err != nil {
		t.Fatal(err)
	}
	if msg := expectDisconnect(t, steve); msg != leaveMessage {
		t.Errorf("/leave: got %q, want %q", msg, leaveMessage)
	}
	expectText(t, alex, "Steve left the lobby")
	if got := w.lobby.Players(); len(got) != 1 || got[0] != "alex" {
		t.Errorf("got players %q, want [alex]", got)
	}
}

func TestUnknownCommand(t *testing.T) {
	w := newWorld(t, Config{})
	c := w.dial(t, "Steve")
	if err := c.WritePacket(&packet.CommandRequest{CommandLine: "/op Steve"}); err != nil {
		t.Fatal(err)
	}
	expectText(t, c, "Unknown command")
}

func TestShutdown(t *testing.T) {
	w := newWorld(t, Config{})
	a, b := w.dial(t, "Alex"), w.dial(t, "Steve")
	joining := w.bare(t, "Late")
	w.lobby.Shutdown("Back soon.")
	for _, c := range []*minecraft.Conn{a, b} {
		if msg := expectDisconnect(t, c); msg != "Back soon." {
			t.Errorf("got %q, want %q", msg, "Back soon.")
		}
	}
	pk, err := joining.Expect(wait, isDisconnect)
	if err != nil {
		t.Fatalf("joining player: %v", err)
	}
	if d := pk.(*packet.Disconnect); d.Message != "Back soon." {
		t.Errorf("joining player got %q, want the shutdown message", d.Message)
	}
	// A player who logs in after is refused with it too.
	after := w.bare(t, "After")
	pk, err = after.Expect(wait, isDisconnect)
	if err != nil {
		t.Fatalf("player after shutdown: %v", err)
	}
	if d := pk.(*packet.Disconnect); d.Message != "Back soon." {
		t.Errorf("player after shutdown got %q, want the shutdown message", d.Message)
	}
}

func isDisconnect(pk packet.Packet) bool {
	_, ok := pk.(*packet.Disconnect)
	return ok
}

func TestJoinTimeout(t *testing.T) {
	w := newWorld(t, Config{JoinTimeout: 50 * time.Millisecond})
	c := w.bare(t, "Slow")
	pk, err := c.Expect(wait, isDisconnect)
	if err != nil {
		t.Fatal(err)
	}
	if d := pk.(*packet.Disconnect); d.Message != joinTimeoutMessage {
		t.Errorf("got %q, want %q", d.Message, joinTimeoutMessage)
	}
	// One that spawns in time has its deadline stopped: the greeting comes
	// after that.
	w2 := newWorld(t, Config{JoinTimeout: time.Minute})
	expectText(t, w2.dial(t, "Quick"), "Welcome")
	w2.lobby.mu.Lock()
	for p := range w2.lobby.players {
		p.timerMu.Lock()
		if p.joinTimer != nil {
			t.Error("join timer still armed after spawn")
		}
		p.timerMu.Unlock()
	}
	w2.lobby.mu.Unlock()
}

// TestJoinSequence plays the client with a bare one and checks every packet
// the lobby sends, in order.
func TestJoinSequence(t *testing.T) {
	for _, p := range packets.Protocols() {
		t.Run(strconv.Itoa(int(p)), func(t *testing.T) { testJoinSequence(t, p) })
	}
}

func testJoinSequence(t *testing.T, p int32) {
	w := newWorld(t, Config{Greeting: "hello {player}"})
	c := w.bareAt(t, "Steve", p)
	next := func(want ...uint32) []packet.Packet {
		t.Helper()
		var got []packet.Packet
		for _, id := range want {
			pk, err := c.Expect(wait, func(packet.Packet) bool { return true })
			if err != nil {
				t.Fatalf("waiting for %#x: %v", id, err)
			}
			if pk.ID() != id {
				t.Fatalf("got %T (%#x), want %#x", pk, pk.ID(), id)
			}
			got = append(got, pk)
		}
		return got
	}
	send := func(pk packet.Packet) {
		t.Helper()
		if err := c.WritePacket(pk); err != nil {
			t.Fatal(err)
		}
	}
	info := next(packet.IDResourcePacksInfo)[0].(*packet.ResourcePacksInfo)
	if len(info.TexturePacks) != 0 {
		t.Errorf("got %d packs, want none", len(info.TexturePacks))
	}
	send(&packet.ClientCacheStatus{Enabled: false})
	send(&packet.ResourcePackClientResponse{Response: packet.PackResponseAllPacksDownloaded})
	next(packet.IDResourcePackStack)
	send(&packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted})
	got := next(startGameIDs...)
	sg := got[2].(*packet.StartGame)
	if v, _ := session.LookupProtocol(p); sg.GameVersion != v.Name {
		t.Errorf("StartGame game version %q, want %q", sg.GameVersion, v.Name)
	}
	if sg.PlayerGameMode != packet.GameTypeSpectator || sg.EntityRuntimeID == 0 {
		t.Errorf("StartGame: game mode %d, runtime ID %d; want spectator, non-zero", sg.PlayerGameMode, sg.EntityRuntimeID)
	}
	if items := got[3].(*packet.ItemRegistry).Items; len(items) != 0 {
		t.Errorf("got %d items, want none (shield ID 0)", len(items))
	}
	send(&packet.RequestChunkRadius{ChunkRadius: 2, MaxChunkRadius: 2})
	got = next(packet.IDChunkRadiusUpdated, packet.IDAvailableCommands, packet.IDUpdateAbilities,
		packet.IDNetworkChunkPublisherUpdate)
	if r := got[0].(*packet.ChunkRadiusUpdated).ChunkRadius; r != 2 {
		t.Errorf("got radius %d, want 2", r)
	}
	var names []string
	for _, c := range got[1].(*packet.AvailableCommands).Commands {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "list leave" {
		t.Errorf("got commands %q, want list and leave", names)
	}
	layer := got[2].(*packet.UpdateAbilities).AbilityData.Layers[0]
	if want := uint32(protocol.AbilityFlying | protocol.AbilityMayFly | protocol.AbilityNoClip); layer.Values&want != want {
		t.Errorf("abilities %b lack flying, may fly and no-clip", layer.Values)
	}
	// Radius 2: the 13 chunks within two of the origin.
	chunks := next(repeat(packet.IDLevelChunk, 13)...)
	for _, pk := range chunks {
		lc := pk.(*packet.LevelChunk)
		if x, z := lc.Position[0], lc.Position[1]; x*x+z*z > 4 || lc.SubChunkCount != 0 {
			t.Errorf("chunk %v with %d sub-chunks, want within radius 2, none", lc.Position, lc.SubChunkCount)
		}
	}
	got = next(packet.IDPlayStatus, packet.IDUpdateAttributes)
	if s := got[0].(*packet.PlayStatus).Status; s != packet.PlayStatusPlayerSpawn {
		t.Errorf("got PlayStatus %d, want PlayerSpawn", s)
	}
	if a := got[1].(*packet.UpdateAttributes); a.EntityRuntimeID != sg.EntityRuntimeID || len(a.Attributes) != 1 ||
		a.Attributes[0].Name != "minecraft:movement" || a.Attributes[0].Value != 0.1 {
		t.Errorf("got %+v, want movement 0.1 for runtime ID %d", a, sg.EntityRuntimeID)
	}
	if len(w.lobby.Players()) != 0 {
		t.Error("player listed before SetLocalPlayerAsInitialised")
	}
	send(&packet.SetLocalPlayerAsInitialised{EntityRuntimeID: sg.EntityRuntimeID})
	if txt := next(packet.IDText)[0].(*packet.Text); txt.Message != "hello Steve" {
		t.Errorf("got greeting %q, want %q", txt.Message, "hello Steve")
	}
}

func repeat(id uint32, n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = id
	}
	return ids
}

func TestWrongEntityEndsJoin(t *testing.T) {
	w := newWorld(t, Config{})
	c := w.bare(t, "Steve")
	for _, pk := range []packet.Packet{
		&packet.ResourcePackClientResponse{Response: packet.PackResponseAllPacksDownloaded},
		&packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted},
		&packet.RequestChunkRadius{ChunkRadius: 1, MaxChunkRadius: 1},
		&packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 1 << 40},
	} {
		if err := c.WritePacket(pk); err != nil {
			t.Fatal(err)
		}
	}
	// The session ends without the player ever being listed.
	if _, err := c.Expect(wait, func(packet.Packet) bool { return false }); err == nil || errors.Is(err, packetstest.ErrTimeout) {
		t.Fatalf("got %v, want the connection closed", err)
	}
	if got := w.lobby.Players(); len(got) != 0 {
		t.Errorf("got players %q, want none", got)
	}
}

func TestChatRateLimit(t *testing.T) {
	var p player
	t0 := time.Unix(1000, 0)
	for i := range chatBurst {
		if !p.allowChat(t0) {
			t.Fatalf("message %d of the burst refused", i)
		}
	}
	if p.allowChat(t0) {
		t.Error("message past the burst allowed")
	}
	if p.allowChat(t0.Add(chatInterval / 2)) {
		t.Error("message allowed half an interval later")
	}
	if !p.allowChat(t0.Add(chatInterval)) {
		t.Error("message refused a full interval later")
	}
	// Tokens never pile up beyond the burst.
	later := t0.Add(time.Hour)
	for range chatBurst {
		p.allowChat(later)
	}
	if p.allowChat(later) {
		t.Error("an idle hour allowed more than a burst")
	}
}

func TestListMessage(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "Nobody is in the lobby."},
		{[]string{"Steve"}, "1 player in the lobby: Steve"},
		{[]string{"alex", "Steve"}, "2 players in the lobby: alex, Steve"},
	} {
		if got := listMessage(tc.names); got != tc.want {
			t.Errorf("listMessage(%q): got %q, want %q", tc.names, got, tc.want)
		}
	}
}

// TestNoLeaks checks that a lobby whose players have all gone keeps no
// goroutine or timer running and forgets them.
func TestNoLeaks(t *testing.T) {
	leaktest.Check(t, leaktest.Module, "github.com/sandertv/")
	w := New(Config{})
	var wg sync.WaitGroup
	network := packetstest.Network{Accept: func(conn *packetstest.End) {
		s := session.New(conn, session.Config{NewHandler: w.NewHandler})
		wg.Go(func() { _ = s.Run(context.Background()) })
	}}
	for _, name := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		conn, err := minecraft.Dialer{IdentityData: login.IdentityData{DisplayName: name}}.DialContextNetwork(ctx, network, "lobby")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
	}
	wg.Wait()
	w.mu.Lock()
	n := len(w.players)
	w.mu.Unlock()
	if n != 0 {
		t.Errorf("lobby still holds %d players", n)
	}
}

// TestPackResponses sends the resource pack responses in every order and
// repetition a client might, and checks what the lobby answers up to the
// first RequestChunkRadius: the stack at most once, only for a client that
// asked for it before Completed, and StartGame exactly once.
func TestPackResponses(t *testing.T) {
	const (
		all  = packet.PackResponseAllPacksDownloaded
		send = packet.PackResponseSendPacks
		done = packet.PackResponseCompleted
	)
	type tc struct {
		responses []byte
		stack     bool
	}
	// Every sequence of up to three responses with a Completed in it, and
	// a long one: the stack comes, once, if AllPacksDownloaded or SendPacks
	// (asking for no pack) comes before the first Completed; whatever
	// follows the first Completed changes nothing.
	var tests []tc
	var gen func(prefix []byte)
	gen = func(prefix []byte) {
		if first := slices.Index(prefix, done); first >= 0 {
			tests = append(tests, tc{slices.Clone(prefix), first > 0})
		}
		if len(prefix) == 3 {
			return
		}
		for _, r := range []byte{all, send, done} {
			gen(append(prefix, r))
		}
	}
	gen(nil)
	tests = append(tests, tc{[]byte{all, send, all, done, done, all, send, done}, true})
	names := map[byte]string{all: "all", send: "send", done: "completed"}
	for _, tc := range tests {
		var name []string
		for _, r := range tc.responses {
			name = append(name, names[r])
		}
		t.Run(strings.Join(name, " "), func(t *testing.T) {
			w := newWorld(t, Config{})
			c := w.bare(t, "Steve")
			for _, r := range tc.responses {
				if err := c.WritePacket(&packet.ResourcePackClientResponse{Response: uint32(r)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.WritePacket(&packet.RequestChunkRadius{ChunkRadius: 1, MaxChunkRadius: 1}); err != nil {
				t.Fatal(err)
			}
			var got []uint32
			for {
				pk, err := c.Expect(wait, func(packet.Packet) bool { return true })
				if err != nil {
					t.Fatalf("after %v: %v", got, err)
				}
				if pk.ID() == packet.IDChunkRadiusUpdated {
					break
				}
				got = append(got, pk.ID())
			}
			want := []uint32{packet.IDResourcePacksInfo}
			if tc.stack {
				want = append(want, packet.IDResourcePackStack)
			}
			want = append(want, startGameIDs...)
			if !slices.Equal(got, want) {
				t.Errorf("got packets %#x, want %#x", got, want)
			}
		})
	}
}

// TestPackResponsesRefused checks the responses that end the join: a client
// that refuses the packs, or asks for one the lobby does not have.
func TestPackResponsesRefused(t *testing.T) {
	for _, pk := range []*packet.ResourcePackClientResponse{
		{Response: packet.PackResponseRefused},
		{Response: packet.PackResponseSendPacks, PacksToDownload: []string{"0fba4063-dba1-4281-9b89-ff9390653530_1.0.0"}},
	} {
		w := newWorld(t, Config{})
		c := w.bare(t, "Steve")
		if err := c.WritePacket(pk); err != nil {
			t.Fatal(err)
		}
		_, err := c.Expect(wait, func(pk packet.Packet) bool { return pk.ID() == packet.IDStartGame })
		if err == nil || errors.Is(err, packetstest.ErrTimeout) {
			t.Errorf("response %d %q: got %v, want the session ended", pk.Response, pk.PacksToDownload, err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for logs.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // closed by the next Write; see changed
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote != nil {
		close(b.wrote)
		b.wrote = nil
	}
	return b.buf.Write(p)
}

// changed returns a channel closed by the next Write.
func (b *syncBuffer) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote == nil {
		b.wrote = make(chan struct{})
	}
	return b.wrote
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLifecycleLogs checks the info lines of a player who joins and leaves,
// and of one who stalls while joining: one line per event, the reason in
// reason= as the server's lines have it.
func TestLifecycleLogs(t *testing.T) {
	var out syncBuffer
	log := zerolog.New(&out).Level(zerolog.InfoLevel)
	w := newLoggedWorld(t, Config{JoinTimeout: 200 * time.Millisecond}, &log)
	conn := w.dial(t, "Steve")
	expectText(t, conn, "Welcome")
	if err := conn.WritePacket(&packet.CommandRequest{CommandLine: "/leave", CommandOrigin: protocol.CommandOrigin{Origin: protocol.CommandOriginPlayer}}); err != nil {
		t.Fatal(err)
	}
	expectDisconnect(t, conn)
	c := w.bare(t, "Slow")
	if err := c.WritePacket(&packet.ResourcePackClientResponse{Response: packet.PackResponseAllPacksDownloaded}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Expect(wait, isDisconnect); err != nil {
		t.Fatal(err)
	}
	// The session's logger names the player; the lobby's lines add to it.
	want := [][]string{
		{`"player":"Steve"`, `"reason":"/leave","message":"player left the lobby"`},
		{`"player":"Slow"`, `"reason":"timed out while joining","phase":"stack","timeout":"200ms","message":"player left while joining the lobby"`},
	}
	deadline := time.After(wait)
	for {
		changed := out.changed() // before reading, so no line is missed
		lines := strings.Split(out.String(), "\n")
		for _, l := range lines {
			if strings.Count(l, `"player":`) > 1 {
				t.Fatalf("line names the player twice: %s", l)
			}
		}
		var missing []string
		for _, w := range want {
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.Contains(l, w[0]) && strings.Contains(l, w[1])
			}) {
				missing = w
				break
			}
		}
		if missing == nil {
			// One line per event: the server's "player joined" is the
			// join's, and the leave line carries the timeout.
			for _, gone := range []string{"player joined the lobby", "player timed out while joining the lobby"} {
				if strings.Contains(out.String(), gone) {
					t.Errorf("a %q line at info:\n%s", gone, out.String())
				}
			}
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("log lacks %s:\n%s", missing, out.String())
		}
	}
}

// TestTransfer checks /transfer: an operator's client gets a Transfer to
// the address it named and its session ends; anyone else's /transfer is
// an unknown command.
func TestTransfer(t *testing.T) {
	var logs syncBuffer
	log := zerolog.New(&logs)
	w := newLoggedWorld(t, Config{Operator: func(id session.Identity) bool { return id.DisplayName == "Op" }}, &log)
	guest := w.dial(t, "Guest")
	if err := guest.WritePacket(&packet.CommandRequest{CommandLine: "/transfer 127.0.0.1:19999"}); err != nil {
		t.Fatal(err)
	}
	expectText(t, guest, "Unknown command")

	op := w.dial(t, "Op")
	for _, tc := range []struct{ line, reply string }{
		{"/transfer", "Usage: /transfer HOST:PORT"},
		{"/transfer example.com", "missing port"},
	} {
		if err := op.WritePacket(&packet.CommandRequest{CommandLine: tc.line}); err != nil {
			t.Fatal(err)
		}
		expectText(t, op, tc.reply)
	}
	if err := op.WritePacket(&packet.CommandRequest{CommandLine: "/transfer play.example.com:19133"}); err != nil {
		t.Fatal(err)
	}
	_ = op.SetReadDeadline(time.Now().Add(wait))
	for {
		pk, err := op.ReadPacket()
		if err != nil {
			t.Fatalf("waiting for the Transfer: %v", err)
		}
		if tr, ok := pk.(*packet.Transfer); ok {
			if tr.Address != "play.example.com" || tr.Port != 19133 {
				t.Errorf("got a Transfer to %s:%d, want play.example.com:19133", tr.Address, tr.Port)
			}
			break
		}
	}
	// The session ends: the client's connection closes.
	for {
		if _, err := op.ReadPacket(); err != nil {
			break
		}
	}
	for {
		changed := logs.changed()
		if strings.Contains(logs.String(), `"reason":"transferred to play.example.com:19133"`) {
			break
		}
		select {
		case <-changed:
		case <-time.After(wait):
			t.Fatalf("no leave line with the transfer in the log:\n%s", logs.String())
		}
	}
	if got := w.lobby.Players(); !slices.Equal(got, []string{"Guest"}) {
		t.Errorf("players %q after the transfer, want [Guest]", got)
	}
}

// TestOperatorCommands checks that /transfer is announced to operators
// only, and that both lists encode at every protocol.
func TestOperatorCommands(t *testing.T) {
	for _, op := range []bool{false, true} {
		cs := availableCommands(op)
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		if got := slices.Contains(names, "transfer"); got != op {
			t.Errorf("operator %v: commands %q", op, names)
		}
		for _, p := range packets.Protocols() {
			if _, err := (packets.Codec{Protocol: p}).Append(nil, &packet.AvailableCommands{Commands: cs}); err != nil {
				t.Errorf("operator %v at %d: %v", op, p, err)
			}
		}
	}
}

func TestPlayersSorted(t *testing.T) {
	tests := []struct {
		name       string
		in, want   []string
		notSpawned []string
	}{
		{"none", nil, []string{}, []string{"Alex"}},
		{"case folded", []string{"Steve", "alex", "Zed", "bob"}, []string{"alex", "bob", "Steve", "Zed"}, nil},
		{"same but for case", []string{"steve", "Steve", "STEVE"}, []string{"STEVE", "Steve", "steve"}, []string{"Alex"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Config{})
			for _, n := range tc.in {
				p := &player{name: n}
				p.spawned.Store(true)
				l.players[p] = struct{}{}
			}
			for _, n := range tc.notSpawned {
				l.players[&player{name: n}] = struct{}{}
			}
			if got := l.Players(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkPlayers sorts the names of 60 players, as /list does.
func BenchmarkPlayers(b *testing.B) {
	l := New(Config{})
	for i := range 60 {
		p := &player{name: fmt.Sprintf("Player%04d", (i*37)%60)}
		p.spawned.Store(true)
		l.players[p] = struct{}{}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Players()
	}
}
