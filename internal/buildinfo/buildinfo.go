package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// version is set by release builds with -ldflags -X (see the package doc); "" otherwise.
var version string

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the release version (v1.2.3), the module version the toolchain stamped, or
	// "dev" (with the commit, "dev-0123456789ab", when known).
	Version string
	// Commit is the full VCS revision the binary was built from ("" when not stamped, e.g.
	// in tests or with -buildvcs=false).
	Commit string
	// CommitTime is the commit's time: reproducible builds carry no build time of their own.
	CommitTime time.Time
	// Modified is true when the working tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain's version (go1.26.8), Platform GOOS/GOARCH.
	GoVersion, Platform string
}

var read = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version)
})

// Read returns this binary's build information (read once).
func Read() Info { return read() }

// Version returns this binary's version (Info.Version).
func Version() string { return read().Version }

// fromBuildInfo derives Info from what the toolchain stamped and the -X version.
func fromBuildInfo(bi *debug.BuildInfo, set string) Info {
	info := Info{Version: set, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if info.Version == "" {
			info.Version = "dev"
		}
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.CommitTime, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	switch {
	case info.Version != "":
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		info.Version = bi.Main.Version
	case info.Commit != "":
		info.Version = "dev-" + short(info.Commit)
		if info.Modified {
			info.Version += "+dirty"
		}
	default:
		info.Version = "dev"
	}
	return info
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is the multi-line report `sessionmem version` prints.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sessionmem %s\n", i.Version)
	commit := i.Commit
	if commit == "" {
		commit = "unknown (built without VCS information)"
	} else if i.Modified {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "commit:  %s\n", commit)
	if !i.CommitTime.IsZero() {
		// The commit's time, not the build's: two builds of one commit are identical.
		fmt.Fprintf(&b, "date:    %s (the commit's)\n", i.CommitTime.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "go:      %s %s\n", i.GoVersion, i.Platform)
	return b.String()
}

// Short is the one-line form for logs and reports: "v1.2.3 (commit 0123456789ab, go1.26.8)".
func (i Info) Short() string {
	s := i.Version + " ("
	if i.Commit != "" {
		s += "commit " + short(i.Commit)
		if i.Modified {
			s += "+dirty"
		}
		s += ", "
	}
	return s + i.GoVersion + ")"
}

// Recorded returns v, a version read back from stored data, if it can be one (at most 64
// characters of [A-Za-z0-9.+_-]), else "": stored data may be damaged or hostile, and the
// version ends up in messages and logs.
func Recorded(v string) string {
	if len(v) > 64 || strings.TrimLeft(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+_-") != "" {
		return ""
	}
	return v
}

// Upgrade is the advice for data this build cannot read, written by version by (as
// Recorded returns it; "" when the data does not say): "upgrade sessionmem to v1.4.0 or
// later" for a release, else "upgrade sessionmem".
func Upgrade(by string) string {
	if strings.HasPrefix(by, "v") {
		return "upgrade sessionmem to " + by + " or later"
	}
	return "upgrade sessionmem"
}
