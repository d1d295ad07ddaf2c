#!/usr/bin/env python3
"""System test: sync from inside the emulated gateway to the cloud side.

    python3 tests/system/sync_test.py --arch arm64 --ingest BUILD/cloud/ingest/cairn-ingest IMAGE_DIR

The cloud runs on this machine's loopback: mosquitto, cairn-ingest and
PostgreSQL (tests/system/cloud_peers.py). The card's cairn.toml (edited on
the boot partition, as a user would from a PC) points the gateway's sync at
the broker through QEMU's user-mode network (10.0.2.2), with its key file
beside it. Readings written to the gateway over HTTP must each arrive in
PostgreSQL exactly once, with their values, and the shell's `sync` must
show nothing left to send. A power cut halfway through must not change
that: after the next boot the rest arrives, nothing twice.
"""

import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cloud_peers import Ingest, Mosquitto, Postgres  # noqa: E402
from gateway import BootFiles, Gateway, GatewayError, run_test  # noqa: E402
from power_cut_test import http, wait_http  # noqa: E402

GATEWAY_ID = "gw-system"
PER_ROUND = 1500


def configure_card(disk, work, broker_port, key_hex):
    toml = os.path.join(work, "cairn.toml")
    card = "%s@@1M" % disk
    subprocess.run(["mcopy", "-n", "-i", card, "::cairn.toml", toml], check=True)
    with open(toml) as f:
        text = f.read()
    head, _, rest = text.partition("\n[sync]\n")
    sync, _, tail = rest.partition("\n[")
    sync = re.sub(r"^# broker =$", "broker = 'tcp://10.0.2.2:%d'" % broker_port, sync, flags=re.M)
    sync = re.sub(r"^# gateway_id =$", "gateway_id = '%s'" % GATEWAY_ID, sync, flags=re.M)
    sync = re.sub(r"^# key_file =$", "key_file = '/boot/sync.key'", sync, flags=re.M)
    sync = re.sub(r"^# live_interval_ms = \d+$", "live_interval_ms = 200", sync, flags=re.M)
    text = head + "\n[sync]\n" + sync + "\n[" + tail
    with open(toml, "w") as f:
        f.write(text)
    key = os.path.join(work, "sync.key")
    with open(key, "w") as f:
        f.write(key_hex + "\n")
    subprocess.run(["mcopy", "-o", "-i", card, toml, key, "::"], check=True)


def write_round(gateway, token, first, base_s):
    body = "".join("flow,device=sync-dev,line=l%d v=%di %d\n" % (v % 3, v, base_s + v)
                   for v in range(first, first + PER_ROUND)).encode()
    status, _ = http(gateway, token, "POST", "/write?db=sensors&precision=s", body, timeout=60)
    if status != 204:
        raise GatewayError("write answered %d" % status)
    return list(range(first, first + PER_ROUND))


def cloud_values(postgres):
    rows = postgres.query("SELECT (fields->'v'->>'int64')::bigint FROM cairn_readings WHERE device_id = 'sync-dev'")
    return [int(v) for v in rows.split()] if rows else []


def wait_synced(postgres, expected, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = cloud_values(postgres)
        except GatewayError:
            got = []  # cairn-ingest has not made its tables yet
        if len(got) >= len(expected) or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def sync_through_a_power_cut(boot, disk, postgres, base_s):
    """Two rounds of readings, the power cut during the second's sync."""
    acknowledged = []
    with Gateway(boot, disk).start() as gateway:
        gateway.wait_ready(120)
        token = gateway.admin_token()
        wait_http(gateway, token)
        acknowledged += write_round(gateway, token, 1, base_s)
        got = wait_synced(postgres, acknowledged, 120)
        if sorted(got) != acknowledged:
            raise GatewayError("round 1: %d acknowledged, %d in PostgreSQL (%d distinct)"
                               % (len(acknowledged), len(got), len(set(got))))
        acknowledged += write_round(gateway, token, PER_ROUND + 1, base_s)
        time.sleep(0.3)
        gateway.kill()  # power cut while the second round syncs
    with Gateway(boot, disk).start() as gateway:
        gateway.wait_ready(120)
        got = wait_synced(postgres, acknowledged, 180)
        missing = len(set(acknowledged) - set(got))
        twice = len(got) - len(set(got))
        if missing or twice or sorted(got) != acknowledged:
            raise GatewayError("after the power cut: %d acknowledged, %d in PostgreSQL, %d missing, %d twice"
                               % (len(acknowledged), len(got), missing, twice))
        # The shell's view once the agent is back: nothing left to send.
        deadline = time.monotonic() + 60
        while True:
            answer = gateway.command("sync")
            unsynced = [int(line.split()[2]) for line in answer.splitlines() if line.startswith("sensors ")]
            if "broker: connected" in answer and len(unsynced) == 3 and not any(unsynced):
                break
            if time.monotonic() > deadline:
                raise GatewayError("the shell's sync shows readings left to send:\n" + answer)
            time.sleep(1)
    return acknowledged, got


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="arm64", choices=["arm64", "armhf"])
    parser.add_argument("--ingest", required=True)
    parser.add_argument("image_dir")
    args = parser.parse_args()
    boot = BootFiles(args.image_dir, args.arch)
    key_hex = secrets.token_hex(32)
    base_s = int(time.time()) - 7200
    with tempfile.TemporaryDirectory(prefix="cairn-sync-") as work, Mosquitto(work) as broker, \
            Postgres() as postgres, Ingest(args.ingest, broker.port, postgres, GATEWAY_ID, key_hex, work) as ingest:
        disk = os.path.join(work, "card.img")
        shutil.copy(boot.image, disk)
        configure_card(disk, work, broker.port, key_hex)
        try:
            acknowledged, got = sync_through_a_power_cut(boot, disk, postgres, base_s)
        except GatewayError as error:
            raise GatewayError("%s\ncairn-ingest's log ends:\n%s" % (error, ingest.log_tail()))
        batches = postgres.query("SELECT count(*) FROM cairn_batches WHERE gateway_id = '%s'" % GATEWAY_ID)
    print("%s: %d readings written over HTTP, a power cut during sync; in PostgreSQL: %d, each once "
          "(%s batches, through mosquitto and cairn-ingest on the host)" % (args.arch, len(acknowledged),
                                                                         len(got), batches))
    return 0


if __name__ == "__main__":
    run_test(main)
