#!/usr/bin/env bash
# Runs the Windows build under Wine: the test suites of the storage packages, memory and
# mcpserver compiled for windows/amd64, then the sessionmem.exe binary end to end (an MCP
# session over stdio that saves, lists and searches).
#
#   scripts/windows.sh [--full]
#
# Needs Debian's wine64 and the MinGW-w64 C compiler (gcc-mingw-w64-x86-64-win32); with
# CI=true they are installed with apt-get when missing, otherwise the script says what is
# missing and exits 0. The compiler builds scripts/wine/bcryptprimitives.c: Debian 12's Wine
# (8.0) lacks the DLL every Go program since Go 1.22 loads at start.
#
# The tests see SESSIONMEM_WINE=1 and skip what Wine cannot run or does not do as Windows
# does, each with its reason (README.md "Windows"): tests that need PostgreSQL or Chromium
# skip as they do anywhere those are missing (CI=true is not passed on: their servers are
# Linux programs). Each suite has a time limit; a suite that fails or times out fails the script.
#
# By default (CI) the run is bounded: every suite with -test.short (no tests that spawn
# processes, fewer crash points), then storage/local's and memory's multi-process tests
# (cross-process locks, kill -9) without it. --full runs every suite whole; under Wine that
# takes far longer than CI allows (memory's compaction tests alone took over 8 minutes on a
# loaded 2-core machine).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
full=false
[ "${1:-}" = "--full" ] && full=true

wine=$(command -v wine64 || true)
[ -z "$wine" ] && [ -x /usr/lib/wine/wine64 ] && wine=/usr/lib/wine/wine64
cc=$(command -v x86_64-w64-mingw32-gcc || true)
if [ -z "$wine" ] || [ -z "$cc" ]; then
  if [ "${CI:-}" != true ]; then
    echo "windows: SKIPPED: needs wine64 and gcc-mingw-w64-x86-64-win32 (apt-get install -y --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32)"
    exit 0
  fi
  echo "== installing Wine and MinGW-w64 (Debian's wine64, gcc-mingw-w64-x86-64-win32)"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32 >/dev/null
  wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
  cc=x86_64-w64-mingw32-gcc
fi
wineserver=$(command -v wineserver || true)
[ -z "$wineserver" ] && wineserver=$(dirname "$wine")/wineserver

work=$(mktemp -d)
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() {
  "$wineserver" -k >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

start=$(date +%s)
timeout 300 "$wine" wineboot --init >/dev/null 2>&1
"$cc" -shared -O2 -s -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" scripts/wine/bcryptprimitives.c -ladvapi32
echo "windows: Wine $("$wine" --version 2>/dev/null) ready in $(($(date +%s) - start)) s"

# Go's os.RemoveAll (testing's TempDir cleanup uses it) deletes with
# FileDispositionInformationEx and falls back to the older call only on the status codes
# Windows gives where that is missing; Wine 8 answers STATUS_NOT_IMPLEMENTED (ERROR_INVALID_FUNCTION),
# so every TempDir cleanup would fail. The test binaries (not sessionmem.exe) are built with an
# overlay of that one standard-library file that adds Wine's codes to the fallback.
at="$(go env GOROOT)/src/internal/syscall/windows/at_windows.go"
mkdir -p "$work/overlay"
sed 's|^\(\t\tSTATUS_NOT_SUPPORTED\):  *//.*$|\1, NTStatus(0xC0000002), NTStatus(0xC0000010), NTStatus(0xC00000AF): // + Wine|' "$at" >"$work/overlay/at_windows.go"
if ! grep -q '// + Wine' "$work/overlay/at_windows.go"; then
  echo "windows: $at changed: the Wine overlay no longer applies (update scripts/windows.sh)" >&2
  exit 1
fi
printf '{"Replace":{"%s":"%s"}}\n' "$at" "$work/overlay/at_windows.go" >"$work/overlay.json"

# package:time limit in seconds[:-test.run pattern for a second, unshortened pass]
suites="storage:120 storage/fts:120 storage/ftsindex:300 storage/local:600:^(TestMultiProcess|TestKill9) storage/relevance:180 storage/storecopy:180 memory:600:^TestTwoProcesses mcpserver:420"
export SESSIONMEM_WINE=1 CI=""
failed=""
# run PKG BIN LIMIT ARGS...: one pass of a suite.
run() {
  local pkg=$1 bin=$2 limit=$3 t0
  shift 3
  t0=$(date +%s)
  # go test runs a test binary in its package's directory (testdata is found from there).
  if (cd "$pkg" && timeout "$limit" "$wine" "$bin" -test.count=1 -test.timeout="$((limit - 10))s" "$@") >"$work/out.log" 2>&1; then
    echo "windows: ok   $pkg $* ($(($(date +%s) - t0)) s)"
  else
    failed="$failed $pkg"
    echo "windows: FAIL $pkg $* ($(($(date +%s) - t0)) s):"
    grep -E -A8 '^(--- FAIL|panic:|fatal error:|FAIL)|test timed out' "$work/out.log" | head -60 | sed 's/^/    /'
  fi
}
for s in $suites; do
  IFS=: read -r pkg limit pattern <<<"$s"
  bin="$work/bin/$(echo "$pkg" | tr / _).test.exe"
  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -c -overlay "$work/overlay.json" -o "$bin" "./$pkg"
  if $full; then
    run "$pkg" "$bin" "$limit"
  else
    run "$pkg" "$bin" "$limit" -test.short
    if [ -n "$pattern" ]; then
      run "$pkg" "$bin" "$limit" -test.run "$pattern"
    fi
  fi
done

# The binary end to end: an MCP session over stdio in a fresh store.
exe="$work/bin/sessionmem.exe"
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -o "$exe" ./cmd/sessionmem
if SESSIONMEM_EXE="$exe" WINE="$wine" STORE="$work/store" timeout 300 go run ./scripts/wine/e2e 2>"$work/e2e.log"; then
  echo "windows: ok   sessionmem.exe over stdio"
else
  failed="$failed sessionmem.exe"
  grep -v 'level=INFO' "$work/e2e.log" | tail -20 | sed 's/^/    /'
fi

if [ -n "$failed" ]; then
  echo "windows: FAILED:$failed"
  exit 1
fi
echo "windows: all suites pass under Wine ($(($(date +%s) - start)) s)"
