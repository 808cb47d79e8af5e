package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection enforces the layering of DESIGN.md, directly or
// through other packages:
//   - imports of Basalt's own packages point one way, main → server →
//     {session/lobby → session/join → session/packets → session, motd,
//     raknet}, and each
//     package lists exactly which of ours it may reach;
//   - raknet's internals and its PROXY header decoders use the standard
//     library only, but for guard's SipHash; session and raknet use only their few listed libraries;
//   - nothing that ships reaches the test-only packages: the simulated
//     network, packetstest, authtest, integration/... (leaktest among them),
//     scripts/..., go-raknet, or any of gophertunnel but its packet
//     structures (protocol, nbt), which serve the typed-packet adapter, the
//     join and the lobby.
//
// Packages above session may use other libraries (the server's TOML and
// Prometheus, the adapter's gophertunnel); those are chosen in go.mod.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	rules := []struct {
		pkg string
		// ours lists the packages of this module the package may depend
		// on; a trailing "/..." admits a package and everything under it.
		ours []string
		// libs lists the import path prefixes of other modules it may
		// depend on; nil means none, anyLib means any not test-only.
		libs []string
	}{
		{"motd", nil, nil},
		{"raknet/internal/wire", nil, nil},
		{"raknet/internal/simnet", nil, nil},
		{"raknet/internal/reliability", []string{"raknet/internal/wire"}, nil},
		{"raknet/internal/guard", nil, []string{"github.com/dchest/siphash"}},
		{"raknet/proxyproto", nil, nil},
		{"raknet", []string{"raknet/internal/wire", "raknet/internal/reliability", "raknet/internal/guard", "raknet/proxyproto"},
			[]string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "golang.org/x/net", "github.com/dchest/siphash"}},
		{"session", nil, []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "github.com/klauspost/compress"}},
		{"session/auth", []string{"session"}, []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "github.com/klauspost/compress", "github.com/coreos/go-oidc/", "github.com/go-jose/", "golang.org/x/oauth2"}},
		{"session/packets", []string{"session"}, anyLib},
		{"session/join", []string{"session", "session/packets"}, anyLib},
		{"session/lobby", []string{"session", "session/packets", "session/join"}, anyLib},
		{"server", []string{"server/...", "session/...", "motd", "raknet/..."}, anyLib},
		{"", []string{"server/...", "session/...", "motd", "raknet/..."}, anyLib},
		{"integration/leaktest", nil, nil},
		{"integration/poll", nil, nil},
	}
	for _, r := range rules {
		name := r.pkg
		if name == "" {
			name = "main"
		}
		t.Run(name, func(t *testing.T) {
			pkg := path(r.pkg)
			out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list %s: %v\n%s", pkg, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == pkg || strings.HasPrefix(dep, "vendor/") {
					continue
				}
				if why := importRefused(dep, r.ours, r.libs); why != "" {
					t.Errorf("%s must not depend on %s: %s", pkg, dep, why)
				}
			}
		})
	}
}

// module is this module's path.
const module = "github.com/basaltmc/basalt"

// anyLib admits any other module's package that is not test-only.
var anyLib = []string{""}

// path returns the import path of the module's package p ("" is main).
func path(p string) string {
	if p == "" {
		return module
	}
	return module + "/" + p
}

// testOnly lists what serves tests and tools only, as rules of ours
// (for this module's) or prefixes (for others').
var (
	testOnlyOurs = []string{"raknet/internal/simnet/...", "session/packets/packetstest/...", "session/auth/authtest/...", "integration/...", "scripts/..."}
	testOnlyLibs = []string{"github.com/sandertv/go-raknet"}
	// packetLib are the parts of gophertunnel that are Bedrock's packet
	// structures, which import no transport; the rest of it is test-only.
	packetLib = []string{"minecraft/protocol/...", "minecraft/nbt/...", "minecraft/internal/..."}
)

// importRefused says why dep is no allowed dependency under ours and
// libs, or returns "".
func importRefused(dep string, ours, libs []string) string {
	if rest, ok := strings.CutPrefix(dep, module+"/"); ok {
		switch {
		case matchOurs(rest, testOnlyOurs):
			return "it serves tests only"
		case !matchOurs(rest, ours):
			return "imports of ours point the other way or skip a layer"
		}
		return ""
	}
	if dep == module {
		return "imports of ours point the other way"
	}
	for _, p := range testOnlyLibs {
		if strings.HasPrefix(dep, p) {
			return "it serves tests only"
		}
	}
	if rest, ok := strings.CutPrefix(dep, "github.com/sandertv/gophertunnel/"); ok {
		if !matchOurs(rest, packetLib) {
			return "of gophertunnel only its packet structures ship"
		}
		if len(libs) == 0 || libs[0] != "" {
			return "no Bedrock packet structures here"
		}
		return ""
	}
	for _, p := range libs {
		if strings.HasPrefix(dep, p) {
			return ""
		}
	}
	return "not a library this package may use"
}

// matchOurs reports whether the path p is one of rules, where a rule
// ending in "/..." also matches everything under it.
func matchOurs(p string, rules []string) bool {
	for _, r := range rules {
		if base, tree := strings.CutSuffix(r, "/..."); tree {
			if p == base || strings.HasPrefix(p, base+"/") {
				return true
			}
		} else if p == r {
			return true
		}
	}
	return false
}

// The rules refuse what the layering forbids, not only what is listed.
func TestImportRefused(t *testing.T) {
	server := []string{"server/...", "session/...", "motd", "raknet/..."}
	tests := []struct {
		dep        string
		ours, libs []string
		refused    bool
	}{
		{module + "/session/join", server, anyLib, false},
		{module + "/raknet/internal/wire", server, anyLib, false},
		{module + "/raknet/internal/simnet", server, anyLib, true},
		{module + "/integration/leaktest", server, anyLib, true},
		{module + "/integration/attack", server, anyLib, true},
		{module + "/scripts/bench", server, anyLib, true},
		{module + "/session/packets/packetstest", server, anyLib, true},
		{module, server, anyLib, true},
		{module + "/raknet", []string{"session", "session/packets"}, anyLib, true},
		{module + "/server", []string{"session", "session/packets"}, anyLib, true},
		{module + "/sessionx", []string{"session"}, anyLib, true},
		{module + "/session/lobby", []string{"session"}, anyLib, true},
		{module + "/raknet/internal/guard", []string{"raknet/internal/wire"}, nil, true},
		{"github.com/sandertv/go-raknet", server, anyLib, true},
		{"github.com/sandertv/gophertunnel/minecraft", server, anyLib, true},
		{"github.com/sandertv/gophertunnel/minecraft/protocol/packet", server, anyLib, false},
		{"github.com/sandertv/gophertunnel/minecraft/protocol", nil, []string{"github.com/rs/zerolog"}, true},
		{"github.com/pelletier/go-toml/v2", server, anyLib, false},
		{"github.com/pelletier/go-toml/v2", nil, []string{"github.com/rs/zerolog"}, true},
		{"github.com/rs/zerolog/internal/json", nil, []string{"github.com/rs/zerolog"}, false},
		{"github.com/dchest/siphash", nil, nil, true},
	}
	for _, tc := range tests {
		why := importRefused(tc.dep, tc.ours, tc.libs)
		if got := why != ""; got != tc.refused {
			t.Errorf("%s under %q, %q: got refused %v (%q), want %v", tc.dep, tc.ours, tc.libs, got, why, tc.refused)
		}
	}
}
