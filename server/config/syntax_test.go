package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadSyntaxErrors checks the hint of each TOML mistake an operator
// makes by hand: a key given twice names its table and says to delete a
// line (not the type hint), and the hints about quotes allow the single
// quotes the default file is written with.
func TestLoadSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // in the error
		not        []string // not in it
	}{
		{
			name: "a key twice, in a table",
			file: "[network]\naddress_v4 = '127.0.0.1:0'\naddress_v4 = '127.0.0.1:1'\n",
			want: []string{"line 3: network.address_v4 is set twice; delete one of its two lines"},
			not:  []string{"type its default"},
		},
		{
			name: "a key twice, after another table",
			file: "[network]\nquery = false\n\n[server]\nname = 'a'\n# a comment\nname = 'b'\n",
			want: []string{"line 7: server.name is set twice"},
		},
		{
			name: "a string without quotes",
			file: "[network]\naddress_v4 = 127.0.0.1:0\n",
			want: []string{"line 2:", "strings in quotes ('like this' or \"like this\")"},
			not:  []string{"double quotes"},
		},
		{
			name: "a number for a string",
			file: "[server]\nname = 5\n",
			want: []string{"line 2: key server.name", "write it in quotes, 'like this' or \"like this\""},
			not:  []string{"double quotes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("got no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("got %q, want no %q", err, n)
				}
			}
		})
	}
}
