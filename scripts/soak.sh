#!/usr/bin/env bash
# The soak (issue 22): `sessionmem serve --http` for DURATION (default 20m) under 8 concurrent
# clients doing a realistic mix (save, resume, list, search, compact, fork, delete), sampling
# the server's resident memory, open descriptors and goroutines every 10 s; fails on any error,
# any lost message, or growth after warm-up. Prints the samples.
#
# The server starts on a copy of a store of SESSIONMEM_SOAK_SEED_MB (default 100) MB of
# message JSON, as people's stores are, built on the first run and kept in
# SESSIONMEM_SOAK_SEED_DIR (default ${TMPDIR:-/tmp}/sessionmem-soak-seed); 0 starts empty.
set -euo pipefail
cd "$(dirname "$0")/.."
d="${1:-20m}"
export SESSIONMEM_SOAK_SEED_MB="${SESSIONMEM_SOAK_SEED_MB:-100}"
export SESSIONMEM_SOAK_SEED_DIR="${SESSIONMEM_SOAK_SEED_DIR:-${TMPDIR:-/tmp}/sessionmem-soak-seed}"
SESSIONMEM_SOAK="$d" go test -count=1 -run '^TestSoak$' -v -timeout 0 ./cmd/sessionmem/
