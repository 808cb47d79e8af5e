package attack

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportedOnlyByTests keeps the attack tools out of anything that
// ships: besides test files, only scripts/flood may import this package.
func TestImportedOnlyByTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/basaltmc/basalt"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{mod + "/scripts/flood": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || allowed[f[0]] {
			continue
		}
		for _, imp := range f[1:] {
			if imp == mod+"/integration/attack" {
				t.Errorf("%s imports %s: only tests and scripts/flood may", f[0], imp)
			}
		}
	}
}
