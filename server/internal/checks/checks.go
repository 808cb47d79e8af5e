// Package checks holds checks the server's packages share in their tests:
// the house rule for configuration errors (each names its key, and line
// when known, and ends with the fix), and reading a section of the
// markdown documents tests hold to the code.
package checks

import (
	"fmt"
	"strings"
	"testing"
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

// Section returns the text of a markdown document under heading, up to the
// next heading of the same level; "" if it has no such heading.
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
