#!/usr/bin/env bash
# Embedded Postgres + PostGIS for a single machine: a project-local cluster under .data/pg on its own
# port, built from Debian's PostgreSQL 15 binaries (installed from Debian packages when missing).
# Nothing here is used when DATABASE_URL is set: then the caller's database is the database.
#
#   scripts/pg.sh ensure        install packages if missing, initdb once, start if stopped, create
#                               databases; prints the URL (the cluster keeps running: `make db-stop`)
#   scripts/pg.sh with CMD…     ensure, run CMD with DATABASE_URL set, then stop the cluster again when
#                               this call (or another `with` still running then) started it and no
#                               other session uses it: what `make run`, `make test` and the ops targets
#                               use, so Ctrl-C or the end of the command leaves nothing running
#   scripts/pg.sh install       install PostgreSQL and PostGIS from Debian packages if missing
#                               (scripts/ha.sh uses it too)
#   scripts/pg.sh stop          stop the cluster (`make db-stop`), its replica first
#   scripts/pg.sh status        say whether it runs (and its replica, when there is one)
#   scripts/pg.sh replica       ensure, then a streaming standby of the cluster (pg_basebackup -R) in
#                               .data/pg-replica on the next free port, read-only, for
#                               DATABASE_REPLICA_URL in tests and benches; prints its URL
#                               (`make db-replica`). Idempotent: a running replica is left as it is, a
#                               stopped one is started again
#   scripts/pg.sh replica-stop  stop the replica and remove it with its replication slot (a standby is a
#                               copy: `replica` makes a fresh one in seconds, and no slot is left holding
#                               WAL on the primary for a standby that is gone)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="$ROOT/.data/pg"
PORT_FILE="$ROOT/.data/pg-port"
RUN="$ROOT/.data/pg-run"
LOG="$ROOT/.data/pg.log"
# `with`: one file per running command (its pid), and the mark that a `with` started the cluster
LEASES="$ROOT/.data/pg-leases"
STARTED_BY_WITH="$ROOT/.data/pg-started-by-with"
LOCK="$ROOT/.data/pg.lock"
PGVER=15
BIN="/usr/lib/postgresql/$PGVER/bin"
DB_NAME="${EMBEDDED_PG_DB:-platform}"
# the streaming standby (`replica`): its data, port file, log and physical replication slot
REPLICA_DATA="$ROOT/.data/pg-replica"
REPLICA_PORT_FILE="$ROOT/.data/pg-replica-port"
REPLICA_LOG="$ROOT/.data/pg-replica.log"
REPLICA_SLOT="platform_replica"

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
  # JIT compiles a plan whose estimated cost passes jit_above_cost: for this schema's small
  # statements that costs far more than it saves (the publisher's catch-up scan: ~900 ms with JIT,
  # ~15 ms without). Clusters made before this line get it appended once.
  if ! grep -q '^jit = off' "$DATA/postgresql.conf"; then
    echo "jit = off" | as_pg tee -a "$DATA/postgresql.conf" >/dev/null
    if running; then as_pg "$BIN/pg_ctl" -D "$DATA" reload >/dev/null; fi
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

stop() {
  # the replica first: its slot is dropped while the primary still runs, and no standby outlives it
  replica_stop
  if [ -f "$DATA/PG_VERSION" ] && running; then as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null; log "stopped"; fi
  rm -f "$STARTED_BY_WITH"
}

primary_sql() { "$BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atqc "$1" postgres; }

replica_exists() { [ -f "$REPLICA_DATA/PG_VERSION" ]; }
replica_running() { replica_exists && as_pg "$BIN/pg_ctl" -D "$REPLICA_DATA" status >/dev/null 2>&1; }
replica_port() { cat "$REPLICA_PORT_FILE"; }
system_id() { as_pg "$BIN/pg_controldata" -D "$1" 2>/dev/null | sed -n 's/^Database system identifier: *//p'; }

# Drops the replica's slot on the running primary (a stopped standby's walsender takes a moment to
# go, and an active slot cannot be dropped).
drop_replica_slot() {
  local state
  for _ in $(seq 1 25); do
    state="$(primary_sql "select active from pg_replication_slots where slot_name = '$REPLICA_SLOT'" 2>/dev/null)" || return 1
    case "$state" in
      '') return 0 ;;
      f) primary_sql "select pg_drop_replication_slot('$REPLICA_SLOT')" >/dev/null 2>&1 || true ;;
      *) sleep 0.2 ;;
    esac
  done
  log "replication slot $REPLICA_SLOT is still in use: not dropped"
  return 1
}

replica_stop() {
  if replica_running; then as_pg "$BIN/pg_ctl" -D "$REPLICA_DATA" -m fast -w stop >/dev/null; fi
  if [ -f "$DATA/PG_VERSION" ] && running; then
    drop_replica_slot || true
  elif replica_exists; then
    log "the cluster is not running: its slot $REPLICA_SLOT stays until scripts/pg.sh replica-stop runs with the cluster up"
  fi
  if replica_exists || [ -f "$REPLICA_PORT_FILE" ]; then
    rm -rf "$REPLICA_DATA" "$REPLICA_PORT_FILE"
    log "replica removed"
  fi
}

# What streaming needs from the primary. initdb's defaults give all three (wal_level=replica,
# max_wal_senders=10, a trusted replication line for 127.0.0.1); the first two take a restart to
# change, which is never done behind the back of the sessions using the cluster.
replica_prerequisites() {
  local wal senders
  wal="$(primary_sql 'show wal_level')"
  senders="$(primary_sql 'show max_wal_senders')"
  if [ "$wal" = minimal ] || [ "$senders" = 0 ]; then
    log "the cluster runs with wal_level=$wal, max_wal_senders=$senders: a standby needs wal_level=replica and max_wal_senders > 0 (set them in $DATA/postgresql.conf, then scripts/pg.sh restart)"
    exit 1
  fi
  if ! grep -Eq '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]' "$DATA/pg_hba.conf"; then
    echo "host    replication     all             127.0.0.1/32            trust" | as_pg tee -a "$DATA/pg_hba.conf" >/dev/null
    as_pg "$BIN/pg_ctl" -D "$DATA" reload >/dev/null
  fi
}

# A fresh standby: pg_basebackup of the running cluster with a slot of its own (-C -S), so that the
# primary keeps the WAL a stopped standby still needs; -R writes primary_conninfo and standby.signal.
replica_build() {
  local port
  replica_stop
  port=$((PGPORT + 1))
  while ! port_free "$port"; do port=$((port + 1)); done
  mkdir -p "$REPLICA_DATA"
  chmod 700 "$REPLICA_DATA"
  [ "$(id -u)" = "0" ] && chown postgres:postgres "$REPLICA_DATA"
  log "copying 127.0.0.1:$PGPORT into $REPLICA_DATA (pg_basebackup)"
  as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p "$PGPORT" -U postgres -D "$REPLICA_DATA" -R -X stream -C -S "$REPLICA_SLOT" -c fast
  # hot_standby_feedback: the primary's vacuum keeps the rows that a long read on the standby still
  # sees (a publisher snapshot streaming a large hour) rather than replay cancelling that read
  printf '%s\n' "# a streaming standby of $DATA (scripts/pg.sh replica)" "hot_standby = on" "hot_standby_feedback = on" |
    as_pg tee -a "$REPLICA_DATA/postgresql.conf" >/dev/null
  echo "$port" >"$REPLICA_PORT_FILE"
}

replica_start() {
  local port
  port="$(replica_port)"
  # like the primary's: the port is given at start; when another server took it, the next free one
  while ! port_free "$port"; do port=$((port + 1)); done
  echo "$port" >"$REPLICA_PORT_FILE"
  log "starting the replica on 127.0.0.1:$port"
  as_pg "$BIN/pg_ctl" -D "$REPLICA_DATA" -l "$REPLICA_LOG" -w -t 60 -o "-p $port" start >/dev/null
}

replica() {
  ensure
  replica_prerequisites
  # a standby of an earlier cluster (.data/pg made again) cannot follow this one
  if replica_exists && [ "$(system_id "$REPLICA_DATA")" != "$(system_id "$DATA")" ]; then replica_stop; fi
  if ! replica_exists || [ ! -f "$REPLICA_PORT_FILE" ]; then replica_build; fi
  touch "$REPLICA_LOG"
  [ "$(id -u)" = "0" ] && chown postgres:postgres "$REPLICA_LOG"
  if ! replica_running && ! replica_start; then
    log "the replica did not start (see $REPLICA_LOG): making a fresh one"
    replica_build
    replica_start
  fi
  for _ in $(seq 1 40); do
    [ "$(primary_sql "select count(*) from pg_replication_slots s join pg_stat_replication r on r.pid = s.active_pid where s.slot_name = '$REPLICA_SLOT' and r.state = 'streaming'")" != 0 ] && return 0
    sleep 0.25
  done
  log "the replica runs on 127.0.0.1:$(replica_port) but does not stream yet (see $REPLICA_LOG)"
}

# sessions on the cluster other than this script's own query (the backends of a client that just
# exited take a moment to go: asked a few times)
other_sessions() {
  local n=0
  for _ in 1 2 3 4 5; do
    n="$("$BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atqc \
      "select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()" postgres 2>/dev/null || echo 0)"
    [ "$n" = 0 ] && break
    sleep 0.4
  done
  echo "$n"
}

# the leases of `with` commands still running, this one's excepted
other_leases() {
  local n=0 f
  for f in "$LEASES"/*; do
    [ -e "$f" ] || continue
    [ "$(basename "$f")" = "$$" ] && continue
    if kill -0 "$(basename "$f")" 2>/dev/null; then n=$((n + 1)); else rm -f "$f"; fi
  done
  echo "$n"
}

with_cluster() {
  [ $# -gt 0 ] || { echo "usage: $0 with COMMAND [ARGS…]" >&2; exit 2; }
  mkdir -p "$ROOT/.data" "$LEASES"
  exec 9>"$LOCK"
  flock 9
  if ! { [ -f "$DATA/PG_VERSION" ] && running; }; then touch "$STARTED_BY_WITH"; fi
  ensure
  : >"$LEASES/$$"
  flock -u 9
  export DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME"
  # the command runs in the background so that this script can pass SIGTERM/SIGHUP on to it (and
  # then stop the cluster); Ctrl-C's SIGINT reaches the command directly (same process group)
  local child rc=0
  "$@" &
  child=$!
  # SIGINT is ignored here, not trapped: a trapped one cut `wait` short, and when the command ended in
  # that instant bash had already reaped it and the second `wait` below returned -1, so Ctrl-C of a
  # command that exited 0 made this script exit 255 (17 in 300 tries of the newcomer test's Ctrl-C;
  # 0 in 300 ignored). The command started before this line keeps its own SIGINT.
  trap '' INT
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM HUP
  # wait at least once: a command that ended before the first check (sh -c 'exit 3' on a busy
  # machine) still has its status kept by bash, and a loop that tested kill -0 first lost it (0)
  while :; do
    rc=0
    wait "$child" || rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  # a TERM or HUP passed on cuts `wait` short (status > 128); when the command ended meanwhile, bash
  # has kept its status, which one more `wait` reports
  if [ "$rc" -gt 128 ]; then
    local own=0
    wait "$child" 2>/dev/null || own=$?
    # 127 or -1: the status was the one reported already (a TERM or HUP passed on cut `wait` short)
    if [ "$own" -ge 0 ] && [ "$own" -le 255 ] && [ "$own" -ne 127 ]; then rc=$own; fi
  fi
  trap - INT TERM HUP
  flock 9
  rm -f "$LEASES/$$"
  if [ -f "$STARTED_BY_WITH" ]; then
    local leases sessions
    leases="$(other_leases)"
    sessions="$(other_sessions)"
    if [ "$leases" = 0 ] && [ "$sessions" = 0 ]; then
      stop
    elif [ "$leases" = 0 ]; then
      log "left running on 127.0.0.1:$PGPORT: $sessions other session(s) still connected; make db-stop stops it"
    fi
  fi
  flock -u 9
  return "$rc"
}

# `replica` and `replica-stop` hold the lock `with` takes: a standby is never copied from a cluster
# that a `with` ending at that moment stops
locked() {
  mkdir -p "$ROOT/.data"
  exec 9>"$LOCK"
  flock 9
  "$@"
  flock -u 9
}

case "${1:-ensure}" in
  ensure) ensure; echo "postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME" ;;
  install) install_packages ;;
  with) shift; with_cluster "$@" ;;
  stop) stop ;;
  restart) as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -m fast -w -o "-p $PGPORT" restart >/dev/null ;;
  status)
    if [ -f "$DATA/PG_VERSION" ] && running; then echo "running on $PGPORT"; else echo "stopped"; fi
    if replica_running; then echo "replica running on $(replica_port)"; elif replica_exists; then echo "replica stopped"; fi ;;
  url) echo "postgres://postgres@127.0.0.1:$PGPORT/$DB_NAME" ;;
  replica) locked replica; echo "postgres://postgres@127.0.0.1:$(replica_port)/$DB_NAME" ;;
  replica-stop) locked replica_stop ;;
  *) echo "usage: $0 ensure|install|with COMMAND…|stop|restart|status|url|replica|replica-stop" >&2; exit 2 ;;
esac
