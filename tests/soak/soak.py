"""cairn's soak run (tests/soak/soak.sh starts it; not part of CI).

Runs a broker, cairn-ingest (SQLite sink) and cairnd on loopback for
--minutes, with steady line-protocol ingest over HTTP, checked queries,
broker outages and kill -9 of cairnd, and appends one CSV row a minute to
OUT/soak.csv: cairnd's RSS, open files and threads, readings acknowledged,
stored (read back through the API) and synced (rows in the cloud database),
disk bytes, restarts and the broker's state. soak_report.py turns the CSV
into OUT/summary.txt (figures, loss, duplicates, text charts).

Readings are exact: device d's reading i has timestamp T0 + i * 10 ms and
fields n=i, v=i/2, so a count, min, max and sum of n over a device tell
whether every acknowledged reading is there exactly once. A writer retries
a batch with the same readings until it gets 204; only then are they
counted as acknowledged. A sample reads `acked` before asking cairnd and
`attempted` (every reading ever sent) after: stored < acked is a loss,
stored > attempted a duplicate.
"""

import argparse
import csv
import http.client
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.parse

TABLE = "sensors"
MEASURE = "soak"
STEP_NS = 10_000_000  # 10 ms between a device's readings
COLUMNS = ["minute", "utc", "pid", "rss_kb", "fds", "threads", "acked", "stored", "attempted", "synced",
           "unsynced", "data_bytes", "log_dir_bytes", "cairnd_log_bytes", "restarts", "broker", "cairnd_up",
           "queries_ok", "queries_wrong", "queries_failed", "write_retries", "lost", "duplicated", "hwm_kb",
           "latest_ms", "range_ms", "aggregate_ms"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def tree_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # removed while walking (a sealed log segment)
    return total


def whole(value):
    """An aggregate's number (JSON integer or float) as an int."""
    return int(round(float(value)))


class Events:
    """OUT/events.log: every kill, outage, failed write and wrong answer."""

    def __init__(self, path):
        self.file = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def __call__(self, text):
        line = "%s %s" % (time.strftime("%H:%M:%S", time.gmtime()), text)
        with self.lock:
            self.file.write(line + "\n")
        print(line, flush=True)


class Child:
    """A process started here, its output appended to a log file."""

    def __init__(self, name, command, log_path):
        self.name, self.command, self.log_path, self.process = name, command, log_path, None

    def start(self):
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Returns the exit status (None if it was not running)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        status, self.process = self.process.returncode, None
        return status


class Api:
    """cairnd's HTTP API on loopback, one connection per call."""

    def __init__(self, port):
        self.port, self.token = port, ""

    def call(self, method, path, body=None, timeout=30):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Authorization": "Token " + self.token} if self.token else {}
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def json(self, path):
        status, body = self.call("GET", path)
        if status != 200:
            raise RuntimeError("GET %s answered %d: %s" % (path, status, body[:200]))
        return json.loads(body)

    def device_stats(self, device, t0, upto=None):
        """count, min, max and sum of field n of `device` (upto: readings
        below that index only)."""
        to = t0 + upto * STEP_NS if upto is not None else time.time_ns() + 86_400 * 10**9
        path = "/v1/tables/%s/devices/%s/aggregate?measure=%s&field=n&step=3650d&fn=count,min,max,sum&from=%d&to=%d" % (
            TABLE, device, MEASURE, t0, to)
        count, low, high, total = 0, None, None, 0
        for bucket in self.json(path)["buckets"]:
            if not bucket.get("count"):
                continue
            count += whole(bucket["count"])
            total += whole(bucket["sum"])
            low = whole(bucket["min"]) if low is None else min(low, whole(bucket["min"]))
            high = whole(bucket["max"]) if high is None else max(high, whole(bucket["max"]))
        return count, low, high, total


class Ledger:
    """Per device: readings acknowledged (all below that index) and sent."""

    def __init__(self, devices):
        self.lock = threading.Lock()
        self.acked = {device: 0 for device in devices}
        self.attempted = {device: 0 for device in devices}
        self.retries = 0

    def totals(self):
        with self.lock:
            return sum(self.acked.values()), sum(self.attempted.values())


def writer(api, ledger, devices, t0, batch, interval, stop, events):
    """Posts `batch` readings of each of `devices` every `interval` s,
    retrying the same body until 204 (or until stopped)."""
    next_time = time.monotonic()
    while not stop.is_set():
        with ledger.lock:
            start = {device: ledger.acked[device] for device in devices}
            for device in devices:
                ledger.attempted[device] = max(ledger.attempted[device], start[device] + batch)
        lines = ["%s,device=%s n=%di,v=%s %d" % (MEASURE, device, i, i / 2, t0 + i * STEP_NS)
                 for device in devices for i in range(start[device], start[device] + batch)]
        body = ("\n".join(lines) + "\n").encode()
        while not stop.is_set():
            try:
                status, answer = api.call("POST", "/write?db=%s&precision=ns" % TABLE, body, timeout=20)
            except (OSError, http.client.HTTPException) as error:
                status, answer = None, str(error).encode()
            if status == 204:
                with ledger.lock:
                    for device in devices:
                        ledger.acked[device] = start[device] + batch
                break
            with ledger.lock:
                ledger.retries += 1
            if status is not None:
                events("write answered %s: %s" % (status, answer[:200]))
            stop.wait(0.5)
        next_time += interval
        stop.wait(max(0.0, next_time - time.monotonic()))
        if time.monotonic() - next_time > 30:
            next_time = time.monotonic()  # after an outage: no burst to catch up


def querier(api, ledger, t0, stop, counts, events):
    """Every 2 s one of: a range, the latest, an aggregate of a random
    device, each checked against what was acknowledged."""
    rng = random.Random(7)
    while not stop.wait(2.0):
        with ledger.lock:
            device = rng.choice(sorted(ledger.acked))
            acked = ledger.acked[device]
        if acked < 200:
            continue
        kind = rng.choice(("range", "latest", "aggregate"))
        started = time.monotonic()
        try:
            wrong = None
            if kind == "range":
                first = rng.randrange(0, acked - 100)
                path = "/v1/tables/%s/devices/%s/readings?measure=%s&from=%d&to=%d&limit=1000" % (
                    TABLE, device, MEASURE, t0 + first * STEP_NS, t0 + (first + 100) * STEP_NS)
                records = api.json(path)["records"]
                got = [(int(r["n"]), float(r["v"])) for r in records]
                if got != [(i, i / 2) for i in range(first, first + 100)]:
                    wrong = "range %s [%d,%d): %d records, first %s" % (device, first, first + 100, len(got), got[:3])
            elif kind == "latest":
                records = api.json("/v1/tables/%s/devices/%s/latest?measure=%s" % (TABLE, device, MEASURE))["records"]
                if not records or int(records[0]["n"]) < acked - 1:
                    wrong = "latest %s: %s, acknowledged up to %d" % (device, records[:1], acked - 1)
            else:
                first = rng.randrange(0, acked - 100)
                count, low, high, total = api.device_stats(device, t0 + first * STEP_NS, upto=acked - first)
                want = (acked - first, first, acked - 1, sum(range(first, acked)))
                if (count, low, high, total) != want:
                    wrong = "aggregate %s from %d: %s, want %s" % (device, first, (count, low, high, total), want)
            counts["wrong" if wrong else "ok"] += 1
            slowest = kind + "_ms"  # the slowest answer of each kind since the last sample
            counts[slowest] = max(counts.get(slowest, 0), int((time.monotonic() - started) * 1000))
            if wrong:
                events("WRONG ANSWER " + wrong)
        except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError) as error:
            counts["failed"] += 1
            if "Connection refused" not in str(error):
                events("query %s failed: %s" % (kind, error))


class Soak:
    """The processes, the fault schedule and the minute samples."""

    def __init__(self, args):
        self.args, self.out = args, args.out
        self.events = Events(os.path.join(self.out, "events.log"))
        self.data_dir = os.path.join(self.out, "data")
        self.cloud_db = os.path.join(self.out, "cloud.db")
        self.broker_port, http_port = free_port(), free_port()
        self.api = Api(http_port)
        self.devices = ["d%02d" % i for i in range(args.devices)]
        self.ledger = Ledger(self.devices)
        self.query_counts = {"ok": 0, "wrong": 0, "failed": 0}
        self.restarts = 0
        self.t0 = time.time_ns() // 10**9 * 10**9
        gateway, key = "soak-%d" % os.getpid(), os.urandom(32).hex()
        key_file, keys_file = os.path.join(self.out, "gateway.key"), os.path.join(self.out, "gateway-keys")
        with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(key + "\n")
        with open(os.open(keys_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("%s %s\n" % (gateway, key))
        conf = os.path.join(self.out, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n"
                    % self.broker_port)
        broker = "tcp://127.0.0.1:%d" % self.broker_port
        self.mosquitto = Child("mosquitto", [args.mosquitto, "-c", conf], os.path.join(self.out, "mosquitto.log"))
        self.ingest = Child("cairn-ingest", [args.cairn_ingest, "--broker", broker, "--keys", keys_file,
                                             "--sqlite", self.cloud_db, "--client-id", "cairn-ingest-" + gateway],
                            os.path.join(self.out, "cairn-ingest.log"))
        self.cairnd = Child("cairnd", [args.cairnd, "--data-dir", self.data_dir, "--http-listen",
                                       "127.0.0.1:%d" % http_port, "--http-plain", "--sync-broker", broker,
                                       "--gateway-id", gateway, "--sync-key-file", key_file],
                            os.path.join(self.out, "cairnd.log"))

    def wait_port(self, port, what, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("%s did not listen on port %d within %d s" % (what, port, timeout))

    def start_cairnd(self):
        started = time.monotonic()
        self.cairnd.start()
        deadline = started + 120
        while time.monotonic() < deadline:
            if not self.cairnd.running():
                raise RuntimeError("cairnd exited (status %s); see cairnd.log" % self.cairnd.process.returncode)
            try:
                if self.api.call("GET", "/ping", timeout=2)[0] in (200, 204):
                    return time.monotonic() - started
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise RuntimeError("cairnd did not answer /ping within 120 s")

    def setup(self):
        self.mosquitto.start()
        self.wait_port(self.broker_port, "mosquitto")
        self.ingest.start()
        time.sleep(1)
        self.start_cairnd()
        token = subprocess.run([self.args.cairnd, "token", "create", "--data-dir", self.data_dir, "--name", "soak",
                                "--scope", "admin"], capture_output=True, text=True, timeout=60, check=True)
        self.api.token = token.stdout.strip()
        deadline = time.monotonic() + 30
        while self.api.call("GET", "/v1/tables")[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the new token is not accepted")
            time.sleep(0.2)
        self.events("cairnd pid %d on port %d, broker port %d" % (self.cairnd.process.pid, self.api.port,
                                                                 self.broker_port))

    def kill_cairnd(self):
        pid = self.cairnd.process.pid
        self.cairnd.stop(signal.SIGKILL)
        self.restarts += 1
        seconds = self.start_cairnd()
        self.events("kill -9 of cairnd %d; restarted as %d, answering after %.2f s"
                    % (pid, self.cairnd.process.pid, seconds))

    def sample(self, minute):
        acked, _ = self.ledger.totals()
        row = {"minute": minute, "utc": time.strftime("%H:%M:%S", time.gmtime()), "restarts": self.restarts,
               "broker": "up" if self.mosquitto.running() else "down"}
        pid = self.cairnd.process.pid if self.cairnd.running() else None
        row["pid"] = pid or ""
        row["cairnd_up"] = 1 if pid else 0
        if pid:
            try:
                status = dict(line.split(":", 1) for line in open("/proc/%d/status" % pid) if ":" in line)
                row["rss_kb"] = int(status["VmRSS"].split()[0])
                row["hwm_kb"] = int(status["VmHWM"].split()[0])  # peak RSS of this cairnd process
                row["threads"] = int(status["Threads"])
                row["fds"] = len(os.listdir("/proc/%d/fd" % pid))
            except (OSError, KeyError, ValueError):
                pass
        try:
            row["stored"] = sum(self.api.device_stats(device, self.t0)[0] for device in self.devices)
            sync = self.api.json("/v1/sync")["tables"]
            row["unsynced"] = sum(r["unsynced_records"] for r in sync if r["table"] == TABLE)
        except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError) as error:
            self.events("sample: cairnd did not answer: %s" % error)
        _, attempted = self.ledger.totals()
        row.update(acked=acked, attempted=attempted)
        if "stored" in row:
            row["lost"] = max(0, acked - row["stored"])
            row["duplicated"] = max(0, row["stored"] - attempted)
        row["synced"] = self.synced()
        row["data_bytes"] = tree_bytes(self.data_dir)
        row["log_dir_bytes"] = tree_bytes(os.path.join(self.data_dir, "log"))
        row["cairnd_log_bytes"] = os.path.getsize(self.cairnd.log_path)
        row.update(queries_ok=self.query_counts["ok"], queries_wrong=self.query_counts["wrong"],
                   queries_failed=self.query_counts["failed"], write_retries=self.ledger.retries)
        for kind in ("latest", "range", "aggregate"):
            row[kind + "_ms"] = self.query_counts.pop(kind + "_ms", "")
        with open(os.path.join(self.out, "soak.csv"), "a", newline="") as f:
            csv.DictWriter(f, COLUMNS).writerow(row)
        print("minute %s: %s" % (minute, json.dumps(row)), flush=True)
        return row

    def synced(self):
        """Rows in the cloud database; a read-only reader of a WAL database
        that cairn-ingest is checkpointing can get SQLITE_IOERR: retried."""
        if not os.path.exists(self.cloud_db):
            return 0
        for attempt in range(3):
            try:
                connection = sqlite3.connect("file:%s?mode=ro" % self.cloud_db, uri=True, timeout=30)
                try:
                    return connection.execute("SELECT COUNT(*) FROM cairn_readings WHERE table_name = ?",
                                              (TABLE,)).fetchone()[0]
                finally:
                    connection.close()
            except sqlite3.Error as error:
                self.events("sample: reading cloud.db failed (attempt %d): %s" % (attempt + 1, error))
                time.sleep(1)
        return ""

    def run(self):
        """The schedule, minute by minute: kill -9 at minute kill_offset +
        k * kill_every, broker down for outage_minutes from outage_offset +
        k * outage_every."""
        args = self.args
        with open(os.path.join(self.out, "soak.csv"), "w", newline="") as f:
            csv.DictWriter(f, COLUMNS).writeheader()
        stop = threading.Event()
        threads = [threading.Thread(target=querier, args=(self.api, self.ledger, self.t0, stop, self.query_counts,
                                                          self.events), daemon=True)]
        per_writer = len(self.devices) // args.writers
        interval = per_writer * args.batch * args.writers / args.rate
        for w in range(args.writers):
            devices = self.devices[w * per_writer:(w + 1) * per_writer]
            threads.append(threading.Thread(target=writer, daemon=True, args=(
                self.api, self.ledger, devices, self.t0, args.batch, interval, stop, self.events)))
        for thread in threads:
            thread.start()
        self.events("ingest: %d writers, %d devices, %d readings per device per POST every %.2f s (%d readings/s)"
                    % (args.writers, len(self.devices), args.batch, interval, args.rate))
        started = time.monotonic()
        self.sample(0)
        for minute in range(1, args.minutes + 1):
            minute_end = started + minute * 60
            while time.monotonic() < minute_end:
                elapsed = (time.monotonic() - started) / 60
                self.faults(elapsed)
                time.sleep(min(1.0, max(0.0, minute_end - time.monotonic())))
            self.sample(minute)
        stop.set()
        for thread in threads:
            thread.join(60)
        self.finish(args.minutes)

    def faults(self, elapsed):
        args = self.args
        if not self.ingest.running():
            self.events("cairn-ingest exited (status %s); starting it again" % self.ingest.process.returncode)
            self.ingest.start()
        if not self.cairnd.running():
            self.events("cairnd exited by itself (status %s); starting it again" % self.cairnd.process.returncode)
            self.restarts += 1
            self.start_cairnd()
        outage = (elapsed - args.outage_offset) % args.outage_every < args.outage_minutes \
            and elapsed >= args.outage_offset
        if outage and self.mosquitto.running():
            self.events("broker outage: stopping mosquitto for %g minutes" % args.outage_minutes)
            self.mosquitto.stop()
        elif not outage and not self.mosquitto.running():
            self.events("broker back")
            self.mosquitto.start()
            self.wait_port(self.broker_port, "mosquitto")
        next_kill = getattr(self, "next_kill", args.kill_offset)
        if elapsed >= next_kill:
            self.next_kill = next_kill + args.kill_every
            self.kill_cairnd()

    def finish(self, minutes):
        """Ingest stopped: waits for sync to catch up, then checks every
        device exactly and stops cairnd with SIGTERM."""
        if not self.mosquitto.running():
            self.mosquitto.start()
            self.wait_port(self.broker_port, "mosquitto")
        acked, attempted = self.ledger.totals()
        self.events("ingest stopped: %d acknowledged, %d sent; waiting up to %d min for sync"
                    % (acked, attempted, self.args.drain_minutes))
        deadline = time.monotonic() + self.args.drain_minutes * 60
        while time.monotonic() < deadline:
            stored = sum(self.api.device_stats(device, self.t0)[0] for device in self.devices)
            synced = self.synced()
            if synced == stored:
                break
            time.sleep(10)
        final = self.sample(minutes + 1)
        verdict = {"acknowledged": acked, "sent": attempted, "stored": final.get("stored"), "synced": final.get("synced"),
                   "restarts": self.restarts, "devices": {}}
        for device in self.devices:
            count, low, high, total = self.api.device_stats(device, self.t0)
            want = self.ledger.acked[device]
            exact = count == want and low == 0 and high == want - 1 and total == want * (want - 1) // 2
            verdict["devices"][device] = {"acked": want, "sent": self.ledger.attempted[device], "count": count,
                                          "min": low, "max": high, "exact": exact}
        connection = sqlite3.connect("file:%s?mode=ro" % self.cloud_db, uri=True, timeout=30)
        verdict["cloud_distinct"] = connection.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT device_id, timestamp_ns FROM cairn_readings WHERE table_name = ?)",
            (TABLE,)).fetchone()[0]
        connection.close()
        verdict["cairnd_sigterm_status"] = self.cairnd.stop(signal.SIGTERM, timeout=120)
        with open(os.path.join(self.out, "verdict.json"), "w") as f:
            json.dump(verdict, f, indent=1)
        self.events("final: %s" % json.dumps({k: v for k, v in verdict.items() if k != "devices"}))

    def stop_all(self):
        for child in (self.cairnd, self.ingest, self.mosquitto):
            child.stop(signal.SIGTERM, timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("cairnd", "cairn-ingest", "mosquitto", "out"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--minutes", type=int, default=240)
    parser.add_argument("--rate", type=int, default=2000, help="readings per second, all writers")
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50, help="readings per device per POST")
    parser.add_argument("--kill-every", type=float, default=10)
    parser.add_argument("--kill-offset", type=float, default=5)
    parser.add_argument("--outage-every", type=float, default=15)
    parser.add_argument("--outage-offset", type=float, default=8)
    parser.add_argument("--outage-minutes", type=float, default=3)
    parser.add_argument("--drain-minutes", type=float, default=10)
    args = parser.parse_args()
    soak = Soak(args)

    def on_signal(number, _frame):
        raise KeyboardInterrupt("signal %d" % number)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        soak.setup()
        soak.run()
    finally:
        soak.stop_all()


if __name__ == "__main__":
    main()
