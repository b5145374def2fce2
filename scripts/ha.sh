#!/usr/bin/env bash
# A Postgres HA cluster as operators run one, from Debian's packages, under .data/ha on its own ports:
# etcd (the consensus store), two Patroni nodes (a primary and a synchronous standby of PostgreSQL 15
# + PostGIS) and HAProxy in front, whose read-write port always leads to the primary and whose
# read-only port leads to the standby (docs/ha-cluster.md says why Patroni, and how it is set).
# For tests and benches (`make db-ha`); the embedded single cluster (scripts/pg.sh) stays what
# `make run` and `make test` use for everything else.
#
#   scripts/ha.sh start          install the packages if missing, bootstrap once, start what is stopped,
#                                wait for a primary and a streaming synchronous standby; prints the URLs
#   scripts/ha.sh ready          wait until there is a primary and a synchronous standby (Patroni's /sync)
#   scripts/ha.sh urls           DATABASE_URL=… (read-write port) and DATABASE_REPLICA_URL=… (read-only)
#   scripts/ha.sh status         the members as Patroni sees them (patronictl list)
#   scripts/ha.sh leader         the name of the member holding the leader key
#   scripts/ha.sh kill-primary   SIGKILL of the primary's postmaster (the standby is promoted)
#   scripts/ha.sh freeze-primary SIGSTOP of the primary's whole node (Patroni and every Postgres process:
#                                a paused VM); `thaw` sends SIGCONT to what was frozen
#   scripts/ha.sh stop           stop everything (`make db-ha-stop`); the data stays
#   scripts/ha.sh destroy        stop and remove .data/ha
#
# HA_DIR (default .data/ha) holds everything. HA_BASE_PORT (default 24400: below Linux's ephemeral
# range, so that no listen(0) or outgoing connection takes one of them between the check and the
# bind; 54490 was taken so once) places the ports: etcd +0 (client) and +1 (peer), node N's
# Postgres +10+2N and its Patroni REST API +11+2N, HAProxy read-write +20, read-only +21, stats +22.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# HA_DIR: another cluster beside `make db-ha`'s (test/faults-failover.test.ts keeps its own)
HA="${HA_DIR:-$ROOT/.data/ha}"
BASE="${HA_BASE_PORT:-24400}"
ETCD_PORT=$((BASE + 0))
ETCD_PEER=$((BASE + 1))
RW_PORT=$((BASE + 20))
RO_PORT=$((BASE + 21))
STATS_PORT=$((BASE + 22))
NODES=(node0 node1)
PGVER=15
BIN="/usr/lib/postgresql/$PGVER/bin"
DB_NAME="${HA_DB:-platform}"
SCOPE=platform

log() { echo "[ha] $*" >&2; }
pg_port() { echo $((BASE + 10 + 2 * $1)); }
rest_port() { echo $((BASE + 11 + 2 * $1)); }

as_pg() {
  # Postgres (which Patroni starts) refuses to run as root: the whole cluster runs as postgres then
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_packages() {
  # PostgreSQL and PostGIS as the embedded cluster has them; then what HA adds
  "$ROOT/scripts/pg.sh" install
  local need=()
  command -v patroni >/dev/null || need+=(patroni)
  /usr/bin/python3 -c 'import etcd' 2>/dev/null || need+=(python3-etcd)
  command -v etcd >/dev/null || need+=(etcd-server)
  command -v haproxy >/dev/null || need+=(haproxy)
  # the health checks of start and leader
  command -v curl >/dev/null || need+=(curl)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} from Debian packages (their system services are not used)"
    local SUDO=""
    [ "$(id -u)" = "0" ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Runs a daemon in its own session (Ctrl-C in the caller's terminal does not reach it), as postgres;
# its pid file holds the daemon's own pid (the shell that writes it execs the daemon). As root,
# setpriv changes the user and execs (runuser would stay as the daemon's parent, and stop itself when
# its child is stopped: freeze-primary left it stopped for good, its exited child a zombie).
daemon() {
  local name="$1" program run=()
  program="$(command -v "$2")"
  shift 2
  if pid_alive "$HA/$name.pid"; then return; fi
  [ "$(id -u)" = "0" ] && run=(setpriv --reuid=postgres --regid=postgres --init-groups --reset-env)
  setsid "${run[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$HA/$name.pid" "$program" "$@" >>"$HA/$name.log" 2>&1 </dev/null &
  for _ in $(seq 1 50); do
    [ -s "$HA/$name.pid" ] && return
    sleep 0.05
  done
}

write_configs() {
  mkdir -p "$HA/run"
  local i
  for i in "${!NODES[@]}"; do
    local name="${NODES[$i]}"
    cat >"$HA/$name.yml" <<EOF
scope: $SCOPE
namespace: /platform-ha/
name: $name
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(rest_port "$i")
  connect_address: 127.0.0.1:$(rest_port "$i")
etcd:
  hosts: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    # the leader key lives ttl seconds unless renewed; the loop runs every loop_wait: a dead
    # primary's Patroni is gone within ttl, a crashed Postgres is seen within loop_wait
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    # the standby is promoted at once when the primary's Postgres crashes: it is synchronous, so
    # it has every acknowledged commit, and restarting the old primary in place could take longer
    primary_start_timeout: 0
    # a commit is acknowledged only once the standby has it: no acknowledged write is lost when the
    # primary is, and only a synchronous standby may be promoted
    synchronous_mode: true
    maximum_lag_on_failover: 1048576
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_connections: 300
        max_wal_senders: 10
        max_replication_slots: 10
        synchronous_commit: 'on'
        shared_buffers: 128MB
        jit: 'off'
        hot_standby_feedback: 'on'
        log_min_messages: warning
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$i")
  connect_address: 127.0.0.1:$(pg_port "$i")
  data_dir: $HA/$name
  bin_dir: $BIN
  pgpass: $HA/run/$name.pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '$HA/run'
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
  done
  # HAProxy asks each Patroni which role its node has: OPTIONS /primary answers 200 only on the
  # leader, OPTIONS /replica only on a running standby. A node marked down has its sessions shut, so
  # that no client keeps a connection to a primary that lost its role (a frozen one that comes back).
  # The read-only port leads to a standby, and to the primary while no standby runs (the promoted
  # standby's old primary rejoins some seconds after a failover): reads never stop with a failover.
  local servers=""
  for i in "${!NODES[@]}"; do
    servers+="    server ${NODES[$i]} 127.0.0.1:$(pg_port "$i") maxconn 300 check port $(rest_port "$i")"$'\n'
  done
  cat >"$HA/haproxy.cfg" <<EOF
global
    maxconn 2000

defaults
    mode tcp
    # no second attempt at a node that refused: HAProxy waits a second before one, and a client
    # told at once that there is no primary answers its caller at once (a 503 within 3 s)
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 500ms
    retries 0

listen stats
    mode http
    bind 127.0.0.1:$STATS_PORT
    stats enable
    stats uri /

frontend read_write
    bind 127.0.0.1:$RW_PORT
    default_backend primary

frontend read_only
    bind 127.0.0.1:$RO_PORT
    use_backend standbys if { nbsrv(standbys) ge 1 }
    default_backend primary

backend primary
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
$servers
backend standbys
    balance roundrobin
    option httpchk OPTIONS /replica
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
$servers
EOF
}

rest() { curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$(rest_port "$1")/$2" 2>/dev/null || true; }

leader_index() {
  local i
  for i in "${!NODES[@]}"; do
    if [ "$(rest "$i" primary)" = 200 ]; then
      echo "$i"
      return 0
    fi
  done
  return 1
}

psql_rw() { "$BIN/psql" -h 127.0.0.1 -p "$RW_PORT" -U postgres -Atqc "$1" "${2:-postgres}"; }

start() {
  install_packages
  mkdir -p "$HA"
  [ "$(id -u)" = "0" ] && chown postgres:postgres "$HA"
  for p in "$ETCD_PORT" "$ETCD_PEER" "$RW_PORT" "$RO_PORT" "$STATS_PORT" $(pg_port 0) $(pg_port 1) $(rest_port 0) $(rest_port 1); do
    if ! port_free "$p" && ! pid_alive "$HA/etcd.pid"; then
      log "port $p is taken by another program: set HA_BASE_PORT to another base (default 24400)"
      exit 1
    fi
  done
  write_configs
  [ "$(id -u)" = "0" ] && chown -R postgres:postgres "$HA"
  daemon etcd etcd --name ha-etcd --data-dir "$HA/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "ha-etcd=http://127.0.0.1:$ETCD_PEER" --enable-v2=true
  for _ in $(seq 1 100); do
    curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null && break
    sleep 0.1
  done
  # the first node bootstraps (initdb) and leads; the second then copies it (pg_basebackup)
  daemon node0 patroni "$HA/node0.yml"
  for _ in $(seq 1 120); do
    leader_index >/dev/null && break
    sleep 0.5
  done
  leader_index >/dev/null || {
    log "no primary after 60 s: see $HA/node0.log"
    exit 1
  }
  daemon node1 patroni "$HA/node1.yml"
  daemon haproxy haproxy -db -f "$HA/haproxy.cfg"
  ready
  if ! psql_rw "select 1 from pg_database where datname = '$DB_NAME'" | grep -q 1; then
    psql_rw "create database \"$DB_NAME\""
  fi
  log "primary $(leader_name), synchronous standby streaming; read-write 127.0.0.1:$RW_PORT, read-only 127.0.0.1:$RO_PORT"
  urls
}

# Ready: a primary behind the read-write port and a synchronous standby, as Patroni sees it (its
# /sync key, GET /sync answering 200), not only as Postgres does (pg_stat_replication): Patroni
# promotes only the member its key names, and a primary lost before the key names the standby is
# recovered in place instead (seen: a kill right after a start or a failover kept the old primary).
ready() {
  local i
  for _ in $(seq 1 240); do
    for i in "${!NODES[@]}"; do
      if [ "$(rest "$i" sync)" = 200 ] && psql_rw 'select 1' >/dev/null 2>&1 && "$BIN/pg_isready" -h 127.0.0.1 -p "$RO_PORT" -q; then return 0; fi
    done
    sleep 0.5
  done
  log "no synchronous standby after 120 s: see $HA/node*.log"
  exit 1
}

leader_name() {
  local i
  i="$(leader_index)" || return 1
  echo "${NODES[$i]}"
}

urls() {
  echo "DATABASE_URL=postgres://postgres@127.0.0.1:$RW_PORT/$DB_NAME"
  echo "DATABASE_REPLICA_URL=postgres://postgres@127.0.0.1:$RO_PORT/$DB_NAME"
}

# The postmaster of a node: the first line of its postmaster.pid.
postmaster_pid() { head -1 "$HA/${NODES[$1]}/postmaster.pid"; }

kill_primary() {
  local i
  i="$(leader_index)" || {
    log "no primary"
    exit 1
  }
  kill -KILL "$(postmaster_pid "$i")"
  log "SIGKILL to ${NODES[$i]}'s postmaster"
  echo "${NODES[$i]}"
}

freeze_primary() {
  local i pids
  i="$(leader_index)" || {
    log "no primary"
    exit 1
  }
  # the node's Patroni and every process of its Postgres (the postmaster's children included)
  pids="$(cat "$HA/${NODES[$i]}.pid") $(postmaster_pid "$i") $(pgrep -P "$(postmaster_pid "$i")" | tr '\n' ' ')"
  echo "$pids" >"$HA/frozen"
  # shellcheck disable=SC2086
  kill -STOP $pids
  log "SIGSTOP to ${NODES[$i]} (Patroni and Postgres)"
  echo "${NODES[$i]}"
}

thaw() {
  [ -f "$HA/frozen" ] || return 0
  # shellcheck disable=SC2046
  kill -CONT $(cat "$HA/frozen") 2>/dev/null || true
  rm -f "$HA/frozen"
  log "SIGCONT to what was frozen"
}

stop_one() {
  local name="$1" pid
  pid_alive "$HA/$name.pid" || return 0
  pid="$(cat "$HA/$name.pid")"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$HA/$name.pid"
}

stop() {
  thaw
  stop_one haproxy
  # Patroni stops its Postgres on SIGTERM; the standby first, so the primary does not wait for it
  local i leader
  leader="$(leader_name 2>/dev/null || true)"
  for i in "${!NODES[@]}"; do [ "${NODES[$i]}" != "$leader" ] && stop_one "${NODES[$i]}"; done
  [ -n "$leader" ] && stop_one "$leader"
  # a Postgres left by a Patroni that was killed
  for i in "${!NODES[@]}"; do
    if [ -f "$HA/${NODES[$i]}/postmaster.pid" ]; then as_pg "$BIN/pg_ctl" -D "$HA/${NODES[$i]}" -m immediate stop >/dev/null 2>&1 || true; fi
  done
  stop_one etcd
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  ready) ready ;;
  urls) urls ;;
  status) as_pg patronictl -c "$HA/node0.yml" list ;;
  leader) leader_name ;;
  kill-primary) kill_primary ;;
  freeze-primary) freeze_primary ;;
  thaw) thaw ;;
  stop) if [ -d "$HA" ]; then stop; fi ;;
  destroy)
    if [ -d "$HA" ]; then stop; fi
    rm -rf "$HA"
    ;;
  *)
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
