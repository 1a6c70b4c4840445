#!/usr/bin/env bash
# Installs what fixloop needs to build and test, then builds dist/fixloop.
# Needs only Node.js/npm (Bun comes from the npm registry when it is missing).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v bun >/dev/null 2>&1; then
  echo "install.sh: Bun not found; installing it from the npm registry" >&2
  npm install -g bun@1 >&2
fi
echo "install.sh: bun $(bun --version)" >&2

# Dependencies exactly as locked.
bun install --frozen-lockfile

bun run build
echo "install.sh: built $(pwd)/dist/fixloop" >&2
