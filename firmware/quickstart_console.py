#!/usr/bin/env python3
"""Drives cairnd and the cloud side for the quick start (firmware/quickstart.sh).

Everything lives in one quick-start directory (--dir), which the shell script
has made fresh and filled with the gateway's key (--key-file, for cairnd) and
the ingest service's keys file (--keys-file, for cairn-ingest):

  data/              cairnd's data directory
  cairnd.log         cairnd's log
  cloud.db           cairn-ingest's SQLite database: the cloud side's copy
  cairn-ingest.log   cairn-ingest's log
  mosquitto.conf     the broker started here (without --broker), and its log
  <name>.pid         the process ids of what runs, so that the shell script
                     can stop what is left if this script is killed

The cloud side comes first: without --broker a mosquitto of its own on a free
loopback port (anonymous clients, 127.0.0.1 only, nothing persisted), then
cairn-ingest storing into cloud.db, once it reports its subscription. Then
cairnd starts with a pseudo-terminal as its serial console, its HTTP API on
loopback and sync to that broker. From the serial banner it takes the admin
token cairnd shows once at its first start. It writes demo readings for three
devices over HTTP the way InfluxDB clients do (temperature and humidity random
walks over the last hour, one POST /write), queries them over HTTP (latest,
readings) and types at the serial console the way an operator would: version,
devices, measures, latest, range and agg.

Then the sync part: it waits until cairnd reports every reading confirmed by
cairn-ingest's receipts (each sent after the ingest's commit) and types `sync`.
As cloud.db is locked exclusively while cairn-ingest runs, cairn-ingest is
stopped before cloud.db is read; its rows must match the written readings and
cairnd's own answers exactly. Finally cairnd is stopped with SIGTERM, then the
broker; every exit status is reported.

Exits non-zero if a process does not start, a command answers with an error,
a reading does not reach cloud.db, a wait times out, or a process does not
exit 0. Every wait is bounded; SIGTERM, SIGHUP and SIGINT stop everything
started here before exiting.
"""

import argparse
import datetime
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import tty
import urllib.error
import urllib.parse
import urllib.request

PROMPT = b"cairn> "
DEVICES = ("sensor-01", "sensor-02", "sensor-03")
MEASURE = "env"
FIELDS = ("temperature", "humidity")
TABLE = "sensors"
NANOS_PER_SECOND = 1_000_000_000
# The broker's port is picked free and then bound by mosquitto: another
# program may take it in between, so a few ports are tried.
BROKER_START_ATTEMPTS = 3


class QuickstartError(Exception):
    """A step failed; the message says which and why."""


class Interrupted(Exception):
    """SIGTERM or SIGHUP arrived: stop everything and exit non-zero."""


def on_termination_signal(number, _frame):
    raise Interrupted("stopped by %s" % signal.Signals(number).name)


class Console:
    """The operator's side of the serial line: the pty master."""

    def __init__(self, master_fd, timeout_seconds):
        self.master_fd = master_fd
        self.timeout_seconds = timeout_seconds
        self.pending = b""

    def read_until_prompt(self, process):
        """Returns what arrives up to and including the next prompt."""
        deadline = time.monotonic() + self.timeout_seconds
        while PROMPT not in self.pending:
            if process.poll() is not None:
                raise QuickstartError(
                    "cairnd exited (status %d) instead of answering" % process.returncode)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise QuickstartError("no prompt from cairnd within %d s; got: %r"
                                      % (self.timeout_seconds, self.pending[-500:]))
            readable, _, _ = select.select([self.master_fd], [], [], min(remaining, 0.2))
            if readable:
                try:
                    chunk = os.read(self.master_fd, 4096)
                except OSError as error:
                    raise QuickstartError("reading the serial console failed: %s" % error)
                self.pending += chunk
        end = self.pending.index(PROMPT) + len(PROMPT)
        text, self.pending = self.pending[:end], self.pending[end:]
        return text.decode("utf-8", errors="replace")

    def run(self, process, command):
        """Types `command` and Enter; returns cairnd's answer (without the
        echoed command and the next prompt)."""
        os.write(self.master_fd, command.encode("utf-8") + b"\r")
        text = self.read_until_prompt(process)
        body = text[:-len(PROMPT)]
        # The shell echoes the typed line, then answers; lines end in CRLF.
        _, _, answer = body.partition("\r\n")
        answer = answer.replace("\r\n", "\n")
        errors = [line for line in answer.splitlines() if line.startswith("error:")]
        if errors:
            raise QuickstartError("'%s' failed: %s" % (command, errors[0]))
        return answer


class Child:
    """A process started here: its output goes to a log file, its id to a
    pid file (for the shell script's clean-up should this script die)."""

    def __init__(self, name, command, log_path, pid_dir):
        self.name = name
        self.log_path = log_path
        self.pid_path = os.path.join(pid_dir, name + ".pid")
        self.status = None
        self.signalled = False
        print("starting: " + " ".join(command))
        sys.stdout.flush()
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        with open(self.pid_path, "w") as pid_file:
            pid_file.write("%d\n" % self.process.pid)

    def running(self):
        return self.process.poll() is None

    def log_text(self):
        with open(self.log_path, "rb") as log:
            return log.read().decode("utf-8", errors="replace")

    def stop(self, timeout_seconds):
        """SIGTERM, then a bounded wait, then SIGKILL; returns the exit
        status (negative: the signal that ended it). Idempotent."""
        if self.status is None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                self.signalled = True
                try:
                    self.process.wait(timeout=timeout_seconds)
                    self.status = self.process.returncode
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
                    self.status = "hung"
            else:
                self.status = self.process.returncode
            try:
                os.unlink(self.pid_path)
            except FileNotFoundError:
                pass
        return self.status

    def describe_status(self):
        if self.status == "hung":
            return "did not exit within the time limit and was killed"
        if self.status >= 0:
            return "exit status %d" % self.status
        return "killed by %s" % signal.Signals(-self.status).name


def show(command, answer):
    print("cairn> " + command)
    sys.stdout.write(answer if answer.endswith("\n") or not answer else answer + "\n")
    sys.stdout.flush()


def demo_readings(now_nanos, readings_per_device, seed):
    """Line-protocol points: one reading per device every few minutes over
    the last hour (the newest now), temperature and humidity as gentle
    random walks, timestamps in whole seconds."""
    rng = random.Random(seed)
    spacing = 3600 // readings_per_device * NANOS_PER_SECOND
    now_seconds = now_nanos // NANOS_PER_SECOND * NANOS_PER_SECOND
    start = now_seconds - (readings_per_device - 1) * spacing
    lines = []
    for index, device in enumerate(DEVICES):
        temperature = 19.0 + 1.5 * index + rng.uniform(-0.5, 0.5)
        humidity = 45.0 + 5 * index + rng.uniform(-2, 2)
        site = "greenhouse" if index < 2 else "cellar"
        for k in range(readings_per_device):
            temperature += rng.uniform(-0.4, 0.4)
            humidity = min(95.0, max(5.0, humidity + rng.uniform(-1.5, 1.5)))
            # Devices report a few seconds apart, as real ones do.
            timestamp = start + k * spacing - index * 7 * NANOS_PER_SECOND
            lines.append("%s,device=%s,site=%s temperature=%.2f,humidity=%.1f %d"
                         % (MEASURE, device, site, temperature, humidity, timestamp))
    return lines


def expected_readings(lines):
    """(device, timestamp in ns) -> {field: value} of the demo lines."""
    pattern = re.compile(r"^%s,device=([^,]+),site=\S+ temperature=(\S+),humidity=(\S+) (\d+)$" % MEASURE)
    readings = {}
    for line in lines:
        device, temperature, humidity, timestamp = pattern.match(line).groups()
        readings[(device, int(timestamp))] = {"temperature": float(temperature),
                                              "humidity": float(humidity)}
    return readings


def rfc3339_to_nanos(text):
    """cairnd's times: 2026-11-21T09:41:07Z, with up to nine fraction digits."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z", text)
    if not match:
        raise QuickstartError("cairnd answered a time that is not RFC 3339 UTC: %r" % text)
    whole = datetime.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")
    seconds = int(whole.replace(tzinfo=datetime.timezone.utc).timestamp())
    return seconds * NANOS_PER_SECOND + int((match.group(2) or "0").ljust(9, "0"))


def nanos_to_rfc3339(nanos):
    seconds, fraction = divmod(nanos, NANOS_PER_SECOND)
    text = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return text + ("." + ("%09d" % fraction).rstrip("0") if fraction else "") + "Z"


def wait_for_log_line(child, pattern, timeout_seconds, what):
    """The first match of `pattern` in the child's log."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        match = re.search(pattern, child.log_text())
        if match:
            return match
        if not child.running():
            raise QuickstartError("%s exited (status %d) before %s; its log:\n%s"
                                  % (child.name, child.process.returncode, what, child.log_text()))
        if time.monotonic() >= deadline:
            raise QuickstartError("%s did not report %s within %d s; its log:\n%s"
                                  % (child.name, what, timeout_seconds, child.log_text()))
        time.sleep(0.05)


def wait_for_http_port(cairnd, timeout_seconds):
    """The port cairnd reports in its "listening on" log line."""
    match = wait_for_log_line(cairnd, r"listening on http://127\.0\.0\.1:(\d+)", timeout_seconds,
                              "its HTTP port")
    return int(match.group(1))


def free_loopback_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_mosquitto():
    # Debian installs the broker in /usr/sbin, which a user's PATH may lack.
    found = shutil.which("mosquitto", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if found is None:
        raise QuickstartError("mosquitto is not installed (toolchains/install-deps.sh installs it)")
    return found


def start_mosquitto(directory, timeout_seconds):
    """A broker for this quick start only: loopback, anonymous, nothing kept
    on disk. Returns the Child and its URI once it accepts connections."""
    mosquitto = find_mosquitto()
    config_path = os.path.join(directory, "mosquitto.conf")
    for attempt in range(1, BROKER_START_ATTEMPTS + 1):
        port = free_loopback_port()
        with open(config_path, "w") as config:
            config.write("# The quick start's broker (firmware/quickstart.sh): loopback only,\n"
                         "# anonymous clients, no persistence, log on stderr.\n"
                         "listener %d 127.0.0.1\n"
                         "allow_anonymous true\n"
                         "persistence false\n"
                         "log_dest stderr\n" % port)
        broker = Child("mosquitto", [mosquitto, "-c", config_path],
                       os.path.join(directory, "mosquitto.log"), directory)
        deadline = time.monotonic() + timeout_seconds
        while broker.running() and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return broker, "tcp://127.0.0.1:%d" % port
            except OSError:
                time.sleep(0.05)
        broker.stop(timeout_seconds)
        print("mosquitto did not listen on port %d (attempt %d of %d): %s"
              % (port, attempt, BROKER_START_ATTEMPTS, broker.log_text().strip()[-500:]))
    raise QuickstartError("mosquitto did not start; see %s" % os.path.join(directory, "mosquitto.log"))


def http(method, url, token, body=None, timeout=60):
    """One request; returns (status, body text). HTTP errors are answers too."""
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Authorization": "Token " + token})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")
    except OSError as error:  # no connection, reset, time-out
        raise QuickstartError("%s %s failed: %s" % (method, urllib.parse.urlsplit(url).path, error))


def http_json(base, path, token):
    status, answer = http("GET", base + path, token)
    if status != 200:
        raise QuickstartError("GET %s answered %d: %s" % (path, status, answer))
    return json.loads(answer)


def gateway_readings(base, token, devices):
    """Every reading of `devices` as cairnd answers them over HTTP, keyed
    like expected_readings; follows next_page."""
    readings = {}
    for device in devices:
        path = "/v1/tables/%s/devices/%s/readings?measure=%s&limit=1000" % (
            TABLE, urllib.parse.quote(device, safe=""), MEASURE)
        page = None
        while True:
            answer = http_json(base, path + ("&page=" + urllib.parse.quote(page) if page else ""), token)
            for record in answer["records"]:
                readings[(device, rfc3339_to_nanos(record["time"]))] = {
                    field: record.get(field) for field in FIELDS}
            page = answer.get("next_page")
            if not page:
                break
    return readings


def wait_until_synced(base, token, record_count, timeout_seconds):
    """Polls GET /v1/sync until the table holds nothing unconfirmed and the
    ingest's receipts cover `record_count` records; returns the seconds
    waited."""
    started = time.monotonic()
    deadline = started + timeout_seconds
    while True:
        rows = [row for row in http_json(base, "/v1/sync", token)["tables"] if row["table"] == TABLE]
        unsynced = max([row["unsynced_records"] for row in rows] or [0])
        in_flight = sum(row["in_flight"] for row in rows)
        confirmed = sum(row["confirmed_records"] for row in rows)
        if rows and unsynced == 0 and in_flight == 0 and confirmed >= record_count:
            return time.monotonic() - started
        if time.monotonic() >= deadline:
            errors = sorted({row["last_error"] for row in rows if row["last_error"]})
            raise QuickstartError(
                "after %d s cairnd still had %d unsynced readings of table %s (batches in flight: %d, "
                "readings confirmed: %d of %d)%s"
                % (timeout_seconds, unsynced, TABLE, in_flight, confirmed, record_count,
                   "; last errors: " + "; ".join(errors) if errors else ""))
        time.sleep(0.25)


def cloud_readings(cloud_db):
    """The rows of table `sensors` in cairn-ingest's SQLite database
    (ingest_schema.md), keyed like expected_readings."""
    if not os.path.exists(cloud_db):
        raise QuickstartError("cairn-ingest left no database at %s" % cloud_db)
    connection = sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(cloud_db), uri=True)
    try:
        rows = connection.execute(
            "SELECT device_id, measure_name, timestamp_ns, fields FROM cairn_readings "
            "WHERE table_name = ? ORDER BY device_id, timestamp_ns", (TABLE,)).fetchall()
        batches = connection.execute(
            "SELECT gateway_id, lane, COUNT(*), SUM(records) FROM cairn_batches "
            "WHERE table_name = ? GROUP BY gateway_id, lane", (TABLE,)).fetchall()
    except sqlite3.Error as error:
        raise QuickstartError("reading %s failed: %s" % (cloud_db, error))
    finally:
        connection.close()
    readings = {}
    for device, measure, timestamp, fields_json in rows:
        if measure != MEASURE:
            raise QuickstartError("cloud.db holds a reading of measure %r, not %r" % (measure, MEASURE))
        # Each field is {"<type>": value}, e.g. {"double": 21.5}.
        fields = {name: next(iter(typed.values())) for name, typed in json.loads(fields_json).items()}
        readings[(device, timestamp)] = {field: fields.get(field) for field in FIELDS}
    return readings, batches


def compare(name, actual, expected):
    """Raises naming the first differences between two reading maps."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    different = sorted(key for key in set(actual) & set(expected) if actual[key] != expected[key])
    if not (missing or extra or different):
        return
    problems = []
    if missing:
        problems.append("%d missing, e.g. %s at %s" % (len(missing), missing[0][0],
                                                       nanos_to_rfc3339(missing[0][1])))
    if extra:
        problems.append("%d unexpected, e.g. %s at %s" % (len(extra), extra[0][0],
                                                          nanos_to_rfc3339(extra[0][1])))
    if different:
        key = different[0]
        problems.append("%d different, e.g. %s at %s: %s instead of %s" % (
            len(different), key[0], nanos_to_rfc3339(key[1]), actual[key], expected[key]))
    raise QuickstartError("%s does not hold the %d written readings: %s"
                          % (name, len(expected), "; ".join(problems)))


def print_side_by_side(gateway, cloud, per_device):
    """The newest `per_device` readings of each device, from both sides."""
    def fields(values):
        return " ".join("%s=%g" % (field, values[field]) for field in FIELDS)
    rows = [("device", "time", "cairnd (gateway)", "cloud.db (cairn_readings)")]
    for device in DEVICES:
        for key in sorted((key for key in gateway if key[0] == device), reverse=True)[:per_device]:
            rows.append((device, nanos_to_rfc3339(key[1]), fields(gateway[key]), fields(cloud[key])))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        print("  " + "  ".join(text.ljust(width) for text, width in zip(row, widths)) + "  " + row[3])


def check_broker_uri(uri):
    match = re.fullmatch(r"tcp://([^:/]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})", uri)
    if not match or not 0 < int(match.group(2)) < 65536:
        raise QuickstartError("the broker must be given as tcp://HOST:PORT, not %r" % uri)


def sync_session(args, ingest, console, cairnd_process, base, token, lines):
    """Waits for the readings to reach cloud.db, then shows both sides."""
    print("\nsync: cairnd sends every acknowledged reading to the broker; cairn-ingest verifies each "
          "batch with the gateway's key,\nstores it in cloud.db and answers with a signed receipt "
          "after its commit. Waiting (at most %d s) for the receipts of all %d readings ..."
          % (args.sync_timeout, len(lines)))
    waited = wait_until_synced(base, token, len(lines), args.sync_timeout)
    print("  -> all %d readings confirmed by cairn-ingest after %.1f s" % (len(lines), waited))
    show("sync", console.run(cairnd_process, "sync"))

    # cairn-ingest keeps cloud.db locked exclusively while it runs
    # (ingest_schema.md §4): stop it, then read the file.
    status = ingest.stop(args.timeout)
    last_line = (ingest.log_text().strip().splitlines() or [""])[-1]
    print("\nstopped cairn-ingest with SIGTERM: %s\n  %s" % (ingest.describe_status(), last_line))
    if status != 0:
        raise QuickstartError("cairn-ingest did not stop cleanly (%s)" % ingest.describe_status())

    expected = expected_readings(lines)
    cloud, batches = cloud_readings(args.cloud_db)
    compare("cloud.db", cloud, expected)
    gateway = gateway_readings(base, token, DEVICES)
    compare("cairnd", gateway, expected)
    print("\n%s holds all %d readings, the same as cairnd, in %s:" % (
        args.cloud_db, len(cloud), ", ".join(
            "%d %s batch%s (%d records) from gateway %s" % (count, lane, "" if count == 1 else "es",
                                                           records, gateway_id)
            for gateway_id, lane, count, records in batches)))
    print("  sqlite3 %s \"SELECT device_id, timestamp_ns, fields FROM cairn_readings "
          "WHERE table_name = '%s'\"" % (args.cloud_db, TABLE))
    print_side_by_side(gateway, cloud, per_device=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cairnd", required=True, help="path of the cairnd binary")
    parser.add_argument("--cairn-ingest", required=True, help="path of the cairn-ingest binary")
    parser.add_argument("--dir", required=True, help="the quick-start directory (exists; data/ and "
                        "cloud.db in it are replaced)")
    parser.add_argument("--gateway-id", required=True, help="the gateway's id in topics and envelopes")
    parser.add_argument("--key-file", required=True, help="the gateway's HMAC key as hex, for cairnd")
    parser.add_argument("--keys-file", required=True, help="'<gateway_id> <key as hex>', for cairn-ingest")
    parser.add_argument("--broker", help="use this MQTT broker (tcp://HOST:PORT) instead of starting one")
    parser.add_argument("--readings", type=int, default=20, help="readings per device (default 20)")
    parser.add_argument("--timeout", type=int, default=60, help="seconds to wait for any one answer")
    parser.add_argument("--sync-timeout", type=int, default=30,
                        help="seconds to wait for the readings to reach cloud.db (default 30)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the random walks")
    args = parser.parse_args()

    for path, name in ((args.cairnd, "cairnd"), (args.cairn_ingest, "cairn-ingest")):
        if not os.access(path, os.X_OK):
            print("quickstart: %s is not an executable %s" % (path, name), file=sys.stderr)
            return 1
    if not os.path.isdir(args.dir):
        print("quickstart: the quick-start directory %s does not exist" % args.dir, file=sys.stderr)
        return 1
    args.data_dir = os.path.join(args.dir, "data")
    args.cloud_db = os.path.join(args.dir, "cloud.db")
    # Fresh every run, so the quick start can be repeated.
    shutil.rmtree(args.data_dir, ignore_errors=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(args.cloud_db + suffix)
        except FileNotFoundError:
            pass

    # Termination signals unwind through the finally below, which stops
    # every child.
    signal.signal(signal.SIGTERM, on_termination_signal)
    signal.signal(signal.SIGHUP, on_termination_signal)

    children = {}
    master_fd = slave_fd = None
    failed = False
    try:
        if args.broker:
            check_broker_uri(args.broker)
            broker_uri = args.broker
            print("using the broker %s" % broker_uri)
        else:
            children["mosquitto"], broker_uri = start_mosquitto(args.dir, args.timeout)
            print("mosquitto listens on %s (loopback only)" % broker_uri)

        # Its own client id: on a shared broker, a session id another ingest
        # service uses would throw that one off.
        children["cairn-ingest"] = Child(
            "cairn-ingest",
            [args.cairn_ingest, "--broker", broker_uri, "--keys", args.keys_file, "--sqlite", args.cloud_db,
             "--client-id", "cairn-ingest-" + args.gateway_id],
            os.path.join(args.dir, "cairn-ingest.log"), args.dir)
        subscribed = wait_for_log_line(children["cairn-ingest"], r"subscribed to \S+ on \S+", args.timeout,
                                       "its subscription")
        print("cairn-ingest: " + subscribed.group(0))

        master_fd, slave_fd = os.openpty()
        # Raw before cairnd opens it: nothing typed is echoed by the kernel.
        # The slave stays open here so that the master keeps working while
        # cairnd starts and after it exits.
        tty.setraw(slave_fd)
        slave_path = os.ttyname(slave_fd)
        console = Console(master_fd, args.timeout)

        children["cairnd"] = cairnd = Child(
            "cairnd",
            [args.cairnd, "--data-dir", args.data_dir, "--serial", slave_path,
             "--http-listen", "127.0.0.1:0", "--http-plain",
             "--sync-broker", broker_uri, "--gateway-id", args.gateway_id, "--sync-key-file", args.key_file],
            os.path.join(args.dir, "cairnd.log"), args.dir)
        banner = console.read_until_prompt(cairnd.process).replace("\r\n", "\n")
        print(banner.strip("\n"))
        match = re.search(r"shown once; store it now\):\n(cairn_\S+)", banner)
        if not match:
            raise QuickstartError("the first start showed no admin token on the console")
        token = match.group(1)
        port = wait_for_http_port(cairnd, args.timeout)
        base = "http://127.0.0.1:%d" % port

        show("version", console.run(cairnd.process, "version"))

        lines = demo_readings(time.time_ns(), args.readings, args.seed)
        print("\nwriting %d demo readings for %d devices over HTTP, as InfluxDB clients do:" %
              (len(lines), len(DEVICES)))
        print("  curl -H 'Authorization: Token $TOKEN' --data-binary @readings.lp '%s/write?db=%s'"
              % (base, TABLE))
        for line in lines[:3]:
            print("    " + line)
        print("    ... (%d more lines)" % (len(lines) - 3))
        status, answer = http("POST", base + "/write?db=%s&precision=ns" % TABLE, token,
                              ("\n".join(lines) + "\n").encode("utf-8"))
        if status != 204:
            raise QuickstartError("POST /write answered %d: %s" % (status, answer))
        print("  -> 204 No Content: all %d readings are stored and durable" % len(lines))

        device = DEVICES[0]
        for path in ("/v1/tables/%s/devices/%s/latest" % (TABLE, device),
                     "/v1/tables/%s/devices/%s/readings?limit=3&order=desc" % (TABLE, device)):
            print("\nGET %s -> 200" % path)
            print(json.dumps(http_json(base, path, token), indent=2))

        print("\nand the same data at the serial console:")
        for query in ("devices %s" % TABLE,
                      "measures %s" % TABLE,
                      "latest %s %s" % (TABLE, device),
                      "range %s %s --limit 5" % (TABLE, device),
                      "agg %s %s %s temperature --step 15m --fn min,max,avg,count --from -1h"
                      % (TABLE, device, MEASURE)):
            show(query, console.run(cairnd.process, query))

        sync_session(args, children["cairn-ingest"], console, cairnd.process, base, token, lines)
        print("\nthe web page (tables, devices, latest values, a chart): %s/#token=%s" % (base, token))
    except (QuickstartError, Interrupted, KeyboardInterrupt) as error:
        print("quickstart: %s" % (str(error) or "interrupted"), file=sys.stderr)
        failed = True
    finally:
        # A second signal must not cut the clean-up short.
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(number, signal.SIG_IGN)
        print()
        for name in ("cairnd", "cairn-ingest", "mosquitto"):
            child = children.get(name)
            if child is None:
                continue
            already_stopped = child.status is not None
            status = child.stop(args.timeout)
            if not already_stopped:
                print("%s %s: %s" % ("stopped" if child.signalled else "already gone:", name,
                                     child.describe_status()))
            if status != 0:
                failed = True
        for fd in (master_fd, slave_fd):
            if fd is not None:
                os.close(fd)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
