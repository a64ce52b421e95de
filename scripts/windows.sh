#!/usr/bin/env bash
# Runs the Windows build under Wine: the test suites of the storage packages, memory and
# mcpserver compiled for windows/amd64, then the sessionmem.exe binary end to end (an MCP
# session over stdio that saves, lists and searches).
#
#   scripts/windows.sh [-short]
#
# Needs Debian's wine64 and the MinGW-w64 C compiler (gcc-mingw-w64-x86-64-win32); with
# CI=true they are installed with apt-get when missing, otherwise the script says what is
# missing and exits 0. The compiler builds scripts/wine/bcryptprimitives.c: Debian 12's Wine
# (8.0) lacks the DLL every Go program since Go 1.22 loads at start.
#
# The tests see SESSIONMEM_WINE=1 and skip what Wine cannot run or does not do as Windows
# does, each with its reason (README.md "Windows"): tests that need PostgreSQL or Chromium
# skip as they do anywhere those are missing (CI=true is not passed on: their servers are
# Linux programs). -short passes -test.short (no tests that spawn processes, fewer crash
# points). Each suite has a time limit; a suite that fails or times out fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
short=""
[ "${1:-}" = "-short" ] && short="-test.short"

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

# package:time limit in seconds
suites="storage:120 storage/fts:120 storage/ftsindex:300 storage/local:420 storage/relevance:180 storage/storecopy:120 memory:420 mcpserver:300"
export SESSIONMEM_WINE=1 CI=""
failed=""
for s in $suites; do
  pkg=${s%%:*} limit=${s#*:}
  bin="$work/bin/$(echo "$pkg" | tr / _).test.exe"
  t0=$(date +%s)
  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -c -overlay "$work/overlay.json" -o "$bin" "./$pkg"
  t1=$(date +%s)
  # go test runs a test binary in its package's directory (testdata is found from there).
  if (cd "$pkg" && timeout "$limit" "$wine" "$bin" -test.count=1 -test.timeout="$((limit - 10))s" $short) >"$work/out.log" 2>&1; then
    echo "windows: ok   $pkg (build $((t1 - t0)) s, run $(($(date +%s) - t1)) s)"
  else
    failed="$failed $pkg"
    echo "windows: FAIL $pkg (build $((t1 - t0)) s, run $(($(date +%s) - t1)) s):"
    grep -E -A8 '^(--- FAIL|panic:|fatal error:|FAIL)|test timed out' "$work/out.log" | head -60 | sed 's/^/    /'
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
