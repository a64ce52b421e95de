#!/usr/bin/env bash
# Builds one sessionmem binary exactly as the release archives and the Docker image carry it:
#
#   scripts/build.sh GOOS GOARCH VERSION OUT
#
# Static (CGO_ENABLED=0: the SQLite of the search index is pure Go), -trimpath, no build id,
# stripped, VERSION set in internal/buildinfo (empty: the module version the toolchain
# stamps), and the commit stamped from the checkout (-buildvcs=true: run it in a git checkout;
# uncommitted changes, untracked files included, show as "modified").
# Nothing of the machine or the environment reaches the binary: GOFLAGS and the per-arch
# tuning variables are fixed here, so two builds of one commit with one Go version are the
# same bytes (scripts/release.sh --check proves it).
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 GOOS GOARCH VERSION OUT" >&2
  exit 2
fi
os=$1 arch=$2 version=$3 out=$4
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOFLAGS="" GOAMD64=v1 GOARM64=v8.0 GOEXPERIMENT=""
ldflags="-s -w -buildid="
if [ -n "$version" ]; then
  ldflags="$ldflags -X github.com/sessionmem/sessionmem/internal/buildinfo.version=$version"
fi
exec go build -trimpath -buildvcs=true -ldflags "$ldflags" -o "$out" ./cmd/sessionmem
