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

def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def check_backslash_tag(client, port, token, now):
    """A tag key written with a backslash before an escaped equals sign is
    stored as InfluxDB reads it: the backslash stays, the escape goes."""
    if not client.write_points(["escapes,device=bs,reg\\\\=ion=east,path=C:\\data v=1i %d" % now],
                               time_precision="s", protocol="line"):
        fail("backslash tag: write returned False")
    rows = get_json(port, "/v1/tables/sensors/devices/bs/readings?measure=escapes&from=-1h", token)["records"]
    if len(rows) != 1 or rows[0].get("reg\\=ion") != "east" or rows[0].get("path") != "C:\\data":
        fail("backslash tag: %r" % rows)
    print("backslash tag read as InfluxDB reads it: %r" % rows[0])


def check_reserved_fields(client, port, token, now):
    """_ttl, _version and a t-suffixed timestamp value set a record's expiry,
    version and a timestamp field; used wrongly they refuse the line."""
    expiry = now + 365 * 86400
    started = now - 3600
    # The client's own point dicts: integers become 3i, so _version and _ttl
    # need nothing special.
    if not client.write_points([{"measurement": "rsv", "tags": {"device": "rv"}, "time": now - 2,
                                 "fields": {"v": 1.5, "_version": 3, "_ttl": expiry}}], time_precision="s"):
        fail("reserved fields: write_points returned False")
    # A timestamp field has no Python type of its own: written as a line.
    if not client.write_points(["rsv,device=rv v=2.5,_version=1i,started=%dt %d" % (started, now - 1)],
                               time_precision="s", protocol="line"):
        fail("timestamp field: write returned False")
    records = get_json(port, "/v1/tables/sensors/devices/rv/readings?measure=rsv&from=-1h", token)["records"]
    if len(records) != 2:
        fail("reserved fields: %r" % records)
    first, second = records
    if first.get("version") != 3 or first.get("ttl") != iso(expiry) or first.get("v") != 1.5:
        fail("reserved fields: %r" % first)
    if "_version" in first or "_ttl" in first:
        fail("reserved fields stored as fields: %r" % first)
    if second.get("version") != 1 or second.get("started") != iso(started) or second.get("v") != 2.5:
        fail("timestamp field: %r" % second)
    print("_version, _ttl and a timestamp field read back: %r" % first)

    # A lower version of a stored point is rejected, not stored silently.
    try:
        client.write_points([{"measurement": "rsv", "tags": {"device": "rv"}, "time": now - 2,
                              "fields": {"v": 9.5, "_version": 2}}], time_precision="s")
        fail("a lower version was accepted")
    except InfluxDBClientError as error:
        if error.code != 400:
            fail("lower version: expected 400, got %r" % error.code)
    for bad in ({"v": 1.0, "_ttl": "soon"}, {"v": 1.0, "_version": -1}, {"v": 1.0, "_version": 2.5},
                {"v": 1.0, "_other": 1}):
        try:
            client.write_points([{"measurement": "rsv", "tags": {"device": "rv-bad"}, "time": now,
                                  "fields": bad}], time_precision="s")
            fail("a misused reserved field was accepted: %r" % bad)
        except InfluxDBClientError as error:
            if error.code != 400 or "reserved" not in str(error.content):
                fail("misused reserved field %r: expected 400 naming it, got %r %r"
                     % (bad, error.code, error.content))
    devices = [d["device"] for d in get_json(port, "/v1/tables/sensors/devices", token)["devices"]]
    if "rv-bad" in devices:
        fail("a line with a misused reserved field was stored")
    records = get_json(port, "/v1/tables/sensors/devices/rv/readings?measure=rsv&from=-1h", token)["records"]
    if records[0].get("v") != 1.5:
        fail("the lower version replaced the stored point: %r" % records)
    print("lower version and misused reserved fields refused with 400")


def get_raw(port, path, token):
    """(status, body text) of a GET, error statuses included."""
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def check_exact_integer_aggregates(client, port, token, now):
    """Integers written by the client aggregate exactly over HTTP: sums past
    2^53 and at the int64 extremes come back as JSON integers, a sum leaving
    int64 is a 400 naming the bucket."""
    hour = (now // 3600 - 1) * 3600  # the previous whole hour: one bucket
    cases = {
        "exact-0": [9007199254740993, 1],               # 2^53 + 1 + 1: a double says ...992
        "exact-1": [9223372036854775807, -9223372036854775808, 9007199254740993],
        "exact-2": [9223372036854775807, 0],            # INT64_MAX: a double says 2^63
        "exact-3": [9223372036854775807, 1],            # leaves int64
    }
    points = []
    for device, values in cases.items():
        for i, value in enumerate(values):
            points.append({"measurement": "counter", "tags": {"device": device}, "time": hour + 10 + i,
                           "fields": {"n": value}})
    if not client.write_points(points, time_precision="s"):
        fail("write_points of integers returned False")
    query = "measure=counter&field=n&step=1h&fn=sum,avg,count,min,max&from=%d&to=%d" % (
        hour * 10**9, (hour + 3600) * 10**9)
    for device, values in cases.items():
        status, body = get_raw(port, "/v1/tables/sensors/devices/%s/aggregate?%s" % (device, query), token)
        total = sum(values)
        if total > 2**63 - 1:
            if status != 400 or "sum overflows int64 in the bucket starting at %d" % (hour * 10**9) not in body:
                fail("%s: expected a 400 naming the bucket, got %d %s" % (device, status, body))
            continue
        if status != 200:
            fail("%s: aggregate answered %d %s" % (device, status, body))
        buckets = json.loads(body)["buckets"]
        if len(buckets) != 1:
            fail("%s: %d buckets: %s" % (device, len(buckets), body))
        bucket = buckets[0]
        if type(bucket["sum"]) is not int or bucket["sum"] != total or ('"sum":%d' % total) not in body:
            fail("%s: sum %r, expected the integer %d: %s" % (device, bucket["sum"], total, body))
        if bucket["count"] != len(values) or bucket["min"] != min(values) or bucket["max"] != max(values):
            fail("%s: count/min/max wrong: %s" % (device, body))
        # The exact sum divided by the count, rounded once to double.
        expected_avg = total / len(values)  # Python's int / int rounds the exact quotient once
        if bucket["avg"] != expected_avg:
            fail("%s: avg %r, expected %r" % (device, bucket["avg"], expected_avg))
    print("integer aggregates exact over HTTP, overflow reported")


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
        check_backslash_tag(client, port, token, now)
        check_reserved_fields(client, port, token, now)

        # Rewriting stored points: the same values again are a duplicate, accepted silently (a
        # retry stays idempotent); other values are a conflict the table's on_conflict (reject,
        # the default) refuses, and the client raises the error naming the line.
        if not client.write_points(points[:2], time_precision="s"):
            fail("rewriting points with their own values was refused")
        changed = dict(points[1], fields=dict(points[1]["fields"], temperature=99.5))
        try:
            client.write_points([points[2], changed], time_precision="s")
            fail("a rewrite with other values was accepted")
        except InfluxDBClientError as error:
            text = str(error)
            if (error.code != 400 or "line 2: version 0 of this point is stored with other values" not in text
                    or "field 'temperature' is 99.5 here, 20.25 stored" not in text):
                fail("conflict: expected a 400 naming line 2 and the field, got %r" % text)
        kept = get_json(port, "/v1/tables/sensors/devices/boiler-1/readings?measure=env&from=-1h&limit=1000",
                        token)["records"][0]
        if kept["temperature"] != 20.25:
            fail("the refused rewrite changed the stored point: %r" % kept)
        print("a rewrite with the same values accepted, with other values refused naming line 2")

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

        check_exact_integer_aggregates(client, port, token, now)
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
