#!/usr/bin/python3
"""Debian's python3-influxdb client against a real cairnd.

The InfluxDB 1.x client library writes points to cairnd exactly as it would
to InfluxDB (/ping, /write with Basic auth carrying the token, gzip), and
the points are read back through cairn's own /v1 API and compared value by
value. A wrong token must fail the client's write with 401.

usage: influx_client_test.py CAIRND [LAUNCHER WORDS...]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from influxdb import InfluxDBClient
from influxdb.exceptions import InfluxDBClientError

TIMEOUT = 60


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def start_cairnd(command, data_dir, log_path):
    log = open(log_path, "w")
    process = subprocess.Popen(
        command + ["--data-dir", data_dir, "--http-listen", "127.0.0.1:0", "--http-plain"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        with open(log_path) as f:
            text = f.read()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if match:
            return process, int(match.group(1))
        if process.poll() is not None:
            fail("cairnd exited early: " + text)
        time.sleep(0.05)
    process.kill()
    fail("cairnd did not start listening")


def get_json(port, path, token):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        return json.loads(response.read())


def check_tags_tell_series_apart(client, port, token):
    """Telegraf's cpu=cpu0 / cpu=cpu1: two series of one device and measure,
    both kept at the same timestamp, each returned with its tags and found
    by a tag filter."""
    now = int(time.time())
    points = [{"measurement": "cpu", "tags": {"device": "gw-tags", "cpu": "cpu%d" % c},
               "time": now - 10 + i, "fields": {"usage": 10.0 * c + i}}
              for i in range(3) for c in range(2)]
    if not client.write_points(points, time_precision="s"):
        fail("tagged write_points returned False")
    records = get_json(port, "/v1/tables/sensors/devices/gw-tags/readings?measure=cpu&from=-1h", token)["records"]
    if len(records) != 6:
        fail("tagged points: %d of 6 stored: %r" % (len(records), records))
    for record, point in zip(records, points):
        if record.get("cpu") != point["tags"]["cpu"] or record.get("usage") != point["fields"]["usage"]:
            fail("tagged point %r read back as %r" % (point, record))
    cpu1 = get_json(port, "/v1/tables/sensors/devices/gw-tags/readings?measure=cpu&from=-1h&tag.cpu=cpu1",
                    token)["records"]
    if [r["usage"] for r in cpu1] != [10.0, 11.0, 12.0]:
        fail("tag.cpu=cpu1: %r" % cpu1)
    latest = get_json(port, "/v1/tables/sensors/devices/gw-tags/latest?measure=cpu", token)["records"]
    if sorted((r["cpu"], r["usage"]) for r in latest) != [("cpu0", 2.0), ("cpu1", 12.0)]:
        fail("latest of two series: %r" % latest)
    print("two series told apart by a tag: both kept, filtered by tag.cpu")


def main():
    command = sys.argv[2:] + [sys.argv[1]] if len(sys.argv) > 2 else [sys.argv[1]]
    work = tempfile.mkdtemp(prefix="cairn-influx-")
    data_dir = os.path.join(work, "data")
    os.mkdir(data_dir)
    process = None
    try:
        created = subprocess.run(
            command + ["token", "create", "--data-dir", data_dir, "--name", "telegraf",
                       "--scope", "write:sensors", "--scope", "read:sensors"],
            capture_output=True, text=True, timeout=TIMEOUT)
        if created.returncode != 0:
            fail("token create: " + created.stderr)
        token = created.stdout.splitlines()[0]
        process, port = start_cairnd(command, data_dir, os.path.join(work, "cairnd.log"))

        client = InfluxDBClient(host="127.0.0.1", port=port, username="telegraf", password=token,
                                database="sensors", timeout=TIMEOUT)
        version = client.ping()
        print("ping: X-Influxdb-Version %s" % version)

        now = int(time.time())
        points = []
        for i in range(100):
            points.append({
                "measurement": "env",
                "tags": {"device": "boiler-%d" % (i % 4), "site": "north"},
                "time": now - 1000 + i,
                "fields": {"temperature": 20.0 + i / 4.0, "pressure": 1000 + i, "ok": i % 2 == 0,
                           "note": "reading %d" % i},
            })
        if not client.write_points(points, time_precision="s", batch_size=30):
            fail("write_points returned False")
        gzip_client = InfluxDBClient(host="127.0.0.1", port=port, username="telegraf", password=token,
                                     database="sensors", timeout=TIMEOUT, gzip=True)
        if not gzip_client.write_points(
                [{"measurement": "power", "tags": {"device": "boiler-0"}, "time": now - 5,
                  "fields": {"watts": 1234.5}}], time_precision="s"):
            fail("gzip write_points returned False")
        print("wrote %d points in 4 batches and 1 gzip point" % len(points))

        devices = get_json(port, "/v1/tables/sensors/devices", token)["devices"]
        if sorted(d["device"] for d in devices) != ["boiler-0", "boiler-1", "boiler-2", "boiler-3"]:
            fail("devices: %r" % devices)
        for d in range(4):
            records = get_json(port, "/v1/tables/sensors/devices/boiler-%d/readings?measure=env&from=-1h&limit=1000"
                               % d, token)["records"]
            expected = [p for p in points if p["tags"]["device"] == "boiler-%d" % d]
            if len(records) != len(expected):
                fail("boiler-%d: %d records, expected %d" % (d, len(records), len(expected)))
            for record, point in zip(records, expected):
                for name, value in point["fields"].items():
                    if record.get(name) != value:
                        fail("boiler-%d %s: %r != %r (%r)" % (d, name, record.get(name), value, record))
        latest = get_json(port, "/v1/tables/sensors/devices/boiler-0/latest?measure=power", token)["records"]
        if len(latest) != 1 or latest[0]["watts"] != 1234.5:
            fail("gzip point: %r" % latest)
        print("read back every point through /v1 with equal values")

        wrong = InfluxDBClient(host="127.0.0.1", port=port, username="telegraf", password=token + "x",
                               database="sensors", timeout=TIMEOUT)
        try:
            wrong.write_points(points[:1], time_precision="s")
            fail("a wrong token was accepted")
        except InfluxDBClientError as error:
            if error.code != 401:
                fail("wrong token: expected 401, got %r" % error.code)
        print("wrong token refused with 401")

        try:
            client.write_points(points[:1], time_precision="s", database="missing")
            fail("a write to an unknown table was accepted")
        except InfluxDBClientError as error:
            if error.code not in (403, 404):
                fail("unknown table: expected 403/404, got %r" % error.code)
        check_tags_tell_series_apart(client, port, token)
        print("PASS")
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
