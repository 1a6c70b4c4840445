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

# The browser tests drive Debian's Chromium. Install it when we can (root or passwordless sudo with apt);
# otherwise those tests skip and say why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    as_root=""
    [ "$(id -u)" = "0" ] || { sudo -n true 2>/dev/null && as_root="sudo -n"; }
    if [ "$(id -u)" = "0" ] || [ -n "$as_root" ]; then
      echo "install.sh: installing chromium for the browser tests" >&2
      ($as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium) >&2 ||
        echo "install.sh: could not install chromium; the browser tests will skip" >&2
    else
      echo "install.sh: chromium is missing and apt-get needs root: run 'sudo apt-get install chromium' or the browser tests skip" >&2
    fi
  else
    echo "install.sh: chromium is missing (no apt-get here); the browser tests will skip" >&2
  fi
fi

# The agent sandbox (docs/agents.md): `fixloop serve` refuses to start without bubblewrap.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing bubblewrap (the agent sandbox)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >&2 ||
      echo "install.sh: could not install bubblewrap; install it before running fixloop serve" >&2
  else
    echo "install.sh: bubblewrap (bwrap) is missing: sudo apt-get install bubblewrap before running fixloop serve" >&2
  fi
fi

# Dependencies exactly as locked.
bun install --frozen-lockfile

bun run build
echo "install.sh: built $(pwd)/dist/fixloop" >&2
