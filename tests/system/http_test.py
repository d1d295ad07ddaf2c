#!/usr/bin/python3
"""System test: the emulated gateway's HTTP API through QEMU's port forward.

    /usr/bin/python3 tests/system/http_test.py --arch arm64 IMAGE_DIR

(Debian's python3, which has python3-influxdb.) Boots the image on `virt`
and, as a user on the gateway's network would: writes line protocol with
the python3-influxdb client (Basic auth carrying the token, as Telegraf
and Node-RED do), reads it back with curl from /v1, scrapes /metrics, and
checks a wrong token is refused. Then writes 10 000 series and prints
cairnd's resident memory inside the guest (process_resident_memory_bytes).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import BootFiles, Gateway, GatewayError, run_test  # noqa: E402

SERIES = 10000


def curl(gateway, token, path):
    result = subprocess.run(["curl", "-sS", "--max-time", "60", "-H", "Authorization: Bearer " + token,
                             "-w", "\n%{http_code}", gateway.http_url + path],
                            capture_output=True, text=True, timeout=90)
    if result.returncode != 0:
        raise GatewayError("curl %s failed: %s" % (path, result.stderr))
    body, _, code = result.stdout.rpartition("\n")
    return int(code), body


def client_for(gateway, token):
    return InfluxDBClient(host="127.0.0.1", port=gateway.http_port, username="telegraf", password=token,
                          database="sensors", timeout=60)


def wait_ping(client, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.ping()
        except Exception:  # connection refused while cairnd starts
            if time.monotonic() > deadline:
                raise GatewayError("the HTTP API did not answer /ping within %d s" % timeout)
            time.sleep(0.2)


def check_influx_and_v1(gateway, token):
    client = client_for(gateway, token)
    version = wait_ping(client)
    now = int(time.time())
    points = [{"measurement": "env", "tags": {"device": "gw-http", "room": room}, "time": now - 60 + i,
               "fields": {"temp": 20.0 + i, "ok": True}} for i, room in enumerate(["hall", "lab", "hall"])]
    if not client.write_points(points, time_precision="s"):
        raise GatewayError("python3-influxdb's write_points returned False")
    code, body = curl(gateway, token, "/v1/tables/sensors/devices/gw-http/readings?measure=env&from=-1h")
    records = json.loads(body)["records"] if code == 200 else None
    if code != 200 or sorted(r["temp"] for r in records) != [20.0, 21.0, 22.0]:
        raise GatewayError("/v1 readings: %d %s" % (code, body))
    code, body = curl(gateway, token, "/v1/tables/sensors/devices/gw-http/latest?measure=env&tag.room=lab")
    if code != 200 or [r["temp"] for r in json.loads(body)["records"]] != [21.0]:
        raise GatewayError("/v1 latest with a tag: %d %s" % (code, body))
    code, body = curl(gateway, token, "/metrics")
    if code != 200 or not re.search(r"^cairn_write_records_total\{outcome=\"stored\"\} 3$", body, re.M):
        raise GatewayError("/metrics does not count the 3 stored records:\n%s" % body[:2000])
    try:
        client_for(gateway, token[:-4] + "AAAA").write_points(points, time_precision="s")
        raise GatewayError("a wrong token was accepted")
    except InfluxDBClientError as error:
        if error.code != 401:
            raise GatewayError("a wrong token: expected 401, got %r" % error.code)
    return version


def resident_bytes(gateway, token):
    code, body = curl(gateway, token, "/metrics")
    found = re.search(r"^process_resident_memory_bytes (\d+)$", body, re.M)
    if code != 200 or not found:
        raise GatewayError("/metrics has no process_resident_memory_bytes")
    return int(found.group(1))


def write_many_series(gateway, token):
    """10 000 series (device x measure x tags), 5 readings each, in 1 000-line requests."""
    client = client_for(gateway, token)
    now = int(time.time())
    lines = ["load,device=node-%d,sensor=s%d v=%di,t=%d.5 %d" % (s % 500, s // 500, r, s, now - 600 + r * 60)
             for r in range(5) for s in range(SERIES)]
    started = time.monotonic()
    for i in range(0, len(lines), 1000):
        if not client.write_points(lines[i:i + 1000], time_precision="s", protocol="line"):
            raise GatewayError("writing series %d failed" % i)
    seconds = time.monotonic() - started
    code, body = curl(gateway, token, "/v1/tables/sensors/devices/node-7/readings?measure=load&from=-1h&limit=1000")
    if code != 200 or len(json.loads(body)["records"]) != 5 * SERIES // 500:
        raise GatewayError("node-7 should hold %d readings: %d %s" % (5 * SERIES // 500, code, body[:500]))
    return len(lines), seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="arm64", choices=["arm64", "armhf"])
    parser.add_argument("image_dir")
    args = parser.parse_args()
    boot = BootFiles(args.image_dir, args.arch)
    with tempfile.TemporaryDirectory(prefix="cairn-http-") as work:
        disk = os.path.join(work, "card.img")
        shutil.copy(boot.image, disk)
        with Gateway(boot, disk).start() as gateway:
            gateway.wait_ready(120)
            token = gateway.admin_token()
            version = check_influx_and_v1(gateway, token)
            print("%s: python3-influxdb wrote through the port forward (ping: %s), curl read /v1 and /metrics, "
                  "a wrong token got 401" % (args.arch, version))
            before = resident_bytes(gateway, token)
            readings, seconds = write_many_series(gateway, token)
            after = resident_bytes(gateway, token)
            print("%s: %d readings in %d series written in %.1f s (%.0f readings/s under emulation)"
                  % (args.arch, readings, SERIES, seconds, readings / seconds))
            print("%s: cairnd resident memory in the guest: %.1f MiB at start, %.1f MiB with %d series"
                  % (args.arch, before / 1048576, after / 1048576, SERIES))
    return 0


if __name__ == "__main__":
    run_test(main)
