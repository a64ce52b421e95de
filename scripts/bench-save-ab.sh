#!/usr/bin/env bash
# bench-save-ab.sh: compare the session_save p50 of two builds over stdio, alternating them run
# by run so that both see the same load (on a shared machine the other tenants move a single
# run's p50 by ±30 %). Each run is `go test -bench` of BenchmarkStdioSaveCorpusRaw (requests
# written by hand) and BenchmarkStdioSaveCorpus (mcp-go client) at 1,000 and 10,000 messages,
# ~2 KB corpus messages, 800 saves, against the given binary (SESSIONMEM_TEST_BIN). Prints every
# run's p50 and the median of the runs per build and benchmark (docs/BENCHMARKS.md).
# Usage: scripts/bench-save-ab.sh OLD_REV_OR_BINARY NEW_REV_OR_BINARY [ROUNDS]
#   a revision (e.g. main~3, a commit) is built in a temporary worktree; a path is used as is.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0"
  exit 2
fi
rounds="${3:-5}"
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

: >"$work/runs"
for i in $(seq "$rounds"); do
  for side in a b; do
    bin="$a"
    if [ "$side" = b ]; then bin="$b"; fi
    (cd "$root" && SESSIONMEM_TEST_BIN="$bin" go test -run '^$' -bench 'StdioSaveCorpus(Raw)?$' -benchtime 800x -count 1 ./cmd/sessionmem/) |
      awk -v side="$side" '/p50-us/ { for (i = 1; i <= NF; i++) if ($i == "p50-us") print side, $1, $(i-1) }' >>"$work/runs"
  done
  echo "round $i of $rounds done (load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?))" >&2
done

echo "a = $1, b = $2; p50 of each run in µs, then the median of the runs"
sort -k2,2 -k1,1 -s "$work/runs" | awk '
  function flush() {
    if (key == "") return
    n = split(vals, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    printf "%-50s %s  median %.0f\n", key, vals, med
  }
  { k = $2 " " $1; if (k != key) { flush(); key = k; vals = "" } vals = vals " " $3 }
  END { flush() }'
