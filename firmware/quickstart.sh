#!/usr/bin/env bash
# cairn's quick start, the README's first command:
#
#   bash firmware/quickstart.sh        (as root on a fresh Debian bookworm machine)
#
# Installs the dependencies, builds cairnd and cairn-ingest (the `host`
# preset, RelWithDebInfo, in build/host), then runs a gateway and its cloud
# side on this machine (firmware/quickstart_console.py):
#
# - a broker: a mosquitto of its own on a free loopback port, or the one
#   given in CAIRN_QUICKSTART_BROKER;
# - cairn-ingest, the cloud ingest service, storing into a SQLite file;
# - cairnd with a fresh data directory, a pseudo-terminal as its serial
#   console, its HTTP API on loopback and sync to the broker, under a new
#   gateway id and HMAC key (the key in cairnd's key file and in
#   cairn-ingest's keys file).
#
# It writes demo readings for three devices over HTTP in line protocol as
# InfluxDB clients do, queries them over HTTP (latest, range) and at the
# serial console (devices, latest, range, agg), waits until cairn-ingest has
# confirmed every reading, types `sync`, and compares the rows of the cloud
# database with the readings cairnd holds. Finally it stops everything it
# started (cairnd with SIGTERM, reporting each exit status), also when a step
# fails or the script is interrupted.
#
# Can be run again at any time: the quick-start directory is emptied first
# and the build is incremental. Every step has a time limit; the script exits
# non-zero as soon as one fails.
#
# Environment:
#   CAIRN_QUICKSTART_DIR     quick-start directory (default /tmp/cairn-quickstart):
#                            data/ (cairnd's data), cloud.db, keys, logs
#   CAIRN_QUICKSTART_BROKER  use this MQTT broker, tcp://HOST:PORT (anonymous
#                            access), instead of starting one
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICKSTART_DIR=${CAIRN_QUICKSTART_DIR:-/tmp/cairn-quickstart}
QUICKSTART_DIR=${QUICKSTART_DIR%/}
BROKER=${CAIRN_QUICKSTART_BROKER:-}
DATA_DIR=$QUICKSTART_DIR/data
MARKER=$QUICKSTART_DIR/.cairn-quickstart
CAIRND=$ROOT/build/host/firmware/cairnd
CAIRN_INGEST=$ROOT/build/host/cloud/ingest/cairn-ingest

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'quickstart.sh: %s\n' "$*" >&2; exit 1; }

# Runs a step under a time limit and names it if it fails.
run_step() {
  local limit=$1 what=$2
  shift 2
  step "$what"
  local status=0
  timeout --kill-after=10 "$limit" "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then fail "$what: no result within $limit"; fi
  [ "$status" -eq 0 ] || fail "$what failed (exit status $status)"
}

# The console session stops what it started; this catches what is left when
# it was killed: every process named in a pid file of the quick-start
# directory that still runs with that directory on its command line (a
# reused process id does not).
stop_leftovers() {
  local pid_file pid
  for pid_file in "$QUICKSTART_DIR"/*.pid; do
    [ -f "$pid_file" ] || continue
    pid=$(cat "$pid_file" 2>/dev/null || true)
    if [[ "$pid" =~ ^[0-9]+$ ]] && runs_from_quickstart_dir "$pid"; then
      printf 'quickstart.sh: stopping the leftover %s (process %s)\n' \
        "$(basename "$pid_file" .pid)" "$pid" >&2
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do
        runs_from_quickstart_dir "$pid" || break
        sleep 0.1
      done
      if runs_from_quickstart_dir "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$pid_file"
  done
}

runs_from_quickstart_dir() {
  tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "$QUICKSTART_DIR/"
}

# Empties the quick-start directory, refusing one that a quick start did not
# make (an older quick start used it as cairnd's data directory).
fresh_quickstart_dir() {
  if [ -e "$QUICKSTART_DIR" ] && [ ! -e "$MARKER" ] && [ ! -e "$QUICKSTART_DIR/catalog.db" ] &&
     [ -n "$(ls -A "$QUICKSTART_DIR" 2>/dev/null)" ]; then
    fail "$QUICKSTART_DIR is not a quick start's directory; move it away or set CAIRN_QUICKSTART_DIR"
  fi
  stop_leftovers
  rm -rf "$QUICKSTART_DIR"
  mkdir -p "$QUICKSTART_DIR"
  chmod 700 "$QUICKSTART_DIR"
  touch "$MARKER"
}

# `n` random bytes from /dev/urandom as lowercase hex.
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

[ "$(id -u)" -eq 0 ] || fail "run as root: the first step installs packages with apt-get"
cd "$ROOT"

run_step 90m "installing dependencies (toolchains/install-deps.sh)" bash toolchains/install-deps.sh
run_step 10m "configuring the host preset" cmake --preset host
run_step 90m "building cairnd and cairn-ingest" cmake --build --preset host --target cairnd cairn-ingest
[ -x "$CAIRND" ] || fail "the build did not produce $CAIRND"
[ -x "$CAIRN_INGEST" ] || fail "the build did not produce $CAIRN_INGEST"

step "a new gateway id and HMAC key (from /dev/urandom) for cairnd and cairn-ingest"
fresh_quickstart_dir
trap stop_leftovers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
GATEWAY_ID=quickstart-$(random_hex 4)
KEY_HEX=$(random_hex 32)
KEY_FILE=$QUICKSTART_DIR/gateway.key
KEYS_FILE=$QUICKSTART_DIR/gateway-keys
(
  umask 077
  printf '%s\n' "$KEY_HEX" >"$KEY_FILE"
  printf '# <gateway_id> <key as hex>, one gateway per line\n%s %s\n' "$GATEWAY_ID" "$KEY_HEX" >"$KEYS_FILE"
)
echo "gateway $GATEWAY_ID; its key in $KEY_FILE (cairnd --sync-key-file) and $KEYS_FILE (cairn-ingest --keys)"

step "starting the broker, cairn-ingest and cairnd (in $QUICKSTART_DIR); writing, querying, syncing"
status=0
# --foreground: the session stays in the terminal's process group, so that
# Ctrl-C reaches it; it stops its children itself (SIGTERM from the time
# limit included) and stop_leftovers catches what survives a SIGKILL.
timeout --foreground --kill-after=10 15m python3 "$ROOT/firmware/quickstart_console.py" \
  --cairnd "$CAIRND" --cairn-ingest "$CAIRN_INGEST" --dir "$QUICKSTART_DIR" \
  --gateway-id "$GATEWAY_ID" --key-file "$KEY_FILE" --keys-file "$KEYS_FILE" \
  ${BROKER:+--broker "$BROKER"} || status=$?

step "cairnd's log"
cat "$QUICKSTART_DIR/cairnd.log" 2>/dev/null || true
step "cairn-ingest's log"
cat "$QUICKSTART_DIR/cairn-ingest.log" 2>/dev/null || true

if [ "$status" -ne 0 ]; then
  if [ -s "$QUICKSTART_DIR/mosquitto.log" ]; then
    step "mosquitto's log"
    cat "$QUICKSTART_DIR/mosquitto.log"
  fi
  [ "$status" -eq 124 ] && fail "the console session did not finish within 15m"
  fail "the console session failed (exit status $status); see the messages above"
fi

cat <<EOF

==> done
cairnd answered every request and command, cairn-ingest stored every reading in the cloud
database and everything stopped cleanly. To explore on your own, start cairnd again (the
admin token shown above stays valid for this data directory):

  $CAIRND --data-dir $DATA_DIR --http-plain --serial /dev/ttyUSB0   # any tty; then type help
  curl -H "Authorization: Token \$TOKEN" http://127.0.0.1:8086/v1/tables

The data written above is still in $DATA_DIR and the cloud side's copy in
$QUICKSTART_DIR/cloud.db (sqlite3 $QUICKSTART_DIR/cloud.db 'SELECT * FROM cairn_readings LIMIT 5';
tables in cloud/ingest/ingest_schema.md); the next quick start empties $QUICKSTART_DIR.
EOF
