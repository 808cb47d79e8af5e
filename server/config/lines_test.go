package config

import (
	"strings"
	"testing"
)

// TestLoadConfigErrorsNameLine checks a value the checks refuse is
// reported with the line that set it, its key and the fix.
func TestLoadConfigErrorsNameLine(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"one key", "[server]\n\nmax_players = 0\n", []string{"line 3: server.max_players: 0 is less than 1"}},
		{"an index", "[raknet]\n# versions\nprotocol_versions = [11, 12]\n",
			[]string{"line 3: raknet.protocol_versions[1]: 12 is not a RakNet version Bedrock clients speak; list only [11 10]"}},
		{"two keys, one set", "[network]\naddress_v4 = \"\"\naddress_v6 = \"\"\n",
			[]string{"line 2: network.address_v4, network.address_v6: both are empty"}},
		{"dotted key", "server.max_players = -1\n", []string{"line 1: server.max_players: -1 is less than 1"}},
		{"two problems", "[log]\nlevel = \"loud\"\n[metrics]\npprof = true\n",
			[]string{"line 2: log.level: ", "line 4: metrics.pprof, metrics.address: is true but metrics.address is empty"}},
	}
	for _, tc := range tests {
		_, err := Load(writeConfig(t, tc.doc))
		if err == nil {
			t.Errorf("%s: got nil error, want %q", tc.name, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

// TestConfigErrorsNameLine checks errors found by Config after loading
// (a file a key names) point at the key's line too.
func TestConfigErrorsNameLine(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, "[server]\nname = \"x\"\nguid_file = \""+dir+"\"\n")
	uc, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = uc.Config(nil)
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: server.guid_file: ") {
		t.Errorf("got %v, want an error starting \"line 3: server.guid_file: \"", err)
	}
}

func TestKeyLines(t *testing.T) {
	doc := "a = 1\n[t]\nb = 2\n\"c d\".e = 3\n[[arr]]\nf = 4\nbroken = \n"
	got := keyLines([]byte(doc))
	want := map[string]int{"a": 1, "t.b": 3, "t.c d.e": 4, "arr.f": 6}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got line %d, want %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestLoadConfigErrorsInFileOrder checks several problems are reported in
// the order of their lines, those of keys left at their default last.
func TestLoadConfigErrorsInFileOrder(t *testing.T) {
	doc := "[raknet]\ntimeout = \"10\"\n[server]\nmax_players = 0\nhandler = \"world\"\n[network]\naddress_v4 = \"0.0.0.0\"\n"
	_, err := Load(writeConfig(t, doc))
	if err == nil {
		t.Fatal("got nil error, want four problems")
	}
	_, msg, _ := strings.Cut(err.Error(), ": ") // after "load config PATH"
	var lines []string
	for l := range strings.Lines(msg) {
		n, _, _ := strings.Cut(l, ":")
		lines = append(lines, n)
	}
	want := []string{"line 2", "line 4", "line 5", "line 7"}
	if strings.Join(lines, ",") != strings.Join(want, ",") {
		t.Errorf("got lines %q in\n%s\nwant %q", lines, err, want)
	}
}
