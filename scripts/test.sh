#!/usr/bin/env bash
# The project's test command (README.md "Quick start"): vet, formatting, and the race-enabled
# test suite. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go test -race -count=1 -timeout 30m ./...
