#!/usr/bin/env bash
# cairn's quick start, the README's first command:
#
#   bash firmware/quickstart.sh        (as root on a fresh Debian bookworm machine)
#
# Installs the dependencies, builds cairnd (the `host` preset, RelWithDebInfo,
# in build/host), starts it on its embedded defaults with a fresh data
# directory, a pseudo-terminal as its serial console and its HTTP API on
# loopback, and uses both (firmware/quickstart_console.py): demo readings for
# three devices written over HTTP in line protocol as InfluxDB clients do,
# latest and range queries over HTTP, then devices, latest, range and agg at
# the serial console. Finally cairnd is stopped with SIGTERM and its exit
# status reported.
#
# Can be run again at any time: the data directory is emptied first and the
# build is incremental. Every step has a time limit; the script exits
# non-zero as soon as one fails.
#
# Environment: CAIRN_QUICKSTART_DIR  data directory (default /tmp/cairn-quickstart)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA_DIR=${CAIRN_QUICKSTART_DIR:-/tmp/cairn-quickstart}
LOG=${DATA_DIR}.log
CAIRND=$ROOT/build/host/firmware/cairnd

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

[ "$(id -u)" -eq 0 ] || fail "run as root: the first step installs packages with apt-get"
cd "$ROOT"

run_step 90m "installing dependencies (toolchains/install-deps.sh)" bash toolchains/install-deps.sh
run_step 10m "configuring the host preset" cmake --preset host
run_step 90m "building cairnd" cmake --build --preset host --target cairnd
[ -x "$CAIRND" ] || fail "the build did not produce $CAIRND"

step "starting cairnd (data in $DATA_DIR, log in $LOG), writing over HTTP, querying over HTTP and serial"
status=0
timeout --kill-after=10 15m python3 "$ROOT/firmware/quickstart_console.py" \
  --cairnd "$CAIRND" --data-dir "$DATA_DIR" --log "$LOG" || status=$?

step "cairnd's log"
cat "$LOG" 2>/dev/null || true

if [ "$status" -ne 0 ]; then
  [ "$status" -eq 124 ] && fail "the console session did not finish within 15m"
  fail "the console session failed (exit status $status); see the messages above"
fi

cat <<EOF

==> done
cairnd answered every request and command and stopped cleanly. To explore on your own,
start it again (the admin token shown above stays valid for this data directory):

  $CAIRND --data-dir $DATA_DIR --http-plain --serial /dev/ttyUSB0   # any tty; then type help
  curl -H "Authorization: Token \$TOKEN" http://127.0.0.1:8086/v1/tables

The data written above is still in $DATA_DIR (emptied by the next quick start).
EOF
