#!/usr/bin/env python3
"""Drives cairnd for the quick start (firmware/quickstart.sh).

Creates a pseudo-terminal pair, starts cairnd with the slave side as its
serial console, its HTTP API on loopback and a fresh data directory. From the
serial banner it takes the admin token cairnd shows once at its first start.
Then it writes demo readings for three devices over HTTP the way InfluxDB
clients do (temperature and humidity random walks over the last hour, one
POST /write), queries them over HTTP (latest, readings), and types at the
serial console the way an operator would: version, devices, latest, range and
agg. Everything cairnd answers is printed. Finally cairnd is stopped with
SIGTERM and its exit status reported.

Exits non-zero if cairnd does not start, a command answers with an error,
a wait times out, or cairnd does not exit 0. Every wait is bounded.
"""

import argparse
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import tty
import urllib.error
import urllib.parse
import urllib.request

PROMPT = b"cairn> "
DEVICES = ("sensor-01", "sensor-02", "sensor-03")
NANOS_PER_SECOND = 1_000_000_000


class QuickstartError(Exception):
    """A step failed; the message says which and why."""


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
            lines.append("env,device=%s,site=%s temperature=%.2f,humidity=%.1f %d"
                         % (device, site, temperature, humidity, timestamp))
    return lines


def wait_for_http_port(log_path, process, timeout_seconds):
    """The port cairnd reports in its "listening on" log line."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        with open(log_path, "rb") as log:
            match = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if match:
            return int(match.group(1))
        if process.poll() is not None:
            raise QuickstartError("cairnd exited (status %d) before listening" % process.returncode)
        time.sleep(0.05)
    raise QuickstartError("cairnd did not report its HTTP port within %d s" % timeout_seconds)


def http(method, url, token, body=None, timeout=60):
    """One request; returns (status, body text). HTTP errors are answers too."""
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Authorization": "Token " + token})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


def stop(process, timeout_seconds):
    """SIGTERM, then wait; returns the exit status (None if it hung)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout_seconds)
    except subprocess.TimeoutExpired:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cairnd", required=True, help="path of the cairnd binary")
    parser.add_argument("--data-dir", required=True, help="data directory, emptied first")
    parser.add_argument("--log", required=True, help="file for cairnd's log (its stderr)")
    parser.add_argument("--readings", type=int, default=20, help="readings per device (default 20)")
    parser.add_argument("--timeout", type=int, default=60, help="seconds to wait for any one answer")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the random walks")
    args = parser.parse_args()

    if not os.access(args.cairnd, os.X_OK):
        print("quickstart: %s is not an executable cairnd" % args.cairnd, file=sys.stderr)
        return 1
    # Fresh every run, so the quick start can be repeated.
    shutil.rmtree(args.data_dir, ignore_errors=True)

    master_fd, slave_fd = os.openpty()
    # Raw before cairnd opens it: nothing typed is echoed by the kernel. The
    # slave stays open here so that the master keeps working while cairnd
    # starts and after it exits.
    tty.setraw(slave_fd)
    slave_path = os.ttyname(slave_fd)
    console = Console(master_fd, args.timeout)

    log = open(args.log, "wb")
    command = [args.cairnd, "--data-dir", args.data_dir, "--serial", slave_path,
               "--http-listen", "127.0.0.1:0", "--http-plain"]
    print("starting: " + " ".join(command))
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    status = None
    try:
        banner = console.read_until_prompt(process).replace("\r\n", "\n")
        print(banner.strip("\n"))
        match = re.search(r"shown once; store it now\):\n(cairn_\S+)", banner)
        if not match:
            raise QuickstartError("the first start showed no admin token on the console")
        token = match.group(1)
        port = wait_for_http_port(args.log, process, args.timeout)
        base = "http://127.0.0.1:%d" % port

        show("version", console.run(process, "version"))

        lines = demo_readings(time.time_ns(), args.readings, args.seed)
        print("\nwriting %d demo readings for %d devices over HTTP, as InfluxDB clients do:" %
              (len(lines), len(DEVICES)))
        print("  curl -H 'Authorization: Token $TOKEN' --data-binary @readings.lp '%s/write?db=sensors'" % base)
        for line in lines[:3]:
            print("    " + line)
        print("    ... (%d more lines)" % (len(lines) - 3))
        status, answer = http("POST", base + "/write?db=sensors&precision=ns", token,
                              ("\n".join(lines) + "\n").encode("utf-8"))
        if status != 204:
            raise QuickstartError("POST /write answered %d: %s" % (status, answer))
        print("  -> 204 No Content: all %d readings are stored and durable" % len(lines))

        device = DEVICES[0]
        for path in ("/v1/tables/sensors/devices/%s/latest" % device,
                     "/v1/tables/sensors/devices/%s/readings?limit=3&order=desc" % device):
            status, answer = http("GET", base + path, token)
            if status != 200:
                raise QuickstartError("GET %s answered %d: %s" % (path, status, answer))
            print("\nGET %s -> %d" % (path, status))
            print(json.dumps(json.loads(answer), indent=2))

        print("\nand the same data at the serial console:")
        for query in ("devices sensors",
                      "measures sensors",
                      "latest sensors %s" % device,
                      "range sensors %s --limit 5" % device,
                      "agg sensors %s env temperature --step 15m --fn min,max,avg,count --from -1h"
                      % device):
            show(query, console.run(process, query))
        print("\nthe web page (tables, devices, latest values, a chart): %s/#token=%s" % (base, token))
    except QuickstartError as error:
        print("quickstart: %s" % error, file=sys.stderr)
        stop(process, args.timeout)
        return 1
    finally:
        if process.poll() is None:
            status = stop(process, args.timeout)
            if status is None:
                process.kill()
                process.wait()
        else:
            status = process.returncode
        log.close()
        os.close(master_fd)
        os.close(slave_fd)

    print("stopped cairnd with SIGTERM: %s" % (
        "exit status %d" % status if status is not None and status >= 0
        else "did not exit in time" if status is None else "killed by signal %d" % -status))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
