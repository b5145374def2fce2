#!/usr/bin/env bash
# `npm run ops -- <command>` and `make ops ARGS="<command>"`: the ops CLI on the same database as
# `make` uses, i.e. DATABASE_URL when set, else the project-local cluster of scripts/pg.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL="$("$ROOT/scripts/pg.sh" ensure)"
  export DATABASE_URL
  # the embedded setup's signing secret, kept with its data (lib/core/config.ts creates it on first start)
  if [ -z "${SIGNING_SECRET:-}" ]; then export SIGNING_SECRET_FILE="$ROOT/.data/signing-secret"; fi
fi
exec node --import tsx "$ROOT/bin/ops.ts" "$@"
