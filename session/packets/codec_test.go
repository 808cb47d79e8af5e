package packets

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/basaltmc/basalt/session"
	"github.com/google/uuid"
	"github.com/sandertv/gophertunnel/minecraft/protocol"
	"github.com/sandertv/gophertunnel/minecraft/protocol/packet"
)

// clientPackets are packets a client sends, with fields set, as seeds and
// round-trip cases.
func clientPackets() []packet.Packet {
	return []packet.Packet{
		&packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "hello", XUID: "2535"},
		&packet.SetLocalPlayerAsInitialised{EntityRuntimeID: 1},
		&packet.RequestChunkRadius{ChunkRadius: 16, MaxChunkRadius: 32},
		&packet.CommandRequest{
			CommandLine: "/list",
			CommandOrigin: protocol.CommandOrigin{
				Origin: protocol.CommandOriginPlayer,
				UUID:   uuid.MustParse("e8f2e2a6-5c7e-4c1e-9d1e-1b5c2f3a4b5c"),
			},
			Version: "latest",
		},
		&packet.ResourcePackClientResponse{Response: packet.PackResponseCompleted},
		&packet.ClientCacheStatus{Enabled: true},
	}
}

func encode(t testing.TB, c Codec, pk packet.Packet) []byte {
	t.Helper()
	b, err := c.Append(nil, pk)
	if err != nil {
		t.Fatalf("encode %T: %v", pk, err)
	}
	return b
}

func TestCodecRoundTrip(t *testing.T) {
	for _, pk := range clientPackets() {
		b := encode(t, Codec{}, pk)
		got, err := Codec{}.Decode(session.Packet{ID: pk.ID(), Payload: b})
		if err != nil {
			t.Errorf("decode %T: %v", pk, err)
			continue
		}
		if !reflect.DeepEqual(got, pk) {
			t.Errorf("got %+v, want %+v", got, pk)
		}
	}
}

// TestCodecMatchesGophertunnel checks the payload against one written the way
// gophertunnel's Conn writes it.
func TestCodecMatchesGophertunnel(t *testing.T) {
	for _, pk := range clientPackets() {
		var want bytes.Buffer
		pk.Marshal(protocol.NewWriter(&want, 0))
		if got := encode(t, Codec{}, pk); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%T: got % x, want % x", pk, got, want.Bytes())
		}
	}
}

// TestCodecProtocols checks that a Codec speaks exactly the protocols the
// session accepts by default: a protocol added to one is added to both.
func TestCodecProtocols(t *testing.T) {
	if got, want := Protocols(), session.KnownProtocols(); !slices.Equal(got, want) {
		t.Errorf("codec speaks %v, session knows %v", got, want)
	}
	if !slices.Contains(session.KnownProtocols(), BaseProtocol) {
		t.Errorf("base protocol %d is not one the session knows, %v", BaseProtocol, session.KnownProtocols())
	}
	for _, p := range []int32{2169, 2192, 2194, 2226} {
		if _, err := (Codec{Protocol: p}).Append(nil, &packet.Text{TextType: packet.TextTypeRaw, Message: "x"}); !errors.Is(err, ErrUnknownProtocol) {
			t.Errorf("protocol %d: got %v, want ErrUnknownProtocol", p, err)
		}
	}
}

func TestDecodeAppendsNothingAliased(t *testing.T) {
	pk := &packet.Text{TextType: packet.TextTypeChat, SourceName: "Steve", Message: "hello"}
	b := encode(t, Codec{}, pk)
	got, err := Codec{}.Decode(session.Packet{ID: packet.IDText, Payload: b})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'x'
	}
	if m := got.(*packet.Text).Message; m != "hello" {
		t.Errorf("got message %q after the payload changed, want %q", m, "hello")
	}
}

func TestDecodeUnknown(t *testing.T) {
	// 0x3ff is a valid header id no packet has; PlayStatus (0x02) is one
	// only a server sends.
	for _, id := range []uint32{0x3ff, packet.IDPlayStatus, packet.IDStartGame} {
		_, err := Codec{}.Decode(session.Packet{ID: id, Payload: []byte{0, 0, 0, 0}})
		if !errors.Is(err, ErrUnknownPacket) {
			t.Errorf("id %#x: got %v, want ErrUnknownPacket", id, err)
		}
	}
}

// TestDecodeTruncated checks that every truncated prefix of a valid encoding
// fails, as an error rather than a panic.
func TestDecodeTruncated(t *testing.T) {
	for _, pk := range clientPackets() {
		b := encode(t, Codec{}, pk)
		for n := range len(b) {
			_, err := Codec{}.Decode(session.Packet{ID: pk.ID(), Payload: b[:n]})
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%T cut to %d of %d bytes: got %v, want ErrMalformed", pk, n, len(b), err)
			}
		}
	}
}

func TestDecodeLeftOver(t *testing.T) {
	for _, pk := range clientPackets() {
		b := append(encode(t, Codec{}, pk), 0)
		if _, err := (Codec{}).Decode(session.Packet{ID: pk.ID(), Payload: b}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%T with a byte left over: got %v, want ErrMalformed", pk, err)
		}
	}
}

func TestDecodeHostileLengths(t *testing.T) {
	tests := []struct {
		name    string
		id      uint32
		payload []byte
	}{
		// CommandRequest whose command line claims 4 GiB.
		{"string length", packet.IDCommandRequest, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		// A varuint32 that never ends.
		{"endless varint", packet.IDRequestChunkRadius, bytes.Repeat([]byte{0x80}, 16)},
		// Text of an enum type that does not exist.
		{"text type", packet.IDText, []byte{0, 0, 0xee, 0}},
		// Text with an empty message.
		{"empty message", packet.IDText, []byte{0, 0, packet.TextTypeRaw, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := (Codec{}).Decode(session.Packet{ID: tc.id, Payload: tc.payload}); !errors.Is(err, ErrMalformed) {
				t.Errorf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestAppendRefused(t *testing.T) {
	prefix := []byte{1, 2, 3}
	b, err := Codec{}.Append(prefix, &packet.Text{TextType: packet.TextTypeRaw})
	if err == nil {
		t.Fatal("got nil error for a Text with no message")
	}
	if !bytes.Equal(b, prefix) {
		t.Errorf("got % x, want the prefix % x back", b, prefix)
	}
}

// TestCodecShield checks that the shield ID reaches both directions: an item
// stack of the shield carries a blocking tick the other side must expect.
func TestCodecShield(t *testing.T) {
	const shield = 386
	pk := &packet.MobEquipment{
		EntityRuntimeID: 1,
		NewItem: protocol.ItemInstance{Stack: protocol.ItemStack{
			ItemType: protocol.ItemType{NetworkID: shield},
			Count:    1,
			// As they decode: no NBT, empty lists.
			CanBePlacedOn: []string{},
			CanBreak:      []string{},
			BlockingTick:  20,
		}},
	}
	with := encode(t, Codec{ShieldID: shield}, pk)
	without := encode(t, Codec{}, pk)
	if bytes.Equal(with, without) {
		t.Fatalf("the shield ID changed nothing: % x", with)
	}
	got, err := Codec{ShieldID: shield}.Decode(session.Packet{ID: pk.ID(), Payload: with})
	if err != nil {
		t.Fatalf("decode with the shield ID: %v", err)
	}
	if !reflect.DeepEqual(got, pk) {
		t.Errorf("got %+v, want %+v", got, pk)
	}
}

// FuzzDecode feeds hostile payloads to every packet a client may send: Decode
// must return an error or a packet, never panic.
func FuzzDecode(f *testing.F) {
	for _, pk := range clientPackets() {
		f.Add(uint16(pk.ID()), encode(f, Codec{}, pk))
	}
	f.Add(uint16(packet.IDPlayerAuthInput), []byte{})
	f.Add(uint16(packet.IDLogin), []byte{0, 0, 8, 0x91, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add(uint16(packet.IDInventoryTransaction), bytes.Repeat([]byte{0xff}, 32))
	f.Add(uint16(packet.IDAnimate), []byte{1, 9, 0, 0, 0, 0, 0, 0})
	// What 2225 changed, encoded at 2225.
	for _, pk := range []packet.Packet{
		&packet.InventoryTransaction{TransactionData: &protocol.UseItemOnEntityTransactionData{TargetEntityRuntimeID: 1}},
		&packet.InventoryTransaction{TransactionData: &protocol.ReleaseItemTransactionData{HotBarSlot: 1}},
		&packet.ItemStackRequest{Requests: []protocol.ItemStackRequest{{Actions: []protocol.StackRequestAction{
			&CraftReservedStackRequestAction{ReservedID: "x"}, &protocol.CraftNonImplementedStackRequestAction{},
		}}}},
		&packet.ServerBoundDiagnostics{EntityDiagnostics: []protocol.EntityDiagnosticTimingInfo{{Dimension: "d"}}},
	} {
		f.Add(uint16(pk.ID()), encode(f, Codec{Protocol: 2225}, pk))
	}
	f.Fuzz(func(t *testing.T, id uint16, payload []byte) {
		p := session.Packet{ID: uint32(id) & 0x3ff, Payload: payload}
		// Every protocol, the deltas' readers too.
		for _, proto := range Protocols() {
			c := Codec{Protocol: proto}
			pk, err := c.Decode(p)
			switch {
			case err == nil && pk == nil:
				t.Fatal("nil packet and nil error")
			case err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownPacket) && !errors.Is(err, ErrUnsupported):
				t.Fatalf("protocol %d: error %v wraps none of ErrMalformed, ErrUnknownPacket, ErrUnsupported", proto, err)
			case err == nil:
				// Whatever decoded must encode again without a panic.
				_, _ = c.Append(nil, pk)
			}
		}
	})
}
