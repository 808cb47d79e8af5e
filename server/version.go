package server

import (
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// modulePath is Basalt's module path, looked up in the build information.
const modulePath = "github.com/basaltmc/basalt"

// BuildInfo says which Basalt a binary holds, as the Go toolchain recorded
// it in the binary.
type BuildInfo struct {
	// Version is Basalt's module version: "v1.2.3" when built by go
	// install github.com/basaltmc/basalt@v1.2.3 or as a dependency of a
	// module requiring it, a pseudo-version ("v0.0.0-2026…-abcdef+dirty")
	// when go build ran in a git checkout, and "devel" when the build
	// recorded neither (go run, or -buildvcs=false).
	Version string
	// Revision is the VCS commit the binary was built from, with
	// "+dirty" if the working tree had changes; empty when unknown.
	Revision string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// String returns the version and, when known, the revision and Go
// version: "v1.2.3 (abcdef123456, go1.26.8)".
func (b BuildInfo) String() string {
	var extra []string
	if b.Revision != "" && !strings.Contains(b.Version, shortRevision(b.Revision)) {
		extra = append(extra, b.Revision)
	}
	if b.GoVersion != "" {
		extra = append(extra, b.GoVersion)
	}
	if len(extra) == 0 {
		return b.Version
	}
	return b.Version + " (" + strings.Join(extra, ", ") + ")"
}

// ReadBuildInfo returns the BuildInfo of the running binary, whether
// Basalt is its main module (the basalt command) or a dependency (a
// program built on the server package).
func ReadBuildInfo() BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return BuildInfo{Version: "devel"}
	}
	return buildInfoOf(bi)
}

// buildInfoOf extracts Basalt's BuildInfo from a binary's.
func buildInfoOf(bi *debug.BuildInfo) BuildInfo {
	b := BuildInfo{GoVersion: bi.GoVersion}
	mod := &bi.Main
	if mod.Path != modulePath {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				mod = d
				if d.Replace != nil {
					mod = d.Replace
				}
				break
			}
		}
	}
	if mod != nil && mod.Version != "" && mod.Version != "(devel)" {
		b.Version = mod.Version
	}
	if mod == &bi.Main {
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if b.Revision != "" && dirty {
			b.Revision += "+dirty"
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// shortRevision returns the first 12 characters of a revision, as
// pseudo-versions carry it.
func shortRevision(rev string) string {
	rev = strings.TrimSuffix(rev, "+dirty")
	return rev[:min(12, len(rev))]
}

// buildInfoCollector reports basalt_build_info: a gauge of 1 whose labels
// say which Basalt runs, for dashboards to show and alerts to compare.
func buildInfoCollector(b BuildInfo) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "basalt_build_info",
		Help: "Which Basalt runs: 1, with its version, VCS revision and Go version as labels.",
		ConstLabels: prometheus.Labels{
			"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion,
		},
	}, func() float64 { return 1 })
}
