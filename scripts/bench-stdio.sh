#!/usr/bin/env bash
# bench-stdio.sh: time sessionmem over stdio with the official TypeScript SDK client, the
# client most agents use, on ~2 KB corpus messages (docs/BENCHMARKS.md): a full resume of
# uncompacted sessions of 2,000 and 6,000 messages (every page, max_tokens 100,000), the first
# page (warm, and the first call after a server start), and listing 1,000 sessions in pages of
# 100; and the full resume of 2,000 through a minimal client (stdio-raw.mjs), which shows what
# the server costs without the SDK's buffering. Needs Go, Node 20+ and npm (registry access);
# prints one JSON line per measurement.
# With --pi it also times pi's SessionManager (npm @mariozechner/pi-coding-agent@0.58.3) on the
# same messages, each measurement right after sessionmem's (scripts/bench/pi.mjs), and the full
# resume of 2,000 against pi's open and build round by round (scripts/bench/resume-paired.mjs).
# Usage: scripts/bench-stdio.sh [--pi] [RUNS]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pi=""
if [ "${1:-}" = "--pi" ]; then pi=1; shift; fi
runs="${1:-7}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sessionmem-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/sessionmem" ./cmd/sessionmem)
# The same messages the Go benchmarks use: corpus messages of 1 to 4 KB (the excerpts in
# testdata/ when ../shared/corpus is absent).
(cd "$root" && SESSIONMEM_BENCH_DUMP="$work/msgs.jsonl" go test -count=1 -run '^TestDumpBenchMessages$' ./cmd/sessionmem/ >/dev/null)
cp "$root/scripts/bench/package.json" "$root/scripts/bench/stdio.mjs" "$root/scripts/bench/stdio-raw.mjs" "$root/scripts/bench/pi.mjs" \
  "$root/scripts/bench/pisession.mjs" "$root/scripts/bench/resume-paired.mjs" "$work/"
extra=()
if [ -n "$pi" ]; then extra=(@mariozechner/pi-coding-agent@0.58.3); fi
for attempt in 1 2 3; do
  if (cd "$work" && npm install --prefer-offline --no-audit --no-fund --loglevel=error "${extra[@]}" >"$work/npm.log" 2>&1); then
    break
  fi
  if [ "$attempt" = 3 ]; then cat "$work/npm.log"; exit 1; fi
  sleep 10
done
cd "$work"
node stdio.mjs ./sessionmem msgs.jsonl resume 2000 "$runs"
node stdio-raw.mjs ./sessionmem msgs.jsonl 2000 "$runs"
if [ -n "$pi" ]; then
  node pi.mjs resume msgs.jsonl 2000 "$runs"; node pi.mjs fresh msgs.jsonl 2000 "$runs"
  # Issue 25's resume bar, paired: a fresh server and pi take turns, 4 × RUNS rounds.
  node resume-paired.mjs "$((4 * runs))" ./sessionmem
fi
node stdio.mjs ./sessionmem msgs.jsonl resume 6000 "$runs"
if [ -n "$pi" ]; then node pi.mjs resume msgs.jsonl 6000 "$runs"; fi
node stdio.mjs ./sessionmem msgs.jsonl list 1000 4 "$runs"
if [ -n "$pi" ]; then node pi.mjs list msgs.jsonl 1000 4 "$runs"; fi
