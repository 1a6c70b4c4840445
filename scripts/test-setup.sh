#!/usr/bin/env bash
# `bun run test` runs this first: what the tests need on top of a production install (install.sh), each
# step only when missing or stale, so the binary install.sh has just built is not built again.
set -euo pipefail
cd "$(dirname "$0")/.."

# The development dependencies (deno, playwright-core, s3rver, typescript...): install.sh installs only
# what serving needs. A no-op when they are already there.
bun install --frozen-lockfile >&2

# What the tests run besides bun, all from Debian's packages (one list, also what CI gets): Chromium (and its
# headless shell) for the browser tests, a real PostgreSQL and redis-server for the storage and cluster tests,
# nginx and caddy in front of the binary (test/proxy-paths.test.ts), bubblewrap for the agent sandbox,
# systemd-analyze for the unit file, python3 for the webhook snippet of docs/events.md, faketime for a node
# with a shifted clock, sqlite3 to inspect files, pgbouncer in transaction mode in front of PostgreSQL
# (test/pg-key-lock-pooler.test.ts). Installed when we can (root, or passwordless sudo, with
# apt); otherwise the tests that need a missing one skip and say why.
need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
have chromium || have chromium-browser || need+=(chromium)
# Its old headless shell, which the browser tests launch when it is there (test/browser.ts): the same pages
# for about a third less CPU than the full browser's headless mode.
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
have nginx || need+=(nginx)
have caddy || need+=(caddy)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
have redis-server || need+=(redis-server)
have bwrap || need+=(bubblewrap)
have systemd-analyze || need+=(systemd)
have python3 || need+=(python3)
have faketime || need+=(faketime)
have sqlite3 || need+=(sqlite3)
have pgbouncer || need+=(pgbouncer)
if [ ${#need[@]} -gt 0 ]; then
  as_root=""
  [ "$(id -u)" = "0" ] || { sudo -n true 2>/dev/null && as_root="sudo -n"; }
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = "0" ] || [ -n "$as_root" ]; }; then
    echo "test-setup: installing ${need[*]} for the tests" >&2
    ($as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq "${need[@]}") >&2 ||
      echo "test-setup: could not install ${need[*]}; the tests that need them will skip or fail" >&2
  else
    echo "test-setup: missing ${need[*]} (installing needs apt-get as root): run 'sudo apt-get install ${need[*]}' or the tests that need them skip" >&2
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
