#!/usr/bin/env bash
# Embedded Postgres + PostGIS for a single machine: a project-local cluster under .data/pg on its own
# port, built from Debian's PostgreSQL 15 binaries (installed from Debian packages when missing).
# Nothing here is used when DATABASE_URL is set: then the caller's database is the database.
#
#   scripts/pg.sh ensure   install packages if missing, initdb once, start if stopped, create databases
#   scripts/pg.sh stop     stop the cluster
#   scripts/pg.sh status   say whether it runs
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="$ROOT/.data/pg"
PORT_FILE="$ROOT/.data/pg-port"
RUN="$ROOT/.data/pg-run"
LOG="$ROOT/.data/pg.log"
PGVER=15
BIN="/usr/lib/postgresql/$PGVER/bin"
DB_NAME="${EMBEDDED_PG_DB:-platform}"

log() { echo "[pg] $*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The cluster keeps the port it was created with (.data/pg-port). A new cluster takes
# EMBEDDED_PG_PORT (default 54329) or, when another server already listens there (a second checkout
# on the same machine), the next free port.
if [ -f "$PORT_FILE" ]; then
  PGPORT="$(cat "$PORT_FILE")"
else
  PGPORT="${EMBEDDED_PG_PORT:-54329}"
fi

as_pg() {
  # initdb and postgres refuse to run as root: run them as the postgres system user then.
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_packages() {
  local need=()
  [ -x "$BIN/postgres" ] || need+=("postgresql-$PGVER")
  [ -f "/usr/share/postgresql/$PGVER/extension/postgis.control" ] || need+=("postgresql-$PGVER-postgis-3")
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} from Debian packages"
    local SUDO=""
    [ "$(id -u)" = "0" ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

running() { as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

ensure() {
  install_packages
  mkdir -p "$ROOT/.data"
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    PGPORT="${EMBEDDED_PG_PORT:-54329}"
    while ! port_free "$PGPORT"; do PGPORT=$((PGPORT + 1)); done
    echo "$PGPORT" >"$PORT_FILE"
    log "initialising cluster in $DATA (port $PGPORT)"
    mkdir -p "$DATA" "$RUN"
    [ "$(id -u)" = "0" ] && chown -R postgres:postgres "$DATA" "$RUN"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$RUN'
max_connections = 300
shared_buffers = 256MB
fsync = on
synchronous_commit = on
log_min_messages = warning
EOF
  fi
  mkdir -p "$RUN"
  [ "$(id -u)" = "0" ] && chown postgres:postgres "$RUN" && touch "$LOG" && chown postgres:postgres "$LOG"
  if ! running; then
    # the port is given at start (not in postgresql.conf): when another server took it meanwhile,
    # move to the next free one and remember it
    for _ in $(seq 1 20); do
      log "starting on 127.0.0.1:$PGPORT"
      if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o "-p $PGPORT" start >/dev/null; then break; fi
      grep -q "could not bind\|could not create any TCP/IP sockets" "$LOG" || exit 1
      PGPORT=$((PGPORT + 1))
      while ! port_free "$PGPORT"; do PGPORT=$((PGPORT + 1)); done
      echo "$PGPORT" >"$PORT_FILE"
      : >"$LOG"
    done
  fi
  for _ in $(seq 1 60); do
    "$BIN/pg_isready" -h 127.0.0.1 -p "$PGPORT" -q && break
    sleep 0.5
  done
  if ! "$BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atqc "select 1 from pg_database where datname='$DB_NAME'" postgres | grep -q 1; then
    "$BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "create database \"$DB_NAME\"" postgres
  fi
}

case "${1:-ensure}" in
  ensure) ensure; echo "postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME" ;;
  stop) if [ -f "$DATA/PG_VERSION" ] && running; then as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; log "stopped"; fi ;;
  restart) as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -m fast -w -o "-p $PGPORT" restart >/dev/null ;;
  status) if [ -f "$DATA/PG_VERSION" ] && running; then echo "running on $PGPORT"; else echo "stopped"; fi ;;
  url) echo "postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME" ;;
  *) echo "usage: $0 ensure|stop|restart|status|url" >&2; exit 2 ;;
esac
