#!/usr/bin/env bash
# Builds the release archives of the committed HEAD:
#
#   scripts/release.sh [--check] VERSION        e.g. scripts/release.sh v0.4.0
#
# into dist/VERSION/ (or $SESSIONMEM_DIST/VERSION): sessionmem_VERSION_OS_ARCH.tar.gz for
# linux and darwin, .zip for windows, each on amd64 and arm64, holding the binary and
# README.md under sessionmem_VERSION_OS_ARCH/, plus SHA256SUMS (check with
# `sha256sum -c SHA256SUMS`).
#
# Reproducible: it builds from a fresh clone of HEAD (uncommitted changes are not in a
# release; it says so), with the Go version the Dockerfile pins (GOTOOLCHAIN), through
# scripts/build.sh (static, -trimpath, no build id), and archives with every entry at the
# commit's time, sorted, owned by 0:0 (scripts/releasetool). --check builds everything a
# second time in another directory, with an empty Go build cache (so nothing of the first
# build is reused), and fails unless every archive is byte-identical.
#
# A target that does not build is reported plainly and skipped; the others are still built,
# and the script exits 1 (the release is incomplete).
set -euo pipefail

check=false
if [ "${1:-}" = "--check" ]; then
  check=true
  shift
fi
if [ $# -ne 1 ] || ! [[ $1 =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$ ]]; then
  echo "usage: $0 [--check] VERSION   (VERSION like v1.2.3 or v1.2.3-rc.1)" >&2
  exit 2
fi
version=$1
root=$(cd "$(dirname "$0")/.." && pwd)
dist=${SESSIONMEM_DIST:-$root/dist}/$version
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"

commit=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "release: NOTE: the working tree has uncommitted changes; they are not in the release, which builds commit $commit" >&2
fi
if [ "$(git -C "$root" rev-parse -q --verify "refs/tags/$version^{commit}" || true)" != "$commit" ]; then
  echo "release: NOTE: HEAD is not tagged $version (git tag $version, so that the release can be found from its version)" >&2
fi
# The Docker image builds with this Go too, so its binary is the linux archives' binary.
go_version=$(sed -n 's/^ARG GO_VERSION=\([0-9][0-9.]*\)$/\1/p' "$root/Dockerfile")
if [ -z "$go_version" ]; then
  echo "release: no 'ARG GO_VERSION=' in Dockerfile" >&2
  exit 1
fi
export GOTOOLCHAIN=go$go_version
epoch=$(git -C "$root" log -1 --format=%ct "$commit")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q --no-checkout "$root" "$work/src"
if ! git -C "$work/src" checkout -q --detach "$commit" 2>/dev/null; then
  echo "release: commit $commit is on no branch or tag, so a clone does not have it: tag it or check out a branch" >&2
  exit 1
fi
(cd "$work/src" && go build -o "$work/releasetool" ./scripts/releasetool)

# build_all OUT: every target into OUT; sets failed to the targets that did not build.
build_all() {
  local out=$1 t os arch name exe
  failed=""
  mkdir -p "$out"
  rm -f "$out"/sessionmem_"$version"_* "$out/SHA256SUMS"
  for t in $targets; do
    os=${t%/*} arch=${t#*/}
    name=sessionmem_${version}_${os}_${arch}
    exe=sessionmem
    [ "$os" = windows ] && exe=sessionmem.exe
    rm -rf "$work/stage/$name"
    mkdir -p "$work/stage/$name"
    if ! (cd "$work/src" && scripts/build.sh "$os" "$arch" "$version" "$work/stage/$name/$exe") >"$work/build.log" 2>&1; then
      {
        echo "release: $t DOES NOT BUILD; no $name archive. go build said:"
        sed 's/^/    /' "$work/build.log" | head -20
      } >&2
      failed="$failed $t"
      continue
    fi
    cp "$work/src/README.md" "$work/stage/$name/"
    [ -f "$work/src/LICENSE" ] && cp "$work/src/LICENSE" "$work/stage/$name/"
    if [ "$os" = windows ]; then
      "$work/releasetool" archive -mtime "$epoch" -o "$out/$name.zip" "$work/stage/$name"
    else
      "$work/releasetool" archive -mtime "$epoch" -o "$out/$name.tar.gz" "$work/stage/$name"
    fi
  done
  "$work/releasetool" sums "$out"
}

echo "release: sessionmem $version from commit $commit with go$go_version" >&2
build_all "$dist"
cat "$dist/SHA256SUMS"
status=0
if [ -n "$failed" ]; then
  echo "release: INCOMPLETE:$failed did not build (see above); the other archives are in $dist" >&2
  status=1
fi

if $check; then
  echo "release: --check: building everything again in another directory, with an empty build cache" >&2
  export GOCACHE="$work/gocache"
  build_all "$work/second" 2>/dev/null
  same=true
  for f in "$dist"/* "$work/second"/*; do
    n=$(basename "$f")
    if ! cmp -s "$dist/$n" "$work/second/$n"; then
      echo "release: --check: $n differs between the two builds" >&2
      same=false
    fi
  done
  if $same; then
    echo "release: --check: reproducible: $(ls "$dist" | wc -l) files (archives and SHA256SUMS) byte-identical in both builds" >&2
  else
    echo "release: --check: NOT REPRODUCIBLE" >&2
    status=1
  fi
fi
exit $status
