#!/usr/bin/env bash
# The embedded MQTT 5 broker: a project-local Mosquitto under .data/mqtt on its own port (18830 or
# the next free one), from Debian's package (installed when missing), with its own identities and ACL
# (the dynamic-security plugin's file). Nothing here runs when MQTT_URL is set: the caller's broker
# is the broker.
#
#   scripts/mqtt.sh install        install Mosquitto (and its clients) from Debian's packages if missing
#   scripts/mqtt.sh init DIR       a broker's files in DIR (config, dynamic-security file, the platform's
#                                  password) unless there; prints its port (the tests start their own
#                                  brokers this way: test/support/mqtt.ts)
#   scripts/mqtt.sh ensure         install, init .data/mqtt, start the broker if stopped; prints its URL
#   scripts/mqtt.sh with CMD…      ensure, run CMD with MQTT_URL, MQTT_USERNAME, MQTT_PASSWORD_FILE and
#                                  MQTT_BROKER_DIR set (and the demo fleet's DEMO_FLEET_MQTT_USERNAME,
#                                  DEMO_FLEET_MQTT_PASSWORD_FILE), then stop the broker when this call
#                                  started it and no other `with` still runs: what `make run` uses
#   scripts/mqtt.sh sync           the embedded broker's identities from the database (scripts/ops.sh:
#                                  DATABASE_URL, else the embedded cluster): the broker is stopped when
#                                  it runs, its file rewritten (ops devices sync --file), and started
#   scripts/mqtt.sh stop           stop the broker (`make db-stop` stops it too)
#   scripts/mqtt.sh status | url   whether it runs; its URL
#
# Identities and ACL: Mosquitto's dynamic-security plugin (DIR/dynamic-security.json), not the
# password and ACL files. Why (docs/vehicle-identity.md has the figures):
#   - the ACL file grants every SUBSCRIBE and checks read access only on delivery, so a vehicle could
#     join the ingest's shared group ($share/ingest/…) and the reports the group handed to it were
#     dropped, lost to the platform (test/vehicle-broker.test.ts found it). The plugin checks each
#     SUBSCRIBE against the subscriber's roles, `$share/…` filters included: refused with reason 135;
#   - a password file changes only by a SIGHUP, which rereads it (0.25 s for 100,000 vehicles) and
#     checks the password of every connected client again (about 36 µs each: 9 s with 250,000
#     connected, the broker stalled); the plugin changes one identity per control command and
#     disconnects only that one.
# Costs of the plugin on Mosquitto 2.0: its ACL topics are literal (no %u before 2.1), so each
# vehicle has a role of its own (`vehicle/{id}`, three publish ACLs, one subscription, one
# delivery; one shared role makes the file load quadratically); the file of 100,000 vehicles loads in
# 1.4 s into 850 MB (250,000: about 4 s, 2.1 GB); every control command rewrites the whole file
# (1.2 s at 100,000), so bulk provisioning writes the file before a start (`sync`), and the ops CLI
# changes one identity at a time on a running broker. A publish costs a hash lookup and at most three
# topic matches, a vehicle's or a bridge's alike.
#
# DIR/dynamic-security.json starts with deny-by-default, the platform's identity (user `platform`,
# its password in DIR/platform-secret, mode 0600), the bridges' role, and make run's demo fleet (user
# `demo-fleet`, a bridge: ops/sim/mqtt-fleet.ts speaks for every demo vehicle with it; its password in
# DIR/demo-fleet-secret; not a device of the database, so `ops devices sync` leaves it, as it leaves
# the platform); vehicles and bridges come
# from the database (`ops devices`, through the plugin's control API as the platform, or into the file
# by `scripts/mqtt.sh sync`) and, in tests, from test/support/mqtt.ts.
#
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/.data/mqtt"
LEASES="$ROOT/.data/mqtt-leases"
STARTED_BY_WITH="$ROOT/.data/mqtt-started-by-with"
LOCK="$ROOT/.data/mqtt.lock"

log() { echo "[mqtt] $*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

install_packages() {
  local need=()
  command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
  command -v mosquitto_pub >/dev/null 2>&1 || need+=(mosquitto-clients)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]} from Debian packages"
    local SUDO=""
    [ "$(id -u)" = "0" ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

MOSQUITTO="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
# Debian's package installs the plugin beside libmosquitto
DYNSEC="$(ls /usr/lib/*/mosquitto_dynamic_security.so 2>/dev/null | head -n 1 || true)"

# init DIR [PORT]: the broker's files, once; the port it keeps is in DIR/port
init() {
  local dir="$1" port
  mkdir -p "$dir"
  # a broker made before the dynamic-security plugin (password and ACL files) is made again
  if [ -f "$dir/port" ] && [ ! -f "$dir/dynamic-security.json" ]; then rm -f "$dir"/port "$dir"/passwd* "$dir"/acl* "$dir"/mosquitto.db; fi
  if [ -f "$dir/port" ]; then cat "$dir/port"; return 0; fi
  port="${2:-${EMBEDDED_MQTT_PORT:-18830}}"
  while ! port_free "$port"; do port=$((port + 1)); done
  umask 077
  head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$dir/platform-secret"
  head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$dir/demo-fleet-secret"
  # the identities' hashes, Mosquitto's PBKDF2-SHA512 (mosquitto_passwd: platform:$7$101$salt$key)
  local line salt key fleet_salt fleet_key
  mosquitto_passwd -c -b "$dir/.platform-hash" platform "$(cat "$dir/platform-secret")"
  line="$(cat "$dir/.platform-hash")"
  salt="$(echo "$line" | cut -d'$' -f4)"
  key="$(echo "$line" | cut -d'$' -f5)"
  mosquitto_passwd -c -b "$dir/.platform-hash" demo-fleet "$(cat "$dir/demo-fleet-secret")"
  line="$(cat "$dir/.platform-hash")"
  rm -f "$dir/.platform-hash"
  fleet_salt="$(echo "$line" | cut -d'$' -f4)"
  fleet_key="$(echo "$line" | cut -d'$' -f5)"
  # The dynamic-security plugin's file: deny by default, the platform's role, the bridges' role.
  # Vehicles and bridges are added by the ops CLI (ops devices, which writes this file from the
  # database before a start and sends control commands to a running broker) and by the tests
  # (test/support/mqtt.ts); the plugin rewrites the file after every control command.
  cat >"$dir/dynamic-security.json" <<EOF
{
  "defaultACLAccess": { "publishClientSend": false, "publishClientReceive": false, "subscribe": false, "unsubscribe": true },
  "clients": [
    { "username": "platform", "textname": "the platform's service identity", "salt": "$salt", "password": "$key", "iterations": 101,
      "roles": [{ "rolename": "platform" }] },
    { "username": "demo-fleet", "textname": "make run's simulated fleet (ops/sim/mqtt-fleet.ts): a bridge for every demo vehicle", "salt": "$fleet_salt", "password": "$fleet_key", "iterations": 101,
      "roles": [{ "rolename": "bridge" }] }
  ],
  "groups": [],
  "roles": [
    { "rolename": "platform", "textdescription": "commands every vehicle, hears every report and reply, ingests through \$share/ingest/, administers the identities",
      "acls": [
        { "acltype": "publishClientSend", "topic": "vehicles/#", "allow": true },
        { "acltype": "publishClientReceive", "topic": "vehicles/#", "allow": true },
        { "acltype": "subscribePattern", "topic": "vehicles/#", "allow": true },
        { "acltype": "subscribePattern", "topic": "\$share/ingest/vehicles/#", "allow": true },
        { "acltype": "publishClientSend", "topic": "\$CONTROL/dynamic-security/v1", "allow": true },
        { "acltype": "subscribeLiteral", "topic": "\$CONTROL/dynamic-security/v1/response", "allow": true },
        { "acltype": "publishClientReceive", "topic": "\$CONTROL/dynamic-security/v1/response", "allow": true }
      ] },
    { "rolename": "bridge", "textdescription": "a vendor bridge: speaks for any vehicle with three wildcard ACLs (docs/vehicle-identity.md)",
      "acls": [
        { "acltype": "publishClientSend", "topic": "vehicles/+/telemetry", "allow": true },
        { "acltype": "publishClientSend", "topic": "vehicles/+/state", "allow": true },
        { "acltype": "publishClientSend", "topic": "vehicles/+/replies/+", "allow": true },
        { "acltype": "subscribeLiteral", "topic": "vehicles/+/commands", "allow": true },
        { "acltype": "publishClientReceive", "topic": "vehicles/+/commands", "allow": true }
      ] }
  ]
}
EOF
  cat >"$dir/mosquitto.conf" <<EOF
# A project-local broker (scripts/mqtt.sh): loopback only, every client authenticated. It runs as the
# user who started it (started as root, Mosquitto would switch to the system user mosquitto, who
# cannot read this folder's files).
user $(id -un)
per_listener_settings false
listener $port 127.0.0.1
allow_anonymous false
plugin $DYNSEC
plugin_opt_config_file $dir/dynamic-security.json
# sessions of the ingest (clean start off) keep what they have not acknowledged across a restart
persistence true
persistence_location $dir/
autosave_interval 30
# a shared subscription's member may fall behind for seconds: queue, never drop, QoS 1 messages
max_queued_messages 200000
max_queued_bytes 0
max_inflight_messages 0
set_tcp_nodelay true
pid_file $dir/mosquitto.pid
log_dest file $dir/mosquitto.log
log_type error
log_type warning
log_type notice
connection_messages false
EOF
  echo "$port" >"$dir/port"
  echo "$port"
}

running() { [ -f "$DIR/mosquitto.pid" ] && kill -0 "$(cat "$DIR/mosquitto.pid")" 2>/dev/null; }

start() {
  local port
  port="$(cat "$DIR/port")"
  if ! port_free "$port" && ! running; then
    # another server took the port since: move to the next free one
    while ! port_free "$port"; do port=$((port + 1)); done
    sed -i "s/^listener [0-9]* /listener $port /" "$DIR/mosquitto.conf"
    echo "$port" >"$DIR/port"
  fi
  log "starting on 127.0.0.1:$port"
  rm -f "$DIR/mosquitto.pid"
  "$MOSQUITTO" -c "$DIR/mosquitto.conf" -d
  for _ in $(seq 1 50); do
    port_free "$port" || return 0
    sleep 0.1
  done
  log "the broker did not start (see $DIR/mosquitto.log)"
  exit 1
}

ensure() {
  install_packages
  init "$DIR" >/dev/null
  running || start
}

halt() {
  if running; then
    local pid
    pid="$(cat "$DIR/mosquitto.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    log "stopped"
  fi
}

stop() {
  halt
  rm -f "$STARTED_BY_WITH"
}

# the plugin reads its file only when it starts, and rewrites it after every control command: the
# file is written while the broker is down
sync_from_db() {
  install_packages
  init "$DIR" >/dev/null
  local was=0
  if running; then was=1; halt; fi
  MQTT_URL="" "$ROOT/scripts/ops.sh" devices sync --file "$DIR/dynamic-security.json"
  if [ "$was" = 1 ]; then start; fi
}

url() { echo "mqtt://127.0.0.1:$(cat "$DIR/port")"; }

other_leases() {
  local n=0 f
  for f in "$LEASES"/*; do
    [ -e "$f" ] || continue
    [ "$(basename "$f")" = "$$" ] && continue
    if kill -0 "$(basename "$f")" 2>/dev/null; then n=$((n + 1)); else rm -f "$f"; fi
  done
  echo "$n"
}

with_broker() {
  [ $# -gt 0 ] || { echo "usage: $0 with COMMAND [ARGS…]" >&2; exit 2; }
  mkdir -p "$ROOT/.data" "$LEASES"
  exec 8>"$LOCK"
  flock 8
  if ! running; then touch "$STARTED_BY_WITH"; fi
  ensure
  : >"$LEASES/$$"
  flock -u 8
  export MQTT_URL MQTT_USERNAME=platform MQTT_PASSWORD_FILE="$DIR/platform-secret" MQTT_BROKER_DIR="$DIR"
  export DEMO_FLEET_MQTT_USERNAME=demo-fleet DEMO_FLEET_MQTT_PASSWORD_FILE="$DIR/demo-fleet-secret"
  MQTT_URL="$(url)"
  # as scripts/pg.sh's `with`: the command in the background, SIGTERM/SIGHUP passed on
  local child rc=0
  "$@" &
  child=$!
  # SIGINT is ignored here, not trapped: a trapped one cut `wait` short, and when the command ended in
  # that instant bash had already reaped it and the second `wait` below returned -1, so Ctrl-C of a
  # command that exited 0 made this script exit 255 (17 in 300 tries of the newcomer test's Ctrl-C;
  # 0 in 300 ignored). The command started before this line keeps its own SIGINT.
  trap '' INT
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM HUP
  while :; do
    rc=0
    wait "$child" || rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  if [ "$rc" -gt 128 ]; then
    local own=0
    wait "$child" 2>/dev/null || own=$?
    # 127 or -1: the status was the one reported already (a TERM or HUP passed on cut `wait` short)
    if [ "$own" -ge 0 ] && [ "$own" -le 255 ] && [ "$own" -ne 127 ]; then rc=$own; fi
  fi
  trap - INT TERM HUP
  flock 8
  rm -f "$LEASES/$$"
  if [ -f "$STARTED_BY_WITH" ] && [ "$(other_leases)" = 0 ]; then stop; fi
  flock -u 8
  return "$rc"
}

case "${1:-ensure}" in
  install) install_packages ;;
  init) shift; [ $# -ge 1 ] || { echo "usage: $0 init DIR [PORT]" >&2; exit 2; }; install_packages; init "$@" ;;
  ensure) ensure; url ;;
  with) shift; with_broker "$@" ;;
  stop) stop ;;
  sync) sync_from_db ;;
  status) if running; then echo "running on $(cat "$DIR/port")"; else echo "stopped"; fi ;;
  url) url ;;
  *) echo "usage: $0 install|init DIR [PORT]|ensure|with COMMAND…|sync|stop|status|url" >&2; exit 2 ;;
esac
