#!/usr/bin/env bash
# Builds cmd/sessionmem for the six release targets (linux, darwin and windows on amd64 and
# arm64) exactly as the release archives carry it (scripts/build.sh), and says which built:
#
#   scripts/crossbuild.sh [OUT]
#
# OUT (default: a temporary directory, removed at the end) receives OS-ARCH/sessionmem[.exe];
# scripts/windows.sh runs the windows/amd64 one under Wine. Exits non-zero unless all six
# build. CI (.ci/run) runs it: a platform-specific file missing for one OS fails here, not
# in a release.
set -euo pipefail
cd "$(dirname "$0")/.."
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
if [ $# -ge 1 ]; then
  out=$1
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
built=0 failed=""
for t in $targets; do
  os=${t%/*} arch=${t#*/}
  exe=sessionmem
  [ "$os" = windows ] && exe=sessionmem.exe
  start=$(date +%s)
  if scripts/build.sh "$os" "$arch" "" "$out/$os-$arch/$exe" >"$out/$os-$arch.log" 2>&1; then
    built=$((built + 1))
    echo "crossbuild: $t ok ($(($(date +%s) - start)) s, $(wc -c <"$out/$os-$arch/$exe") bytes)"
  else
    failed="$failed $t"
    echo "crossbuild: $t DOES NOT BUILD:"
    sed 's/^/    /' "$out/$os-$arch.log" | head -20
  fi
done
echo "crossbuild: $built/6 targets build"
[ -z "$failed" ]
