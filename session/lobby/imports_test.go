package lobby

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports checks the packet library stays where it belongs: the session
// package depends on none of gophertunnel, and the packet adapter and the
// lobby (which the server links in) on its protocol packages alone, not on
// its client, listener or network stack.
func TestImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/basaltmc/basalt"
	const gt = "github.com/sandertv/gophertunnel/minecraft/"
	rules := []struct {
		pkg     string
		allowed []string // sandertv prefixes allowed
	}{
		{mod + "/session", nil},
		{mod + "/session/packets", []string{gt + "protocol", gt + "nbt", gt + "internal"}},
		{mod + "/session/join", []string{gt + "protocol", gt + "nbt", gt + "internal"}},
		{mod + "/session/lobby", []string{gt + "protocol", gt + "nbt", gt + "internal"}},
	}
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, "github.com/sandertv/") {
				continue
			}
			ok := false
			for _, a := range r.allowed {
				ok = ok || dep == a || strings.HasPrefix(dep, a+"/")
			}
			if !ok {
				t.Errorf("%s depends on %s", r.pkg, dep)
			}
		}
	}
}
