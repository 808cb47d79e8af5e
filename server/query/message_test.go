package query

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

// unhex decodes hex with spaces, for golden bytes written as a capture.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The requests and the handshake and basic stat replies are wiki.vg's
// examples (wiki.vg/Query, "Handshake" and "Basic stat").
func TestRequestGolden(t *testing.T) {
	cases := []struct {
		name string
		hex  string
		want Request
	}{
		{"handshake", "fe fd 09 00 00 00 01", Request{Type: TypeHandshake, SessionID: 1}},
		{"basic stat", "fe fd 00 00 00 00 01 00 91 29 5b", Request{Type: TypeStat, SessionID: 1, Token: 9513307}},
		{"full stat", "fe fd 00 00 00 00 01 00 91 29 5b 00 00 00 00", Request{Type: TypeStat, SessionID: 1, Token: 9513307, Full: true}},
		{"masked session id", "fe fd 09 0f 0e 0d 0c", Request{Type: TypeHandshake, SessionID: 0x0f0e0d0c}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.hex)
			var got Request
			n, err := got.Decode(b)
			if err != nil || n != len(b) {
				t.Fatalf("Decode: got %d, %v, want %d, nil", n, err, len(b))
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if enc := tc.want.Append(nil); !bytes.Equal(enc, b) {
				t.Errorf("Append: got % x, want % x", enc, b)
			}
		})
	}
}

func TestHandshakeGolden(t *testing.T) {
	want := unhex(t, "09 00 00 00 01 39 35 31 33 33 30 37 00") // "9513307"
	if got := AppendHandshake(nil, 1, 9513307); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	// The session id is echoed whole, as PocketMine does.
	want = append([]byte{0x09, 0xde, 0xad, 0xbe, 0xef}, "0\x00"...)
	if got := AppendHandshake(nil, 0xdeadbeef, 0); !bytes.Equal(got, want) {
		t.Errorf("got % x, want % x", got, want)
	}
	// The largest token a Tokens issues makes the largest reply: 16 bytes.
	if got := AppendHandshake(nil, 1, 1<<31-1); len(got) != 16 || string(got[5:]) != "2147483647\x00" {
		t.Errorf("largest token: got %q (%d bytes), want 16 bytes", got, len(got))
	}
}

func TestBasicStatGolden(t *testing.T) {
	want := unhex(t, `00 00 00 00 01 41 20 4D 69 6E 65 63 72 61 66 74
		20 53 65 72 76 65 72 00 53 4D 50 00 77 6F 72 6C 64 00 32 00 32 30 00 DD
		63 31 32 37 2E 30 2E 30 2E 31 00`)
	st := Status{HostName: "A Minecraft Server", Map: "world", NumPlayers: 2, MaxPlayers: 20, HostPort: 25565, HostIP: "127.0.0.1"}
	if got := AppendBasicStat(nil, 1, &st); !bytes.Equal(got, want) {
		t.Errorf("got\n% x\nwant\n% x", got, want)
	}
}

// The full stat as PocketMine's QueryInfo::getLongQuery builds it, spelt out
// byte by byte.
func TestFullStatGolden(t *testing.T) {
	want := "\x00" + "\x01\x02\x03\x04" +
		"splitnum\x00\x80\x00" +
		"hostname\x00Basalt\x00" +
		"gametype\x00SMP\x00" +
		"game_id\x00MINECRAFTPE\x00" +
		"version\x001.26.50\x00" +
		"server_engine\x00Basalt\x00" +
		"plugins\x00Basalt\x00" +
		"map\x00Bedrock level\x00" +
		"numplayers\x002\x00" +
		"maxplayers\x0020\x00" +
		"whitelist\x00off\x00" +
		"hostip\x000.0.0.0\x00" +
		"hostport\x0019132\x00" +
		"\x00" + "\x01player_\x00\x00" +
		"Steve\x00Alex\x00" +
		"\x00"
	st := Status{HostName: "Basalt", Version: "1.26.50", Engine: "Basalt", Map: "Bedrock level",
		NumPlayers: 2, MaxPlayers: 20, HostIP: "0.0.0.0", HostPort: 19132, Players: []string{"Steve", "Alex"}}
	if got := AppendFullStat(nil, 0x01020304, &st); string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// Set fields replace the defaults.
	st = Status{GameType: "CMP", GameID: "X", Engine: "E", Plugins: "E: p 1", Whitelist: true}
	got := string(AppendFullStat(nil, 0, &st))
	for _, kv := range []string{"gametype\x00CMP\x00", "game_id\x00X\x00", "plugins\x00E: p 1\x00", "whitelist\x00on\x00", "\x01player_\x00\x00\x00"} {
		if !strings.Contains(got, kv) {
			t.Errorf("full stat %q lacks %q", got, kv)
		}
	}
}

// A NUL in a name would end its field early and shift the others: it is
// left out.
func TestNULDropped(t *testing.T) {
	st := Status{HostName: "a\x00b", Players: []string{"\x00x\x00y\x00"}}
	if got := AppendBasicStat(nil, 0, &st); !bytes.HasPrefix(got[5:], []byte("ab\x00SMP\x00")) {
		t.Errorf("basic stat: got %q", got)
	}
	if got := AppendFullStat(nil, 0, &st); !bytes.HasSuffix(got, []byte("\x01player_\x00\x00xy\x00\x00")) {
		t.Errorf("full stat: got %q", got)
	}
}

// However many players, a full stat stays within MaxFullStat and lists as
// many whole names as fit, in order.
func TestFullStatBounded(t *testing.T) {
	var names []string
	for i := range 1000 {
		names = append(names, strings.Repeat(string(rune('a'+i%26)), 16))
	}
	st := Status{HostName: "Basalt", NumPlayers: len(names), Players: names}
	b := AppendFullStat([]byte("prefix"), 7, &st)
	reply := b[len("prefix"):]
	if len(reply) > MaxFullStat {
		t.Fatalf("got %d bytes, want at most %d", len(reply), MaxFullStat)
	}
	i := bytes.Index(reply, []byte(fullStatPlayers))
	if i < 0 || !bytes.HasSuffix(reply, []byte{0, 0}) {
		t.Fatalf("malformed reply %q", reply)
	}
	got := strings.Split(string(reply[i+len(fullStatPlayers):len(reply)-2]), "\x00")
	if len(got) < 200 || len(got) >= len(names) {
		t.Fatalf("got %d names, want as many as fit", len(got))
	}
	for j, n := range got {
		if n != names[j] {
			t.Fatalf("name %d: got %q, want %q", j, n, names[j])
		}
	}
	// One more name would not have fitted.
	if len(reply)+len(names[len(got)])+1 <= MaxFullStat {
		t.Errorf("stopped at %d bytes with room for another name", len(reply))
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"one byte", []byte{0xfe}, io.ErrUnexpectedEOF},
		{"no magic", []byte{0xfe, 0xfe, 9, 0, 0, 0, 1}, ErrNotQuery},
		{"raknet ping", []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 1}, ErrNotQuery},
		{"unknown type", []byte{0xfe, 0xfd, 0x01, 0, 0, 0, 1}, ErrUnknownType},
		{"handshake with payload", []byte{0xfe, 0xfd, 9, 0, 0, 0, 1, 0}, errLength},
		{"stat between sizes", []byte{0xfe, 0xfd, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0}, errLength},
		{"stat too long", make16(), errLength},
	}
	for _, tc := range cases {
		var r Request
		if _, err := r.Decode(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func make16() []byte {
	b := (&Request{Type: TypeStat, Full: true}).Append(nil)
	return append(b, 0)
}

// Every truncated prefix of a request fails, except the 11 bytes of a full
// stat, which are a basic stat: that is how the protocol tells them apart.
func TestDecodeTruncated(t *testing.T) {
	for _, r := range []Request{{Type: TypeHandshake, SessionID: 5}, {Type: TypeStat, Token: 6}, {Type: TypeStat, Token: 6, Full: true}} {
		b := r.Append(nil)
		for n := range len(b) {
			var got Request
			_, err := got.Decode(b[:n])
			if n == BasicStatSize && r.Full {
				if err != nil || got.Full {
					t.Errorf("%v: 11-byte prefix: got %+v, %v, want a basic stat", r.Type, got, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%+v: prefix of %d bytes decoded", r, n)
			}
		}
	}
}

func TestDecodeAllocs(t *testing.T) {
	reqs := [][]byte{{0xfe, 0xfd, 9, 1, 2, 3, 4}, {0xfe, 0xfd}, {0xfe, 0xfd, 7, 1, 2, 3, 4}, make16()}
	for _, b := range reqs {
		var r Request
		if n := testing.AllocsPerRun(100, func() { _, _ = r.Decode(b) }); n != 0 {
			t.Errorf("% x: got %v allocations, want 0", b, n)
		}
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{TypeStat: "stat", TypeHandshake: "handshake", 3: "Type(3)"} {
		if got := ty.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
