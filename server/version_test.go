package server

import (
	"runtime/debug"
	"testing"
)

func TestBuildInfoOf(t *testing.T) {
	dep := &debug.Module{Path: modulePath, Version: "v1.2.3"}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want BuildInfo
		str  string
	}{
		{"go run", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"}},
			BuildInfo{Version: "devel", GoVersion: "go1.26.8"}, "devel (go1.26.8)"},
		{"go build in a checkout", debug.BuildInfo{GoVersion: "go1.26.8",
			Main:     debug.Module{Path: modulePath, Version: "v0.0.0-20261205080000-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}},
			BuildInfo{Version: "v0.0.0-20261205080000-0123456789ab+dirty", Revision: "0123456789abcdef+dirty", GoVersion: "go1.26.8"},
			"v0.0.0-20261205080000-0123456789ab+dirty (go1.26.8)"},
		{"-buildvcs=true without a tag", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba"}, {Key: "vcs.modified", Value: "false"}}},
			BuildInfo{Version: "devel", Revision: "fedcba"}, "devel (fedcba)"},
		{"go install module@version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v1.2.3"}},
			BuildInfo{Version: "v1.2.3", GoVersion: "go1.26.8"}, "v1.2.3 (go1.26.8)"},
		{"a dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/mine", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "mine"}},
			Deps:     []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, dep}},
			BuildInfo{Version: "v1.2.3"}, "v1.2.3"},
		{"a replaced dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/mine"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.0.0", Replace: &debug.Module{Path: "../basalt"}}}},
			BuildInfo{Version: "devel"}, "devel"},
	}
	for _, tc := range tests {
		got := buildInfoOf(&tc.bi)
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("%s: String got %q, want %q", tc.name, s, tc.str)
		}
	}
}
