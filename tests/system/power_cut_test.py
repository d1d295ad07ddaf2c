#!/usr/bin/env python3
"""System test: power cuts on the emulated gateway.

    CAIRN_POWER_CUTS=N python3 tests/system/power_cut_test.py --arch arm64 IMAGE_DIR

Each cut: the gateway boots with its card behind QEMU's blklogwrites driver;
a client writes readings over HTTP (line protocol, 50 per request) and notes
each one the gateway acknowledged; at a random moment QEMU is SIGKILLed. The
card is then rebuilt as a real power cut leaves it (tests/system/logwrites.py):
at the last flush the guest completed, or at that flush plus a random subset
of the later writes applied in random order. The rebuilt data partition must
pass a full e2fsck (a journal to replay and orphans to clear are what a power
cut leaves; anything else is damage), and at the next boot every reading
acknowledged so far must be there exactly once. N defaults to 5.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logwrites  # noqa: E402
from gateway import BootFiles, Gateway, GatewayError, run_test  # noqa: E402

BATCH = 50
DATA_OFFSET_MIB_ARM64 = 31  # 1 MiB alignment + the 30 MiB boot partition (build-image.sh)


def http(gateway, token, method, path, body=None, timeout=15):
    request = urllib.request.Request(gateway.http_url + path, data=body, method=method,
                                     headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


def wait_http(gateway, token, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return http(gateway, token, "GET", "/v1/tables", timeout=5)
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise GatewayError("the HTTP API did not answer within %d s" % timeout)
            time.sleep(0.2)


class Writer(threading.Thread):
    """Writes numbered readings until stopped; keeps those acknowledged (204)."""

    def __init__(self, gateway, token, first_value, base_ms):
        super().__init__(daemon=True)
        self.gateway, self.token = gateway, token
        self.next_value, self.base_ms = first_value, base_ms
        self.acknowledged = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            values = range(self.next_value, self.next_value + BATCH)
            body = "".join("pc,device=cut v=%di %d\n" % (v, self.base_ms + v) for v in values).encode()
            self.next_value += BATCH
            try:
                status, _ = http(self.gateway, self.token, "POST", "/write?db=sensors&precision=ms", body)
            except (urllib.error.URLError, ConnectionError, OSError):
                return  # the power went away mid-request: not acknowledged
            if status == 204:
                self.acknowledged.extend(values)


def stored_values(gateway, token):
    values, page = [], None
    while True:
        path = "/v1/tables/sensors/devices/cut/readings?measure=pc&from=0&limit=1000"
        if page:
            path += "&page=" + urllib.request.quote(page)
        _, body = http(gateway, token, "GET", path, timeout=60)
        answer = json.loads(body)
        values += [record["v"] for record in answer["records"]]
        page = answer.get("next_page")
        if not page:
            return values


def check_data_partition(disk, work, offset_mib, size_mib):
    """A full e2fsck of the rebuilt data partition (on a copy)."""
    part = os.path.join(work, "data-check.ext4")
    subprocess.run(["dd", "if=%s" % disk, "of=%s" % part, "bs=1M", "skip=%d" % offset_mib, "count=%d" % size_mib,
                    "status=none"], check=True)
    result = subprocess.run(["e2fsck", "-f", "-p", part], capture_output=True, text=True)
    benign = re.compile(r"recovering journal|(Clearing|Truncating) orphaned inode|^\S+: (clean, )?\d+/\d+ files")
    damage = [line for line in (result.stdout + result.stderr).splitlines()
              if line.strip() and not benign.search(line)]
    os.unlink(part)
    if result.returncode & ~1 or damage:
        raise GatewayError("the data partition is damaged after the cut (e2fsck status %d):\n%s"
                           % (result.returncode, "\n".join(damage)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="arm64", choices=["arm64", "armhf"])
    parser.add_argument("--seed", type=int, default=int(os.environ.get("CAIRN_POWER_CUT_SEED", time.time())))
    parser.add_argument("image_dir")
    args = parser.parse_args()
    cuts = int(os.environ.get("CAIRN_POWER_CUTS", "5"))
    rng = random.Random(args.seed)
    boot = BootFiles(args.image_dir, args.arch)
    offset_mib = DATA_OFFSET_MIB_ARM64 if args.arch == "arm64" else 21
    size_mib = 64 - offset_mib
    print("power cuts: %d, seed %d (CAIRN_POWER_CUTS=N, CAIRN_POWER_CUT_SEED=S)" % (cuts, args.seed))
    rows = []
    with tempfile.TemporaryDirectory(prefix="cairn-power-") as work:
        disk, base, log = (os.path.join(work, name) for name in ("card.img", "base.img", "writes.log"))
        shutil.copy(boot.image, disk)
        acknowledged = []
        base_ms = (int(time.time()) - 6 * 3600) * 1000
        token = None
        for cut in range(cuts + 1):
            shutil.copy(disk, base)
            open(log, "wb").close()
            with Gateway(boot, disk, log_writes=log).start() as gateway:
                gateway.wait_ready(120)
                if token is None:
                    token = gateway.admin_token()
                wait_http(gateway, token)
                stored = stored_values(gateway, token)
                lost = len(set(acknowledged) - set(stored))
                duplicated = len(stored) - len(set(stored))
                if cut > 0:
                    rows[-1].update(lost=lost, duplicated=duplicated)
                if lost or duplicated:
                    raise GatewayError("after cut %d: %d acknowledged readings lost, %d duplicated"
                                       % (cut, lost, duplicated))
                fsck = gateway.output()
                if "would not mend unattended" in fsck:
                    raise GatewayError("the gateway's own boot check found damage:\n" + fsck[-2000:])
                if cut == cuts:
                    break
                writer = Writer(gateway, token, max(stored, default=0) + 1, base_ms)
                writer.start()
                time.sleep(rng.uniform(0.5, 4.0))
                gateway.kill()
                writer.join(20)
            acknowledged += writer.acknowledged
            mode = "last-flush" if cut % 2 == 0 else "random-after"
            report = logwrites.replay(base, log, disk, mode=mode, seed=rng.randrange(1 << 30))
            check_data_partition(disk, work, offset_mib, size_mib)
            rows.append(dict(cut=cut + 1, mode=mode, acked=len(writer.acknowledged), entries=len(report.log.entries),
                             applied=report.applied))
    print("%-4s %-13s %8s %12s %10s %5s %11s" % ("cut", "disk state", "acked", "log entries", "applied", "lost",
                                                 "duplicated"))
    for row in rows:
        print("%-4d %-13s %8d %12s %10s %5d %11d" % (row["cut"], row["mode"], row["acked"], row["entries"],
                                                     row["applied"], row["lost"], row["duplicated"]))
    total = sum(row["acked"] for row in rows)
    print("power cuts: %d, acknowledged readings: %d, lost: 0, duplicated: 0" % (cuts, total))
    return 0


if __name__ == "__main__":
    run_test(main)
