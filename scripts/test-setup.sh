#!/usr/bin/env bash
# `bun run test` runs this first: what the tests need on top of a production install (install.sh), each
# step only when missing or stale, so the binary install.sh has just built is not built again.
set -euo pipefail
cd "$(dirname "$0")/.."

# The development dependencies (deno, playwright-core, s3rver, typescript...): install.sh installs only
# what serving needs. A no-op when they are already there.
bun install --frozen-lockfile >&2

# The browser tests drive Debian's Chromium. Installed when we can (root or passwordless sudo with apt);
# otherwise those tests skip and say why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    as_root=""
    [ "$(id -u)" = "0" ] || { sudo -n true 2>/dev/null && as_root="sudo -n"; }
    if [ "$(id -u)" = "0" ] || [ -n "$as_root" ]; then
      echo "test-setup: installing chromium for the browser tests" >&2
      ($as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium) >&2 ||
        echo "test-setup: could not install chromium; the browser tests will skip" >&2
    else
      echo "test-setup: chromium is missing and apt-get needs root: run 'sudo apt-get install chromium' or the browser tests skip" >&2
    fi
  else
    echo "test-setup: chromium is missing (no apt-get here); the browser tests will skip" >&2
  fi
fi

# Rebuilds OUTPUT only when a file among INPUTS is newer (or OUTPUT is missing). The inputs of the binary:
# everything `bun run build` reads or embeds (sources, widget, migrations, the demo page, locked deps).
stale() {
  local output=$1
  shift
  [ ! -e "$output" ] && return 0
  [ -n "$(find "$@" -newer "$output" -type f -print -quit 2>/dev/null)" ]
}

if stale dist/fixloop src widget/src widget/build.ts migrations docs/widget-demo.html package.json bun.lock bunfig.toml tsconfig.json; then
  echo "test-setup: building dist/fixloop (sources changed since the last build)" >&2
  bun run build >&2
else
  echo "test-setup: dist/fixloop is up to date" >&2
fi
if stale packages/client/dist/index.js packages/client/src packages/client/scripts packages/client/package.json; then
  bun run build:client >&2
fi
