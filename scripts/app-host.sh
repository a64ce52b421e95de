#!/usr/bin/env bash
# app-host.sh: render the session viewer's MCP App with the host side of the official MCP Apps
# SDK (@modelcontextprotocol/ext-apps AppBridge and @modelcontextprotocol/client, pinned in
# mcpserver/testdata/apphost/package.json) in Chromium, and check that it lists, opens and
# searches sessions through tool calls (mcpserver TestAppInOfficialHost). Needs Go, Node 20+
# with npm and network access to the npm registry, and Debian's chromium.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/sessionmem-app-host.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== npm install (pinned: $(grep -o '"[@a-z/-]*": "[0-9.]*"' "$root/mcpserver/testdata/apphost/package.json" | tr '\n' ' '))"
cp "$root/mcpserver/testdata/apphost/package.json" "$work/"
# A registry hiccup should not fail the check: try the install three times.
for attempt in 1 2 3; do
  if (cd "$work" && npm install --prefer-offline --no-audit --no-fund --loglevel=error >"$work/npm.log" 2>&1); then
    break
  fi
  if [ "$attempt" = 3 ]; then cat "$work/npm.log"; exit 1; fi
  echo "npm install failed (attempt $attempt); retrying in 10 s"
  sleep 10
done

echo "== the MCP App in the official host"
cd "$root"
SESSIONMEM_EXT_APPS_MODULES="$work/node_modules" go test ./mcpserver -run '^TestAppInOfficialHost$' -count=1 -v | grep -v '^=== RUN'
