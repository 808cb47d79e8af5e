package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, line := range []string{"conf.NewHandler = newCounter\n", "conf.New().Run(ctx)"} {
		if !strings.Contains(string(readme), line) {
			t.Errorf("README.md lacks %q", line)
		}
	}
}
