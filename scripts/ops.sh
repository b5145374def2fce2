#!/usr/bin/env bash
# `npm run ops -- <command>` and `make ops ARGS="<command>"`: the ops CLI on the same database as
# `make` uses, i.e. DATABASE_URL when set, else the project-local cluster of scripts/pg.sh; and on the
# same vehicle broker, i.e. MQTT_URL when set, else the project-local broker of scripts/mqtt.sh (the
# commands that command vehicles, `rental end`, reach them through it). Both are left running, as
# `make db` leaves them; `make db-stop` stops them.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL="$("$ROOT/scripts/pg.sh" ensure)"
  export DATABASE_URL
  # the embedded setup's signing secret, kept with its data (lib/core/config.ts creates it on first start)
  if [ -z "${SIGNING_SECRET:-}" ]; then export SIGNING_SECRET_FILE="$ROOT/.data/signing-secret"; fi
fi
if [ -z "${MQTT_URL:-}" ]; then
  MQTT_URL="$("$ROOT/scripts/mqtt.sh" ensure)"
  export MQTT_URL MQTT_USERNAME=platform MQTT_PASSWORD_FILE="$ROOT/.data/mqtt/platform-secret"
fi
exec node --import tsx "$ROOT/bin/ops.ts" "$@"
