// Package servertest is the helper set the server's packages share in
// their tests: the house rule for configuration errors (each names its key,
// and line when known, and ends with the fix), reading the documents tests
// hold to the code (a package's documentation, a section of it or of a
// markdown file), a log sink safe for a logger's concurrent writes, and
// waiting for a condition on real sockets.
package servertest

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixVerbs are the words a fix starts with: every error the configuration
// can produce ends, after its last "; ", with a clause starting with one.
var fixVerbs = []string{"set ", "write ", "list ", "remove ", "delete ", "fix ", "give ", "create ", "stop ", "shorten ", "make "}

// Fixes checks every line of err (errors.Join puts one problem on a
// line) names key, the line of the file when line > 0, and ends with a fix.
func Fixes(t *testing.T, err error, key string, line int) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want one naming %s", key)
	}
	msg := err.Error()
	if !strings.Contains(msg, key) {
		t.Errorf("got %q, want it to name %s", msg, key)
	}
	if line > 0 && !strings.Contains(msg, fmt.Sprintf("line %d: ", line)) {
		t.Errorf("got %q, want it to name line %d", msg, line)
	}
	for l := range strings.SplitSeq(msg, "\n") {
		i := strings.LastIndex(l, "; ")
		if i < 0 {
			t.Errorf("%q: no fix (no \"; \" before one)", l)
			continue
		}
		fix := l[i+2:]
		ok := false
		for _, v := range fixVerbs {
			ok = ok || strings.HasPrefix(fix, v)
		}
		if !ok {
			t.Errorf("%q: last clause %q does not start with a fix (%q)", l, fix, fixVerbs)
		}
	}
}

// Section returns the text of a markdown document, or of a package's
// documentation ("# Heading" lines), under heading, up to the next heading
// of the same level; "" if it has no such heading.
func Section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// PackageDoc returns the package documentation in dir's doc.go, the text
// `go doc` shows, with the comment markers removed: "# Heading" lines,
// and code blocks and tables indented by a tab.
func PackageDoc(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "doc.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatalf("%s: no package documentation", path)
	}
	return f.Doc.Text()
}

// WaitFor polls cond until it holds, failing t with what after timeout.
// It is for tests on real sockets and files, which a synctest bubble
// cannot hold: the sleep between polls is wall-clock time.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		// A real sleep: what cond reads changes on other goroutines
		// driven by sockets or the file system, outside any bubble.
		time.Sleep(5 * time.Millisecond)
	}
}

// SyncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
// Its zero value is empty and ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
