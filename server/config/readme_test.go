package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/server/internal/servertest"
)

// configKeys returns each key of DefaultFile as "table.key" with its
// value's TOML text, in file order.
func configKeys(t *testing.T) (keys, values []string) {
	t.Helper()
	table := ""
	for line := range strings.Lines(string(DefaultFile())) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, " = ")
			if !ok {
				t.Fatalf("config file line %q is not key = value", line)
			}
			keys = append(keys, table+"."+k)
			values = append(values, v)
		}
	}
	return keys, values
}

// TestREADMEConfigTable holds the configuration reference the README links
// to, the package documentation's "Configuration reference" (doc.go), to
// DefaultFile: one row per key, in the file's order, with the file's
// default.
func TestREADMEConfigTable(t *testing.T) {
	section := servertest.Section(servertest.PackageDoc(t, "."), "# Configuration reference")
	if section == "" {
		t.Fatal("doc.go: no \"# Configuration reference\" section")
	}
	var rows, defaults []string
	for line := range strings.Lines(section) {
		cells := strings.SplitN(strings.TrimPrefix(line, "\t"), " | ", 3)
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		rows = append(rows, strings.Trim(cells[0], "| `"))
		defaults = append(defaults, cells[1])
	}
	keys, values := configKeys(t)
	missing := false
	for _, k := range keys {
		missing = missing || !slices.Contains(rows, k)
	}
	for i, k := range keys {
		want := "`" + values[i] + "`"
		j := slices.Index(rows, k)
		switch {
		case j < 0:
			t.Errorf("doc.go lacks the row of %s; add, after the row of the key before it:\n//\t| `%s` | %s | what it does |", k, k, want)
		case defaults[j] != want:
			t.Errorf("doc.go %s: default %s, want %s", k, defaults[j], want)
		case j != i && !missing:
			t.Errorf("doc.go %s: row %d, want %d (the file's order)", k, j+1, i+1)
		}
	}
	for _, r := range rows {
		if !slices.Contains(keys, r) {
			t.Errorf("doc.go has a row for %s, which config.toml does not have", r)
		}
	}
}
