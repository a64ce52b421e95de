// Package buildinfo says which sessionmem this is: the version a release build sets, and the
// commit, commit time and Go version the Go toolchain stamps into every binary
// (runtime/debug.ReadBuildInfo). `sessionmem version`, the MCP serverInfo, the logs, verify
// and the /metrics build_info family all read it from here, and the stores record Version
// beside their format versions so that an older binary can say which version it needs.
//
// A release build sets the version with
//
//	-ldflags "-X github.com/sessionmem/sessionmem/internal/buildinfo.version=v1.2.3"
//
// (scripts/build.sh does). Without it the version is the module version the toolchain
// stamped (`go install ...@v1.2.3` gives v1.2.3, a build in a clone a pseudo-version), or
// "dev" plus the commit when there is none.
//
// It imports nothing of sessionmem, so every package may import it.
package buildinfo
