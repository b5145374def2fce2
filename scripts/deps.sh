#!/usr/bin/env bash
# Installs the npm dependencies from the lock file when node_modules is missing or older than it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[deps] npm ci" >&2
  npm ci --no-fund --no-audit --loglevel=error >&2
fi
