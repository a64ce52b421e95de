package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca"},
			{Key: "vcs.time", Value: "2026-11-27T08:54:10Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		set      string
		version  string
		commit   string
		modified bool
	}{
		{"no build info", nil, "", "dev", "", false},
		{"release build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"v1.2.3", "v1.2.3", "4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca", false},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "", "v1.2.0", "", false},
		{"clone build: pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127085410-4da2f38b2bf9+dirty"}, Settings: vcs("true")},
			"", "v0.0.0-20261127085410-4da2f38b2bf9+dirty", "4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca", true},
		{"devel with commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"", "dev-4da2f38b2bf9+dirty", "4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca", true},
		{"tests: nothing stamped", &debug.BuildInfo{Main: debug.Module{Version: ""}}, "", "dev", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildInfo(tt.bi, tt.set)
			if got.Version != tt.version || got.Commit != tt.commit || got.Modified != tt.modified {
				t.Fatalf("got version %q commit %q modified %v, want %q %q %v", got.Version, got.Commit, got.Modified, tt.version, tt.commit, tt.modified)
			}
			if got.GoVersion == "" || !strings.Contains(got.Platform, "/") {
				t.Fatalf("go %q platform %q", got.GoVersion, got.Platform)
			}
			if tt.commit != "" && !got.CommitTime.Equal(time.Date(2026, 11, 27, 8, 54, 10, 0, time.UTC)) {
				t.Fatalf("commit time %v", got.CommitTime)
			}
		})
	}
}

func TestInfoString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca", CommitTime: time.Date(2026, 11, 27, 8, 54, 10, 0, time.UTC),
		GoVersion: "go1.26.8", Platform: "linux/amd64"}
	want := "sessionmem v1.2.3\ncommit:  4da2f38b2bf9a3a8ad138ff15e55d81a2d4668ca\ndate:    2026-11-27T08:54:10Z (the commit's)\ngo:      go1.26.8 linux/amd64\n"
	if got := i.String(); got != want {
		t.Fatalf("String:\n%s\nwant:\n%s", got, want)
	}
	if got, want := i.Short(), "v1.2.3 (commit 4da2f38b2bf9, go1.26.8)"; got != want {
		t.Fatalf("Short %q, want %q", got, want)
	}
	i.Commit, i.CommitTime = "", time.Time{}
	if got := i.String(); !strings.Contains(got, "commit:  unknown") || strings.Contains(got, "date:") {
		t.Fatalf("without VCS:\n%s", got)
	}
}
