package motd

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// golden is the example MOTD from PROTOCOL.md.
const golden = "MCPE;Dedicated Server;527;1.19.1;0;10;13253860892328930865;Bedrock level;Survival;1;19132;19133;"

// goldenStatus is golden, parsed.
var goldenStatus = Status{
	Edition:         EditionBedrock,
	ServerName:      "Dedicated Server",
	Protocol:        527,
	Version:         "1.19.1",
	Players:         0,
	MaxPlayers:      10,
	ServerGUID:      13253860892328930865,
	LevelName:       "Bedrock level",
	GameMode:        "Survival",
	GameModeNumeric: 1,
	PortV4:          19132,
	PortV6:          19133,
}

// basalt returns a status as Basalt's server sends it.
func basalt() Status {
	return Status{
		Edition:         EditionBedrock,
		ServerName:      "Basalt",
		Protocol:        2193,
		Version:         "1.26.50",
		Players:         0,
		MaxPlayers:      10,
		ServerGUID:      1234567890123456789,
		LevelName:       "Bedrock level",
		GameMode:        "Survival",
		GameModeNumeric: 1,
		PortV4:          19132,
		PortV6:          19133,
		Extra:           []string{"0"},
	}
}

func mustEncode(t *testing.T, s Status) []byte {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatalf("Encode: got error %v, want nil", err)
	}
	return b
}

func TestGolden(t *testing.T) {
	s, err := Parse([]byte(golden))
	if err != nil {
		t.Fatalf("Parse: got error %v, want nil", err)
	}
	if !reflect.DeepEqual(s, goldenStatus) {
		t.Fatalf("Parse: got %+v, want %+v", s, goldenStatus)
	}
	if got := string(mustEncode(t, s)); got != golden {
		t.Errorf("Encode: got %q, want %q", got, golden)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate: got %v, want nil", err)
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		s    Status
		want string
	}{
		{"golden", goldenStatus, golden},
		{"basalt", basalt(), "MCPE;Basalt;2193;1.26.50;0;10;1234567890123456789;Bedrock level;Survival;1;19132;19133;0;"},
		{"education", func() Status { s := basalt(); s.Edition = EditionEducation; return s }(),
			"MCEE;Basalt;2193;1.26.50;0;10;1234567890123456789;Bedrock level;Survival;1;19132;19133;0;"},
		{"several extra fields", func() Status { s := basalt(); s.Extra = []string{"0", "1", "0"}; return s }(),
			"MCPE;Basalt;2193;1.26.50;0;10;1234567890123456789;Bedrock level;Survival;1;19132;19133;0;1;0;"},
		{"max GUID", func() Status { s := basalt(); s.ServerGUID = 1<<64 - 1; return s }(),
			"MCPE;Basalt;2193;1.26.50;0;10;18446744073709551615;Bedrock level;Survival;1;19132;19133;0;"},
		{"colour codes kept", func() Status { s := basalt(); s.ServerName = "§aGreen §lBold"; return s }(),
			"MCPE;§aGreen §lBold;2193;1.26.50;0;10;1234567890123456789;Bedrock level;Survival;1;19132;19133;0;"},
		{"zero value", Status{}, ";;0;;0;0;0;;;0;0;0;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(mustEncode(t, tc.s)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAppendEncode(t *testing.T) {
	prefix := []byte("\x1c header ")
	b, err := basalt().AppendEncode(bytes.Clone(prefix))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("got %q, want prefix %q kept", b, prefix)
	}
	if got, want := string(b[len(prefix):]), string(mustEncode(t, basalt())); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEncodePlayers(t *testing.T) {
	s := basalt()
	for _, n := range []int{0, 1, 7, 10, 11} {
		s.Players = n
		got, err := Parse(mustEncode(t, s))
		if err != nil {
			t.Fatalf("Parse: got error %v, want nil", err)
		}
		if got.Players != n {
			t.Errorf("Players: got %v, want %v", got.Players, n)
		}
		if got.MaxPlayers != s.MaxPlayers {
			t.Errorf("MaxPlayers: got %v, want %v", got.MaxPlayers, s.MaxPlayers)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Status
	}{
		{"golden", golden, goldenStatus},
		{"missing trailing semicolon", strings.TrimSuffix(golden, ";"), goldenStatus},
		{"extra zero", golden + "0;", func() Status { s := goldenStatus; s.Extra = []string{"0"}; return s }()},
		{"extra fields without final semicolon", golden + "0;1;0", func() Status {
			s := goldenStatus
			s.Extra = []string{"0", "1", "0"}
			return s
		}()},
		{"empty extra fields kept", golden + "0;;", func() Status { s := goldenStatus; s.Extra = []string{"0", ""}; return s }()},
		{"fields 0-8 only", "MCPE;PocketMine-MP Server;527;1.19.1;3;20;42;PocketMine-MP;Survival;", Status{
			Edition: EditionBedrock, ServerName: "PocketMine-MP Server", Protocol: 527, Version: "1.19.1",
			Players: 3, MaxPlayers: 20, ServerGUID: 42, LevelName: "PocketMine-MP", GameMode: "Survival",
		}},
		{"fields 0-5 only", "MCPE;a;1;v;2;3", Status{
			Edition: EditionBedrock, ServerName: "a", Protocol: 1, Version: "v", Players: 2, MaxPlayers: 3,
		}},
		{"negative GUID", "MCPE;a;1;v;2;3;-1;", Status{
			Edition: EditionBedrock, ServerName: "a", Protocol: 1, Version: "v", Players: 2, MaxPlayers: 3,
			ServerGUID: 1<<64 - 1,
		}},
		{"empty names", "MCEE;;1;v;0;1;5;;Creative;1;1;2;", Status{
			Edition: EditionEducation, Protocol: 1, Version: "v", MaxPlayers: 1, ServerGUID: 5,
			GameMode: "Creative", GameModeNumeric: 1, PortV4: 1, PortV6: 2,
		}},
		{"unknown edition kept", "MCXX;a;1;v;0;1", Status{
			Edition: "MCXX", ServerName: "a", Protocol: 1, Version: "v", MaxPlayers: 1,
		}},
		{"text kept unsanitised", "MCPE;a\\b\x01;1;v;0;1", Status{
			Edition: EditionBedrock, ServerName: "a\\b\x01", Protocol: 1, Version: "v", MaxPlayers: 1,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	// field replaces field i of golden with v.
	field := func(i int, v string) string {
		f := strings.Split(golden, ";")
		f[i] = v
		return strings.Join(f, ";")
	}
	tests := []struct {
		name      string
		in        string
		wantField string // "" when the error is not about one field
	}{
		{"empty", "", ""},
		{"one field", "MCPE", ""},
		{"five fields", "MCPE;a;1;v;0;", ""},
		{"five empty fields", ";;;;;", ""},
		{"protocol not a number", field(2, "abc"), "Protocol"},
		{"protocol empty", field(2, ""), "Protocol"},
		{"players not a number", field(4, "1x"), "Players"},
		{"max players overflows", field(5, "99999999999999999999"), "MaxPlayers"},
		{"GUID not a number", field(6, "0x10"), "ServerGUID"},
		{"GUID overflows", field(6, "18446744073709551616"), "ServerGUID"},
		{"negative GUID overflows", field(6, "-9223372036854775809"), "ServerGUID"},
		{"game mode numeric", field(9, "one"), "GameModeNumeric"},
		{"IPv4 port too big", field(10, "65536"), "PortV4"},
		{"IPv6 port negative", field(11, "-1"), "PortV6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("got %+v, nil error, want an error", s)
			}
			if !reflect.DeepEqual(s, Status{}) {
				t.Errorf("status: got %+v, want the zero value", s)
			}
			fe, ok := errors.AsType[*FieldError](err)
			switch {
			case tc.wantField == "" && ok:
				t.Errorf("got field error %v, want a non-field error", err)
			case tc.wantField != "" && !ok:
				t.Errorf("got %v, want a *FieldError", err)
			case ok && fe.Field != tc.wantField:
				t.Errorf("field: got %v, want %v", fe.Field, tc.wantField)
			case ok && !strings.Contains(err.Error(), tc.wantField):
				t.Errorf("message: got %q, want it to name %v", err, tc.wantField)
			}
		})
	}
}

// TestParsePrefixes checks that every prefix of a long status parses or
// fails cleanly, and that prefixes with fewer than MinFields fields fail.
func TestParsePrefixes(t *testing.T) {
	full := string(mustEncode(t, basalt()))
	for i := range len(full) {
		in := full[:i]
		_, err := Parse([]byte(in))
		if n := strings.Count(in, ";"); n < MinFields-1 || (n == MinFields-1 && strings.HasSuffix(in, ";")) {
			if err == nil {
				t.Errorf("Parse(%q): got nil error, want an error", in)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("n", 300)
	tests := []struct {
		name string
		s    Status
	}{
		{"golden", goldenStatus},
		{"basalt", basalt()},
		{"unicode names", func() Status {
			s := basalt()
			s.ServerName = "Båsält 世界 §c🔥"
			s.LevelName = "Ünïcode"
			return s
		}()},
		{"big numbers", func() Status {
			s := basalt()
			s.Protocol, s.Players, s.MaxPlayers = 1<<31-1, 1<<40, 1<<41
			s.ServerGUID, s.PortV4, s.PortV6 = 1<<64-1, 65535, 0
			return s
		}()},
		{"negative numbers", func() Status { s := basalt(); s.Protocol, s.Players = -1, -5; return s }()},
		{"long name within limit", func() Status { s := basalt(); s.ServerName = long; return s }()},
		{"empty extra", func() Status { s := basalt(); s.Extra = []string{"", "x", ""}; return s }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(mustEncode(t, tc.s))
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tc.s) {
				t.Errorf("got %+v, want %+v", got, tc.s)
			}
		})
	}
}

func TestEncodeSanitises(t *testing.T) {
	tests := []struct {
		name  string
		level string
		want  string // LevelName after Encode and Parse
	}{
		{"semicolon", "a;b", "a,b"},
		{"backslash", `a\;b\`, "a/,b/"},
		{"newline and tab", "line\nbreak\tx\r", "linebreakx"},
		{"NUL and DEL", "a\x00b\x7f", "ab"},
		{"C1 control", "a\u0085b", "ab"},
		{"invalid UTF-8", "a\xffb\xc3", "ab"},
		{"real replacement character kept", "a\uFFFDb", "a\uFFFDb"},
		{"colour code kept", "§6gold", "§6gold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := basalt()
			s.ServerName, s.LevelName = tc.level, tc.level
			s.Version, s.GameMode, s.Extra = "1.2"+tc.level, "S"+tc.level, []string{tc.level}
			b := mustEncode(t, s)
			if got, want := strings.Count(string(b), ";"), 13; got != want {
				t.Fatalf("separators in %q: got %v, want %v", b, got, want)
			}
			if !utf8.Valid(b) {
				t.Errorf("got invalid UTF-8 %q, want valid", b)
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			want := basalt()
			want.ServerName, want.LevelName = tc.want, tc.want
			want.Version, want.GameMode, want.Extra = "1.2"+tc.want, "S"+tc.want, []string{tc.want}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestEncodeTruncates(t *testing.T) {
	// fixed is the length of basalt() with both names empty.
	s := basalt()
	s.ServerName, s.LevelName = "", ""
	fixed := len(mustEncode(t, s))
	budget := MaxEncodedLen - fixed

	tests := []struct {
		name, server, level string
		wantServer          int // length of ServerName after Encode
		wantLevel           int
	}{
		{"fits exactly", strings.Repeat("a", budget-5), "bbbbb", budget - 5, 5},
		{"long name, short level", strings.Repeat("a", 500), "Bedrock level", budget - 13, 13},
		{"short name, long level", "Basalt", strings.Repeat("b", 500), 6, budget - 6},
		{"both long", strings.Repeat("a", 500), strings.Repeat("b", 500), budget - budget/2, budget / 2},
		// "é" is two bytes: the names must end on a rune boundary, so each
		// is cut to an even length at or below its share.
		{"two-byte runes", strings.Repeat("é", 300), strings.Repeat("é", 300),
			(budget - budget/2) &^ 1, (budget / 2) &^ 1},
		{"four-byte runes", strings.Repeat("🔥", 200), "x", (budget - 1) &^ 3, 1},
		{"sanitised length counts", strings.Repeat("\x00", 1000) + "ok", "x", 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := basalt()
			s.ServerName, s.LevelName = tc.server, tc.level
			b := mustEncode(t, s)
			if len(b) > MaxEncodedLen {
				t.Errorf("length: got %v, want at most %v", len(b), MaxEncodedLen)
			}
			if !utf8.Valid(b) {
				t.Errorf("got invalid UTF-8, want valid")
			}
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			if len(got.ServerName) != tc.wantServer {
				t.Errorf("ServerName length: got %v, want %v", len(got.ServerName), tc.wantServer)
			}
			if len(got.LevelName) != tc.wantLevel {
				t.Errorf("LevelName length: got %v, want %v", len(got.LevelName), tc.wantLevel)
			}
			if clean := strings.ReplaceAll(tc.server, "\x00", ""); !strings.HasPrefix(clean, got.ServerName) {
				t.Errorf("ServerName: got %q, want a prefix of %q", got.ServerName, clean)
			}
			if !strings.HasPrefix(tc.level, got.LevelName) {
				t.Errorf("LevelName: got %q, want a prefix of %q", got.LevelName, tc.level)
			}
			want := basalt()
			want.ServerName, want.LevelName = got.ServerName, got.LevelName
			if !reflect.DeepEqual(got, want) {
				t.Errorf("other fields: got %+v, want %+v", got, want)
			}
		})
	}
}

func TestEncodeTooLong(t *testing.T) {
	s := basalt()
	s.Extra = []string{strings.Repeat("x", MaxEncodedLen)}
	prefix := []byte("keep")
	b, err := s.AppendEncode(bytes.Clone(prefix))
	if !errors.Is(err, ErrTooLong) {
		t.Errorf("error: got %v, want %v", err, ErrTooLong)
	}
	if !bytes.Equal(b, prefix) {
		t.Errorf("buffer: got %q, want %q", b, prefix)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name        string
		change      func(s *Status)
		wantFields  []string
		wantTooLong bool
	}{
		{"valid", func(s *Status) {}, nil, false},
		{"valid education", func(s *Status) { s.Edition = EditionEducation }, nil, false},
		{"players above max allowed", func(s *Status) { s.Players = 11 }, nil, false},
		{"bad edition", func(s *Status) { s.Edition = "mcpe" }, []string{"Edition"}, false},
		{"empty edition", func(s *Status) { s.Edition = "" }, []string{"Edition"}, false},
		{"semicolon in name", func(s *Status) { s.ServerName = "a;b" }, []string{"ServerName"}, false},
		{"backslash in level", func(s *Status) { s.LevelName = `a\b` }, []string{"LevelName"}, false},
		{"newline in level", func(s *Status) { s.LevelName = "a\nb" }, []string{"LevelName"}, false},
		{"invalid UTF-8 in name", func(s *Status) { s.ServerName = "a\xff" }, []string{"ServerName"}, false},
		{"empty version", func(s *Status) { s.Version = "" }, []string{"Version"}, false},
		{"semicolon in game mode", func(s *Status) { s.GameMode = "S;" }, []string{"GameMode"}, false},
		{"empty game mode", func(s *Status) { s.GameMode = "" }, []string{"GameMode"}, false},
		{"semicolon in extra", func(s *Status) { s.Extra = []string{"0", "1;2"} }, []string{"Extra"}, false},
		{"negative protocol", func(s *Status) { s.Protocol = -1 }, []string{"Protocol"}, false},
		{"negative players", func(s *Status) { s.Players = -1 }, []string{"Players"}, false},
		{"negative max players", func(s *Status) { s.MaxPlayers = -1 }, []string{"MaxPlayers"}, false},
		{"negative game mode numeric", func(s *Status) { s.GameModeNumeric = -1 }, []string{"GameModeNumeric"}, false},
		{"too long", func(s *Status) { s.ServerName = strings.Repeat("a", 400) }, nil, true},
		{"several", func(s *Status) { s.Edition, s.ServerName, s.Players = "X", ";", -2 },
			[]string{"Edition", "ServerName", "Players"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := basalt()
			tc.change(&s)
			err := s.Validate()
			var fields []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					if fe, ok := errors.AsType[*FieldError](e); ok {
						fields = append(fields, fe.Field)
						if !strings.Contains(e.Error(), fe.Field) {
							t.Errorf("message: got %q, want it to name %v", e, fe.Field)
						}
					}
				}
			}
			if !reflect.DeepEqual(fields, tc.wantFields) {
				t.Errorf("fields: got %v (error %v), want %v", fields, err, tc.wantFields)
			}
			if got := errors.Is(err, ErrTooLong); got != tc.wantTooLong {
				t.Errorf("errors.Is(ErrTooLong): got %v, want %v", got, tc.wantTooLong)
			}
			if tc.wantFields == nil && !tc.wantTooLong && err != nil {
				t.Errorf("got %v, want nil", err)
			}
		})
	}
}

func TestEditionString(t *testing.T) {
	if got, want := EditionEducation.String(), "MCEE"; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// FuzzParse checks that Parse never panics and that, for input it accepts,
// Parse→Encode→Parse→Encode is stable and the encoding is bounded.
func FuzzParse(f *testing.F) {
	f.Add([]byte(golden))
	f.Add([]byte(strings.TrimSuffix(golden, ";")))
	f.Add([]byte(golden + "0;1;0;"))
	f.Add([]byte("MCPE;PocketMine-MP Server;527;1.19.1;3;20;42;PocketMine-MP;Survival;"))
	f.Add([]byte("MCEE;a;1;v;2;3;-1;"))
	f.Add([]byte("MCPE;§aBåsält 🔥;2193;1.26.50;0;10;1;l\\;Creative;1;19132;19133;0;"))
	b, _ := basalt().Encode()
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		s1, err := Parse(in)
		if err != nil {
			return
		}
		e1, err := s1.Encode()
		if err != nil {
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("Encode(%+v): got %v, want nil or ErrTooLong", s1, err)
			}
			return
		}
		if len(e1) > MaxEncodedLen {
			t.Fatalf("Encode: got %v bytes, want at most %v", len(e1), MaxEncodedLen)
		}
		if !utf8.Valid(e1) {
			t.Fatalf("Encode: got invalid UTF-8 %q", e1)
		}
		s2, err := Parse(e1)
		if err != nil {
			t.Fatalf("Parse(%q): got error %v, want nil", e1, err)
		}
		e2, err := s2.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): got error %v, want nil", s2, err)
		}
		if !bytes.Equal(e1, e2) {
			t.Fatalf("second Encode: got %q, want %q", e2, e1)
		}
		s3, err := Parse(e2)
		if err != nil || !reflect.DeepEqual(s2, s3) {
			t.Fatalf("second Parse: got %+v, %v, want %+v, nil", s3, err, s2)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	s := basalt()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendEncode(b *testing.B) {
	s := basalt()
	buf := make([]byte, 0, MaxEncodedLen)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = s.AppendEncode(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeTruncated(b *testing.B) {
	s := basalt()
	s.ServerName = strings.Repeat("é", 300)
	buf := make([]byte, 0, 2*MaxEncodedLen)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = s.AppendEncode(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	in := []byte(golden + "0;")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
