package config

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basaltmc/basalt/server/internal/servertest"
)

// TestLoggerColourOnTerminalOnly checks console lines carry colour codes
// only when they go to a terminal.
func TestLoggerColourOnTerminalOnly(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var b bytes.Buffer
		l, _, err := DefaultUserConfig().logger(&b, terminal)
		if err != nil {
			t.Fatal(err)
		}
		l.Info().Str("k", "v").Msg("hello")
		if got := strings.Contains(b.String(), "\x1b["); got != terminal {
			t.Errorf("terminal %v: colour codes %v in %q, want %v", terminal, got, b.String(), terminal)
		}
		if !strings.Contains(b.String(), "hello") {
			t.Errorf("terminal %v: got %q, want the message", terminal, b.String())
		}
	}
}

// TestLoggerLevelAndJSON checks log.level filters and log.format json
// writes one object per line.
func TestLoggerLevelAndJSON(t *testing.T) {
	uc := DefaultUserConfig()
	uc.Log.Level, uc.Log.Format = "warn", "json"
	var b bytes.Buffer
	l, _, err := uc.logger(&b, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Info().Msg("quiet")
	l.Warn().Stringer("uptime", 1500*time.Millisecond).Msg("loud")
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("got %q, want one JSON object: %v", b.String(), err)
	}
	if m["message"] != "loud" || m["uptime"] != "1.5s" || m["level"] != "warn" {
		t.Errorf("got %v, want the warn line alone, uptime \"1.5s\"", m)
	}
}

// TestLoggerFileErrorNamesKey checks a log.file that cannot be opened is
// reported before the server starts, naming the key, and that a missing
// directory is not such a file: it is created.
func TestLoggerFileErrorNamesKey(t *testing.T) {
	uc := DefaultUserConfig()
	uc.dir = t.TempDir()
	uc.Log.File = "logs/basalt/basalt.log"
	_, c, err := uc.logger(&bytes.Buffer{}, false)
	if err != nil {
		t.Fatalf("log.file in a missing directory: %v, want it created", err)
	}
	_ = c.Close()
	if _, err := os.Stat(filepath.Join(uc.dir, "logs", "basalt", "basalt.log")); err != nil {
		t.Errorf("log.file: %v, want it created with its directory", err)
	}
	if err := os.WriteFile(filepath.Join(uc.dir, "not-a-dir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	uc.Log.File = "not-a-dir/basalt.log"
	_, _, err = uc.logger(&bytes.Buffer{}, false)
	if err == nil || !strings.HasPrefix(err.Error(), "log.file: ") || !strings.Contains(err.Error(), "not-a-dir") {
		t.Errorf("got %v, want an error naming log.file and the path", err)
	}
	uc.Log.Level = "verbose"
	if _, _, err := uc.logger(&bytes.Buffer{}, false); err == nil || !strings.HasPrefix(err.Error(), "log.level: ") {
		t.Errorf("bad level: got %v, want an error naming log.level", err)
	}
}

// TestLogDurationsAsGoDurations keeps one unit convention in every log
// line: a duration is logged as a Go duration string (Stringer or Str of
// d.String()), never with zerolog's Dur, which writes a bare number in
// zerolog's global unit (milliseconds unless a program changes it).
func TestLogDurationsAsGoDurations(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Dur" || sel.Sel.Name == "Durs") {
				t.Errorf("%s: .%s logs a bare number; use .Stringer(key, d) for a Go duration", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConfigFileErrorsNameKey checks errors about the files the
// configuration names say which key named them.
func TestConfigFileErrorsNameKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		key    string
		change func(uc *UserConfig)
	}{
		{"server.guid_file", func(uc *UserConfig) { uc.Server.GUIDFile = dir }},
		{"network.cookie_secret_file", func(uc *UserConfig) { uc.Network.CookieSecretFile = dir }},
	} {
		uc := DefaultUserConfig()
		uc.dir = t.TempDir()
		tc.change(&uc)
		if _, err := uc.Config(nil); err == nil || !strings.HasPrefix(err.Error(), tc.key+": ") {
			t.Errorf("%s a directory: got %v, want an error starting with the key", tc.key, err)
		}
	}
}

// TestGUIDFileNamedAfterConfig checks two configurations in one directory
// keep GUIDs of their own, each in a file named after it.
func TestGUIDFileNamedAfterConfig(t *testing.T) {
	dir := t.TempDir()
	guids := map[int64]bool{}
	for _, name := range []string{"a.toml", "b.toml"} {
		uc, err := Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := uc.Config(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, strings.TrimSuffix(name, ".toml")+".guid"); c.GUIDFile != want {
			t.Errorf("%s: GUID file %s, want %s", name, c.GUIDFile, want)
		}
		guids[c.GUID] = true
	}
	if len(guids) != 2 {
		t.Errorf("got %d GUIDs for two configs, want 2", len(guids))
	}
	if _, err := os.Stat(filepath.Join(dir, "a.guid")); err != nil {
		t.Error(err)
	}
}

// TestLoggerFileRotates checks log.file takes the lines instead of
// standard error, uncoloured, and is rotated at log.file_max_mib with at
// most log.file_backups old files kept.
func TestLoggerFileRotates(t *testing.T) {
	uc := DefaultUserConfig()
	uc.dir = t.TempDir()
	uc.Log.File, uc.Log.FileMaxMiB, uc.Log.FileBackups = "basalt.log", 1, 1
	var stderr bytes.Buffer
	l, closer, err := uc.logger(&stderr, true)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 1000)
	for range 3 * 1100 { // a little over 3 MiB: three rotations
		l.Info().Str("k", line).Msg("filler")
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("standard error got %d bytes, want none with log.file", stderr.Len())
	}
	cur, err := os.ReadFile(filepath.Join(uc.dir, "basalt.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) == 0 || len(cur) > 1<<20 || bytes.Contains(cur, []byte("\x1b[")) {
		t.Errorf("basalt.log: %d bytes, colour %v; want 1 to 1 MiB, no colour", len(cur), bytes.Contains(cur, []byte("\x1b[")))
	}
	// Old files are removed by lumberjack's own goroutine, after the
	// rotation: wait for it.
	servertest.WaitFor(t, "one rotated file (log.file_backups)", 10*time.Second, func() bool {
		old, _ := filepath.Glob(filepath.Join(uc.dir, "basalt-*.log"))
		return len(old) == 1
	})
}
