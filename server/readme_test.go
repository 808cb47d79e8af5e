package server

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/basaltmc/basalt/server/internal/servertest"
)

// TestREADMEHandlerMatchesExample keeps the handler example in README.md
// the code Example_customHandler compiles: the counter type, newCounter and
// its method must appear in both, verbatim.
func TestREADMEHandlerMatchesExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "// counter is one player's handler", "Message: msg})\n}\n"
	section := func(s string) string {
		i := strings.Index(s, start)
		if i < 0 {
			return ""
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return ""
		}
		return s[i : i+j+len(end)]
	}
	got, want := section(string(readme)), section(string(example))
	if want == "" {
		t.Fatal("example_test.go: counter not found")
	}
	if got != want {
		t.Errorf("README.md counter:\n%s\nwant, as in example_test.go:\n%s", got, want)
	}
	// The program around it: README's main is the example's body, and run
	// is the same in both.
	body := func(s, fn string) string {
		i := strings.Index(s, fn)
		if i < 0 {
			return ""
		}
		j := strings.Index(s[i:], "\n}\n")
		return s[i+len(fn) : i+j]
	}
	got, want = body(string(readme), "func main() {\n"), body(string(example), "func Example_customHandler() {\n")
	if want == "" || got != want {
		t.Errorf("README.md main:\n%s\nwant, as Example_customHandler's body:\n%s", got, want)
	}
	got, want = body(string(readme), "func run(path string) error {\n"), body(string(example), "func run(path string) error {\n")
	if want == "" || got != want {
		t.Errorf("README.md run:\n%s\nwant, as in example_test.go:\n%s", got, want)
	}
}

// TestREADMELayout keeps README.md's Layout table true: a row for every
// file and directory at the top of the repository (as git tracks them)
// and for every directory holding a Go package, and no row for a path
// that does not exist.
func TestREADMELayout(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := servertest.Section(string(readme), "## Layout")
	if section == "" {
		t.Fatal("README.md: no \"## Layout\" section")
	}
	listed := map[string]bool{}
	for line := range strings.Lines(section) {
		cells := strings.SplitN(line, " | ", 2)
		if len(cells) < 2 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		for p := range strings.SplitSeq(strings.TrimPrefix(cells[0], "| "), ", ") {
			p = strings.Trim(p, "`")
			listed[p] = true
			if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
				t.Errorf("README.md Layout lists %s: %v", p, err)
			}
		}
	}

	var want []string
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Logf("git ls-files: %v; checking the packages only", err)
	}
	for f := range strings.Lines(string(out)) {
		f = strings.TrimSpace(f)
		if top, _, dir := strings.Cut(f, "/"); dir {
			want = append(want, top+"/")
		} else if f != "" {
			want = append(want, f)
		}
	}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && filepath.Dir(path) != ".." {
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			want = append(want, filepath.ToSlash(rel)+"/")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	for _, p := range slices.Compact(want) {
		if !listed[p] {
			t.Errorf("README.md Layout has no row for %s", p)
		}
	}
}

// TestREADMELinks keeps README.md's links to files of the repository
// true: each names a file or directory that exists, and each link to a
// package's doc.go, where the manual beyond the README lives, names one
// with package documentation.
func TestREADMELinks(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(string(readme), -1)
	docs := 0
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		path := filepath.Join("..", filepath.FromSlash(target))
		if _, err := os.Stat(path); err != nil {
			t.Errorf("README.md links to %s: %v", target, err)
			continue
		}
		if filepath.Base(target) != "doc.go" {
			continue
		}
		docs++
		if doc := servertest.PackageDoc(t, filepath.Dir(path)); len(doc) < 200 {
			t.Errorf("README.md links to %s, whose package documentation is %d bytes", target, len(doc))
		}
	}
	if docs == 0 {
		t.Error("README.md links to no package's doc.go")
	}
}
