#!/usr/bin/env bash
# cairn's soak run (by hand, not in CI or tests/run-all.sh):
#
#   SOAK_MINUTES=60 bash tests/soak/soak.sh [build-dir]      (default 240 minutes, build/host)
#
# Uses the cairnd and cairn-ingest already built in build-dir
# (cmake --build build/host --target cairnd cairn-ingest) and mosquitto, and
# runs on loopback only: a mosquitto of its own, cairn-ingest storing into
# a SQLite file (so receipts flow back), cairnd with a fresh data directory
# and sync to that broker. For SOAK_MINUTES it writes line protocol over
# HTTP (~2 000 readings/s, 20 devices, 4 writers, each counting exactly the
# readings answered 204), queries (range, latest, aggregate: each answer
# checked), stops the broker for 3 minutes every 15 (from minute 8) and
# kills cairnd with SIGKILL every 10 minutes (from minute 5), restarting
# it at once. Then it waits (at most 10 minutes) for sync to catch up,
# checks every device exactly and stops cairnd with SIGTERM.
#
# Output in SOAK_OUT (default /tmp/cairn-soak-<date>):
#   soak.csv      one row a minute: RSS, open files, threads, readings
#                 acknowledged / stored (read back) / sent / synced (cloud
#                 rows), unsynced, data and log bytes, restarts, broker
#   summary.txt   min/max/last, minutes with loss or duplicates, a table every
#                 5 minutes, text charts (tests/soak/soak_report.py)
#   verdict.json  the exact check per device at the end
#   events.log, cairnd.log, cairn-ingest.log, mosquitto.log, data/, cloud.db
#
# Everything it started is stopped on exit, also on Ctrl-C or SIGTERM.
# SOAK_RATE (readings/s, default 2000) changes the load.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/host}" && pwd)
MINUTES=${SOAK_MINUTES:-240}
RATE=${SOAK_RATE:-2000}
OUT=${SOAK_OUT:-/tmp/cairn-soak-$(date -u +%Y%m%dT%H%M%S)}
CAIRND=$BUILD/firmware/cairnd
CAIRN_INGEST=$BUILD/cloud/ingest/cairn-ingest
MOSQUITTO=$(PATH=$PATH:/usr/sbin:/sbin command -v mosquitto || true)

fail() { printf 'soak.sh: %s\n' "$*" >&2; exit 1; }
[ -x "$CAIRND" ] || fail "no $CAIRND; build it: cmake --build $BUILD --target cairnd cairn-ingest"
[ -x "$CAIRN_INGEST" ] || fail "no $CAIRN_INGEST; build it: cmake --build $BUILD --target cairn-ingest"
[ -n "$MOSQUITTO" ] || fail "mosquitto is not installed (toolchains/install-deps.sh installs it)"
[[ "$MINUTES" =~ ^[0-9]+$ ]] && [ "$MINUTES" -gt 0 ] || fail "SOAK_MINUTES must be a positive number"
[ ! -e "$OUT" ] || [ -z "$(ls -A "$OUT")" ] || fail "$OUT is not empty; choose another SOAK_OUT"
mkdir -p "$OUT"

echo "soak: $MINUTES minutes, $RATE readings/s; output in $OUT"
status=0
# soak.py stops its children in its own clean-up; the time limit covers the
# run, the final wait for sync and the checks.
timeout --kill-after=60 "$(( MINUTES + 30 ))m" python3 "$ROOT/tests/soak/soak.py" \
  --cairnd "$CAIRND" --cairn-ingest "$CAIRN_INGEST" --mosquitto "$MOSQUITTO" --out "$OUT" \
  --minutes "$MINUTES" --rate "$RATE" || status=$?
[ -s "$OUT/soak.csv" ] && python3 "$ROOT/tests/soak/soak_report.py" "$OUT"
[ "$status" -eq 0 ] || fail "the soak run failed (exit status $status); see $OUT/events.log"
