package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection enforces the layering of DESIGN.md: imports point one
// way (main → server → {session, motd, raknet}), raknet's internals use the
// standard library only, and the test-only peers never reach non-test code:
// of gophertunnel, only its packet structures (protocol, nbt) serve the
// typed-packet adapter and the lobby, never its transport or go-raknet.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/basaltmc/basalt"
	rules := []struct {
		pkg string
		// allowed lists import path prefixes (besides the standard library)
		// the package may depend on, directly or not.
		allowed []string
	}{
		{mod + "/motd", nil},
		{mod + "/raknet/internal/wire", nil},
		{mod + "/raknet/internal/reliability", []string{mod + "/raknet/internal/wire"}},
		{mod + "/raknet/internal/guard", []string{"github.com/dchest/siphash"}},
		{mod + "/raknet", []string{mod + "/raknet/internal/", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "golang.org/x/net", "github.com/dchest/siphash"}},
		{mod + "/session", []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "github.com/klauspost/compress"}},
		{mod + "/session/auth", []string{mod + "/session", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "github.com/klauspost/compress", "github.com/coreos/go-oidc/", "github.com/go-jose/", "golang.org/x/oauth2"}},
		{mod + "/session/packets", []string{mod + "/session", "github.com/", "golang.org/x/"}},
		{mod + "/session/lobby", []string{mod + "/session", "github.com/", "golang.org/x/"}},
		{mod + "/server", []string{mod + "/session", mod + "/motd", mod + "/raknet", mod + "/server/", "github.com/", "golang.org/x/", "google.golang.org/protobuf/"}},
	}
	// The parts of gophertunnel that are Bedrock's packet structures, which
	// import no transport.
	packetLib := []string{
		"github.com/sandertv/gophertunnel/minecraft/protocol",
		"github.com/sandertv/gophertunnel/minecraft/nbt",
		"github.com/sandertv/gophertunnel/minecraft/internal",
	}
	for _, r := range rules {
		t.Run(strings.TrimPrefix(r.pkg, mod+"/"), func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", r.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == r.pkg || strings.HasPrefix(dep, "vendor/") {
					continue
				}
				if strings.HasPrefix(dep, "github.com/sandertv/") {
					lib := false
					for _, p := range packetLib {
						lib = lib || dep == p || strings.HasPrefix(dep, p+"/")
					}
					if !lib || r.pkg == mod+"/session" || strings.HasPrefix(r.pkg, mod+"/raknet") {
						t.Errorf("%s depends on the test-only %s", r.pkg, dep)
					}
					continue
				}
				ok := false
				for _, a := range r.allowed {
					if strings.HasPrefix(dep, a) {
						ok = true
						break
					}
				}
				if !ok {
					t.Errorf("%s must not depend on %s", r.pkg, dep)
				}
			}
		})
	}
}
