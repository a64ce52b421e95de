#!/usr/bin/env bash
# bench-save-ab.sh: compare the session_save p50 over stdio of two builds, with their
# saves interleaved: BenchmarkStdioSaveAB starts every build on its own store seeded with the
# same ~2 KB corpus messages (1,000 and 10,000 of them), then the builds take turns of 20 saves
# each, raw requests, so that all of them see the same seconds of the machine's load. A third
# server, "floor" (c), takes its turns too: it only appends each request to a file, fsyncs it
# and answers, the least a durable save over a pipe costs here. It prints each server's p50 and
# CPU time per save (docs/BENCHMARKS.md). On a shared two-core machine whole runs differ by
# ±30 %; two copies of one build compared this way by 2-3 %.
# Usage: scripts/bench-save-ab.sh OLD_REV_OR_BINARY NEW_REV_OR_BINARY [SAVES_PER_BUILD]
#   a revision (e.g. main~3, a commit) is built in a temporary worktree; a path is used as is.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0"
  exit 2
fi
saves="${3:-2000}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sessionmem-ab.XXXXXX")"
trap 'rm -rf "$work"; git -C "$root" worktree prune' EXIT

# build NAME REV_OR_BINARY: the binary's path on stdout.
build() {
  if [ -x "$2" ] && [ -f "$2" ]; then
    echo "$2"
    return
  fi
  git -C "$root" worktree add -q --detach "$work/src-$1" "$2" >&2
  (cd "$work/src-$1" && go build -o "$work/$1" ./cmd/sessionmem) >&2
  echo "$work/$1"
}
a="$(build a "$1")"
b="$(build b "$2")"

echo "a = $1, b = $2, c = floor; $saves saves each, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
cd "$root"
SESSIONMEM_AB="$a,$b,floor" SESSIONMEM_AB_SAVES="$saves" go test -run '^$' -bench 'StdioSaveAB$' -benchtime 1x -count 1 ./cmd/sessionmem/ |
  awk '/p50-us/ { printf "%s", $1; for (i = 5; i < NF; i += 2) printf "  %s %s", $(i+1), $i; print "" }'
