#!/usr/bin/env bash
# Installs the official MobilityData GBFS validator library (../shared/tools/gbfs-validator, see its
# PROVENANCE.md) into .data/gbfs-validator for test/gbfs-validator.test.ts: a copy of the folder with
# its runtime dependencies from the npm registry. The copy lives with the data, never in the
# repository. Idempotent: nothing to do when the copy was made from the same files.
# GBFS_VALIDATOR_DIR names another source folder.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${GBFS_VALIDATOR_DIR:-$ROOT/../shared/tools/gbfs-validator}"
DEST="$ROOT/.data/gbfs-validator"
if [ ! -f "$SRC/gbfs.js" ] || [ ! -f "$SRC/package-lock.json" ]; then
  echo "[gbfs-validator] $SRC is missing (set GBFS_VALIDATOR_DIR)" >&2
  exit 1
fi
stamp="$(cat "$SRC/package-lock.json" "$SRC/gbfs.js" "$SRC/validate.js" | sha256sum | cut -d' ' -f1)"
if [ -f "$DEST/.installed" ] && [ "$(cat "$DEST/.installed")" = "$stamp" ]; then
  exit 0
fi
echo "[gbfs-validator] installing the official validator into .data/gbfs-validator" >&2
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
cp -R "$SRC" "$DEST"
(cd "$DEST" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null 2>&1)
echo "$stamp" > "$DEST/.installed"
