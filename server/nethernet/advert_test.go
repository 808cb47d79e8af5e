package nethernet

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/df-mc/go-nethernet/discovery"
)

// bds12651 is the discovery response data Bedrock Dedicated Server
// 1.26.51.1 sent in offline mode, as captured in PrismarineJS
// bedrock-protocol test/nethernetAdvertisement.test.js (constant
// bds12651) at commit 54de1610dcd7f6868c68b1692d94b2bf14974612; its
// layout is documented in docs/nethernet-advertisements.md at commit
// ad8c287c55e660ab28377cc8990826920e83763e.
const bds12651 = "0712707269736d6172696e652d6861726e657373a22207312e32362e35310d" +
	"426564726f636b206c6576656c0014000000000110316163356534383139393263" +
	"32356130" + "08"

// bds12651Advert is what bds12651 holds, field by field as that test
// asserts it.
var bds12651Advert = Advertisement{
	Version:               AdvertVersion7,
	MOTD:                  "prismarine-harness",
	Protocol:              2193,
	GameVersion:           "1.26.51",
	LevelName:             "Bedrock level",
	PlayerCount:           0,
	MaxPlayers:            10,
	GameMode:              0,
	AcceptsOnlineAuth:     false,
	AcceptsSelfSignedAuth: true,
	Nonce:                 "1ac5e481992c25a0",
	ConnectionType:        ConnectionTypeLANSignaling,
}

// v4Golden is a layout 4 advertisement written out by hand from the
// layout: u8 4, u8-length "old" and "world", game mode 1, int32 LE 2 and
// 8, not editor, hardcore, trailer 4 and 8.
const v4Golden = "04" + "036f6c64" + "05776f726c64" + "01" + "02000000" +
	"08000000" + "00" + "01" + "0408"

var v4GoldenAdvert = Advertisement{
	Version:     AdvertVersion4,
	MOTD:        "old",
	LevelName:   "world",
	GameMode:    1,
	PlayerCount: 2,
	MaxPlayers:  8,
	Hardcore:    true,
	Trailer4:    [2]uint8{4, 8},
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAdvertisementGolden(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want Advertisement
	}{
		{"bds 1.26.51.1 layout 7", bds12651, bds12651Advert},
		{"layout 4", v4Golden, v4GoldenAdvert},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(t, tc.hex)
			var got Advertisement
			n, err := got.Decode(b)
			if err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if n != len(b) {
				t.Fatalf("Decode consumed: got %v, want %v", n, len(b))
			}
			if got != tc.want {
				t.Fatalf("Decode: got %+v, want %+v", got, tc.want)
			}
			if enc := tc.want.Append(nil); !bytes.Equal(enc, b) {
				t.Fatalf("Append: got %x, want %x", enc, b)
			}
			enc, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(enc, b) {
				t.Fatalf("MarshalBinary: got %x, %v, want %x, nil", enc, err, b)
			}
			prefix := []byte{0xaa, 0xbb}
			if enc := got.Append(prefix); !bytes.Equal(enc[:2], prefix) || !bytes.Equal(enc[2:], b) {
				t.Fatalf("Append to a prefix: got %x, want aabb%x", enc, b)
			}
			var u Advertisement
			if err := u.UnmarshalBinary(b); err != nil || u != tc.want {
				t.Fatalf("UnmarshalBinary: got %+v, %v, want %+v, nil", u, err, tc.want)
			}
		})
	}
}

func TestAdvertisementRoundTrip(t *testing.T) {
	multi := strings.Repeat("é", 100) + "§a✓"
	tests := []struct {
		name string
		in   Advertisement
	}{
		{"zero value is layout 7", Advertisement{}},
		{"layout 7 every field", Advertisement{
			Version: AdvertVersion7, MOTD: multi, Protocol: 2193, GameVersion: "1.26.60",
			LevelName: "world", PlayerCount: 3, MaxPlayers: 20, GameMode: 1,
			EditorWorld: true, Hardcore: true, AcceptsOnlineAuth: true,
			AcceptsSelfSignedAuth: true, Nonce: "00112233445566778899aabbccddeeff",
			ConnectionType: ConnectionTypeLANSignaling,
		}},
		{"layout 7 extremes", Advertisement{
			Version: AdvertVersion7, Protocol: math.MaxInt32, PlayerCount: math.MinInt32,
			MaxPlayers: -1, GameMode: math.MinInt32, ConnectionType: math.MaxInt32,
			MOTD: strings.Repeat("m", maxAdvertString), Nonce: strings.Repeat("n", maxAdvertString),
		}},
		{"layout 4 every field", Advertisement{
			Version: AdvertVersion4, MOTD: strings.Repeat("x", maxAdvertString4), LevelName: multi,
			GameMode: 255, PlayerCount: math.MinInt32, MaxPlayers: math.MaxInt32,
			EditorWorld: true, Hardcore: true, Trailer4: [2]uint8{0xff, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.in.Append(nil)
			var got Advertisement
			n, err := got.Decode(enc)
			if err != nil {
				t.Fatalf("Decode: got error %v, want nil", err)
			}
			if n != len(enc) {
				t.Fatalf("Decode consumed: got %v, want %v", n, len(enc))
			}
			want := tc.in
			want.Version = tc.in.version()
			if got != want {
				t.Fatalf("round trip: got %+v, want %+v", got, want)
			}
		})
	}
}

// TestAdvertisementTruncated checks that every prefix of an advertisement
// that stops inside a required field fails with io.ErrUnexpectedEOF, and
// that layout 4's optional trailer may be cut anywhere.
func TestAdvertisementTruncated(t *testing.T) {
	tests := []struct {
		name     string
		hex      string
		required int // bytes every decodable prefix holds
	}{
		{"layout 7", bds12651, len(bds12651) / 2},
		{"layout 4", v4Golden, len(v4Golden)/2 - 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(t, tc.hex)
			for i := range b {
				var a Advertisement
				n, err := a.Decode(b[:i])
				if i < tc.required {
					if !errors.Is(err, io.ErrUnexpectedEOF) || n != 0 {
						t.Fatalf("Decode(%d of %d bytes): got %v, %v, want 0, io.ErrUnexpectedEOF", i, len(b), n, err)
					}
					if err := a.UnmarshalBinary(b[:i]); err == nil {
						t.Fatalf("UnmarshalBinary(%d of %d bytes): got nil, want an error", i, len(b))
					}
					continue
				}
				if err != nil || n != i {
					t.Fatalf("Decode(%d of %d bytes): got %v, %v, want %v, nil", i, len(b), n, err, i)
				}
			}
		})
	}
	t.Run("layout 4 trailer defaults", func(t *testing.T) {
		b := mustHex(t, v4Golden)
		var a Advertisement
		if _, err := a.Decode(b[:len(b)-4]); err != nil {
			t.Fatalf("Decode without trailer: got %v, want nil", err)
		}
		if a.EditorWorld || a.Hardcore || a.Trailer4 != [2]uint8{4, 8} {
			t.Fatalf("trailer defaults: got %v %v %v, want false false [4 8]", a.EditorWorld, a.Hardcore, a.Trailer4)
		}
		if _, err := a.Decode(b[:len(b)-1]); err != nil || a.Trailer4 != [2]uint8{4, 8} || !a.Hardcore {
			t.Fatalf("Decode without the last byte: got %+v, %v", a, err)
		}
	})
}

func TestAdvertisementInvalid(t *testing.T) {
	fixture := mustHex(t, bds12651)
	long := binary.AppendUvarint([]byte{AdvertVersion7}, maxAdvertString+1)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"layout 0", []byte{0}, errAdvertVersion},
		{"layout 5", append([]byte{5}, fixture[1:]...), errAdvertVersion},
		{"layout 6", append([]byte{6}, fixture[1:]...), errAdvertVersion},
		{"layout 8", append([]byte{8}, fixture[1:]...), errAdvertVersion},
		{"layout 255", []byte{255}, errAdvertVersion},
		{"varint of six bytes", []byte{7, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, errAdvertVarint},
		{"varint past 32 bits", []byte{7, 0, 0xff, 0xff, 0xff, 0xff, 0x1f}, errAdvertVarint},
		{"string over the limit, no bytes behind it", long, errAdvertString},
		{"string over the limit", append(long, make([]byte, maxAdvertString+1)...), errAdvertString},
		{"string length past the end", []byte{7, 0x7f, 'a'}, io.ErrUnexpectedEOF},
		{"layout 4 string past the end", []byte{4, 0xff, 'a'}, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Advertisement
			n, err := a.Decode(tc.b)
			if !errors.Is(err, tc.want) || n != 0 {
				t.Fatalf("Decode(%x): got %v, %v, want 0, %v", tc.b, n, err, tc.want)
			}
		})
	}
}

func TestAdvertisementTrailing(t *testing.T) {
	tests := []struct {
		name string
		hex  string
	}{
		{"layout 7", bds12651},
		{"layout 4", v4Golden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := append(mustHex(t, tc.hex), 0)
			var a Advertisement
			if n, err := a.Decode(b); err != nil || n != len(b)-1 {
				t.Fatalf("Decode: got %v, %v, want %v, nil", n, err, len(b)-1)
			}
			if err := a.UnmarshalBinary(b); !errors.Is(err, errAdvertTrailing) {
				t.Fatalf("UnmarshalBinary: got %v, want %v", err, errAdvertTrailing)
			}
		})
	}
}

// TestAdvertisementCutsLongStrings checks that a string longer than its
// layout allows is cut at a UTF-8 boundary and the result decodes.
func TestAdvertisementCutsLongStrings(t *testing.T) {
	long := "a" + strings.Repeat("€", maxAdvertString) // 3-byte runes, off by one
	tests := []struct {
		name  string
		in    Advertisement
		limit int
	}{
		{"layout 7", Advertisement{MOTD: long, LevelName: long}, maxAdvertString},
		{"layout 4", Advertisement{Version: AdvertVersion4, MOTD: long, LevelName: long}, maxAdvertString4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Advertisement
			if err := got.UnmarshalBinary(tc.in.Append(nil)); err != nil {
				t.Fatalf("UnmarshalBinary: got %v, want nil", err)
			}
			for _, s := range []string{got.MOTD, got.LevelName} {
				if len(s) > tc.limit || len(s) < tc.limit-3 || !utf8.ValidString(s) || !strings.HasPrefix(long, s) {
					t.Fatalf("cut string: got %d bytes (valid UTF-8 %v), want a prefix of %d..%d bytes",
						len(s), utf8.ValidString(s), tc.limit-3, tc.limit)
				}
			}
		})
	}
}

func TestAdvertisementMarshalUnknownVersion(t *testing.T) {
	for _, v := range []uint8{1, 5, 6, 8, 255} {
		a := Advertisement{Version: v}
		if b, err := a.MarshalBinary(); !errors.Is(err, errAdvertVersion) || b != nil {
			t.Fatalf("MarshalBinary(version %d): got %x, %v, want nil, %v", v, b, err, errAdvertVersion)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Append(version %d): got no panic, want one", v)
				}
			}()
			a.Append(nil)
		}()
	}
}

// TestAdvertisementResponsePacket checks the framing a client reads: the
// discovery response carries the advertisement as lowercase hex text
// behind a uint32 little-endian length, and survives go-nethernet's
// Marshal and Unmarshal unchanged.
func TestAdvertisementResponsePacket(t *testing.T) {
	data := bds12651Advert.Append(nil)
	var body bytes.Buffer
	(&discovery.ResponsePacket{ApplicationData: data}).Write(&body)
	want := binary.LittleEndian.AppendUint32(nil, uint32(len(bds12651)))
	want = append(want, bds12651...)
	if !bytes.Equal(body.Bytes(), want) {
		t.Fatalf("response body: got %q, want %q", body.Bytes(), want)
	}

	const sender = 0x0123456789abcdef
	pk, from, err := discovery.Unmarshal(discovery.Marshal(&discovery.ResponsePacket{ApplicationData: data}, sender))
	if err != nil || from != sender {
		t.Fatalf("discovery.Unmarshal: got sender %x, %v, want %x, nil", from, err, uint64(sender))
	}
	resp, ok := pk.(*discovery.ResponsePacket)
	if !ok {
		t.Fatalf("discovery.Unmarshal: got %T, want *discovery.ResponsePacket", pk)
	}
	var got Advertisement
	if err := got.UnmarshalBinary(resp.ApplicationData); err != nil || got != bds12651Advert {
		t.Fatalf("advertisement through the packet: got %+v, %v, want %+v, nil", got, err, bds12651Advert)
	}
}

func TestAdvertisementGameModeID(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"survival", 0},
		{"Survival", 0},
		{"creative", 1},
		{"Creative", 1},
		{"ADVENTURE", 2},
		{"spectator", 6},
		{"", 0},
		{"hardcore", 0},
	}
	for _, tc := range tests {
		if got := GameModeID(tc.in); got != tc.want {
			t.Errorf("GameModeID(%q): got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// advertFuzzSlack is how many bytes longer than it consumed a decoded
// advertisement may re-encode: layout 4 fills in its missing trailer.
const advertFuzzSlack = 4

func FuzzAdvertisement(f *testing.F) {
	f.Add(mustHex(f, bds12651))
	f.Add(mustHex(f, v4Golden))
	f.Add(mustHex(f, v4Golden)[:len(v4Golden)/2-3])
	f.Add(new(Advertisement).Append(nil))
	f.Add([]byte{7, 0x80, 0x80, 0x80, 0x80, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Advertisement
		n, err := a.Decode(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("failed Decode consumed: got %v, want 0", n)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("Decode consumed: got %v, want 1..%v", n, len(b))
		}
		enc := a.Append(nil)
		if len(enc) > n+advertFuzzSlack {
			t.Fatalf("re-encoded size: got %v, want at most %v", len(enc), n+advertFuzzSlack)
		}
		var again Advertisement
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-decode(%x): got %v, want nil", enc, err)
		}
		if again != a {
			t.Fatalf("re-decode: got %+v, want %+v", again, a)
		}
		if enc2 := again.Append(nil); !bytes.Equal(enc2, enc) {
			t.Fatalf("re-encode: got %x, want %x", enc2, enc)
		}
	})
}

func BenchmarkAdvertisementAppend(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = bds12651Advert.Append(buf[:0])
	}
}

func BenchmarkAdvertisementDecode(b *testing.B) {
	data := mustHex(b, bds12651)
	b.ReportAllocs()
	var a Advertisement
	for b.Loop() {
		if _, err := a.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
