#!/usr/bin/env bash
# interop.sh: build sessionmem and check that the official TypeScript SDK client and the MCP
# inspector CLI can call every tool over stdio and streamable HTTP (and connect over SSE).
# Needs Go and Node 20+ with npm and network access to the npm registry. Exits non-zero on failure.
#
# The store is a temporary directory unless one of these is given:
#   --store DIR|URL   run against this store (a directory or a postgres:// URL)
#   --postgres        run against a throwaway PostgreSQL database (needs PostgreSQL's server
#                     binaries: Debian's postgresql package; see storage/postgres/pgtest)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
store=""
case "${1:-}" in
  --postgres)
    if [ -z "${SESSIONMEM_PG_URL:-}" ]; then
      cd "$root"
      exec go run ./storage/postgres/pgtest/withpg -- "$root/scripts/interop.sh" --postgres
    fi
    store="$SESSIONMEM_PG_URL"
    echo "== store: a throwaway PostgreSQL database" ;;
  --store)
    store="${2:?--store needs a directory or URL}" ;;
  "") ;;
  *) echo "usage: $0 [--postgres | --store DIR|URL]" >&2; exit 2 ;;
esac
work="$(mktemp -d "${TMPDIR:-/tmp}/sessionmem-interop.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== build"
(cd "$root" && go build -o "$work/sessionmem" ./cmd/sessionmem)

echo "== npm install (pinned: $(grep -o '"@modelcontextprotocol/[a-z]*": "[^"]*"' "$root/mcpserver/testdata/interop/package.json" | tr '\n' ' '))"
cp "$root/mcpserver/testdata/interop/package.json" "$root/mcpserver/testdata/interop/interop.mjs" "$work/"
# The inspector declares node >=22 but its CLI runs on Node 20; the engine warning is expected.
# A registry hiccup should not fail the check: try the install three times.
for attempt in 1 2 3; do
  if (cd "$work" && npm install --prefer-offline --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
    break
  fi
  if [ "$attempt" = 3 ]; then cat "$work/npm.log"; exit 1; fi
  echo "npm install failed (attempt $attempt); retrying in 10 s"
  sleep 10
done

echo "== interop"
(cd "$work" && INTEROP_STORE="$store" node interop.mjs "$work/sessionmem")
