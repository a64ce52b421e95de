#!/usr/bin/env bash
# The soak (issue 22): `sessionmem serve --http` for DURATION (default 20m) under 8 concurrent
# clients doing a realistic mix (save, resume, list, search, compact, fork, delete), sampling
# the server's resident memory, open descriptors and goroutines every 10 s; fails on any error,
# any lost message, or growth after warm-up. Prints the samples.
set -euo pipefail
cd "$(dirname "$0")/.."
d="${1:-20m}"
SESSIONMEM_SOAK="$d" go test -count=1 -run '^TestSoak$' -v -timeout 0 ./cmd/sessionmem/
