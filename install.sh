#!/usr/bin/env bash
# Installs what fixloop needs to build and serve, then builds dist/fixloop: the production install.
# Needs only Node.js/npm (Bun comes from the npm registry when it is missing). The test tooling (dev
# dependencies, Chromium) is installed by `bun run test` itself (scripts/test-setup.sh).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v bun >/dev/null 2>&1 && [ -x "$HOME/.local/bin/bun" ]; then
  export PATH="$HOME/.local/bin:$PATH"
fi
# The Bun that bun.lock and the Dockerfile's build stage use (bump the three together): "bun@1" took
# whatever 1.x the registry had that day, so a fresh machine could build with a Bun nobody had tested.
BUN_VERSION=1.4.5
if ! command -v bun >/dev/null 2>&1; then
  echo "install.sh: Bun not found; installing Bun $BUN_VERSION from the npm registry" >&2
  global=$(npm prefix -g)
  modules="$global/lib/node_modules"
  [ -d "$modules" ] || modules="$global/lib"
  if [ -w "$modules" ]; then
    npm install -g "bun@$BUN_VERSION" >&2
  else
    # npm's global folder is root's (Debian's /usr/local): without sudo, Bun goes to ~/.local/bin.
    npm install -g --prefix "$HOME/.local" "bun@$BUN_VERSION" >&2
    export PATH="$HOME/.local/bin:$PATH"
    echo "install.sh: Bun is in $HOME/.local/bin (npm's global folder is not yours); add that folder to your PATH to run bun yourself" >&2
  fi
fi
echo "install.sh: bun $(bun --version)" >&2

# The agent sandbox (docs/agents.md): without bubblewrap, `fixloop serve` refuses to start once an App
# has a repository connected (automatic fixes); reports are taken without it.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing bubblewrap (the agent sandbox)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >&2 ||
      echo "install.sh: could not install bubblewrap; install it before connecting a repository (automatic fixes need the sandbox)" >&2
  else
    echo "install.sh: bubblewrap (bwrap) is missing: sudo apt-get install bubblewrap before connecting a repository (automatic fixes need the sandbox)" >&2
  fi
fi

# The runtime and build dependencies exactly as locked; no development tooling.
bun install --production --frozen-lockfile

bun run build
echo "install.sh: built $(pwd)/dist/fixloop" >&2
