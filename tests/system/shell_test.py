#!/usr/bin/env python3
"""System test: boot the gateway image and use cairnd's shell on the UART.

    python3 tests/system/shell_test.py --arch arm64 --machine virt IMAGE_DIR

Boots a copy of the image, prints boot-to-ready (QEMU start to the first
`cairn> ` prompt on the emulated UART), then types what an operator on a
serial cable would: version, put, latest, range, agg, help and a bad command,
checking each answer. Then cuts the power, boots again and checks the
acknowledged readings are still there, exactly once. With --bad-config it
also boots a card whose cairn.toml has a typo: the UART must name the file,
line and column, and the shell must still come up.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway import BootFiles, Gateway, GatewayError, run_test  # noqa: E402

ARCH_NAMES = {"arm64": "aarch64", "armhf": "armv7l"}


def expect(condition, what, answer):
    if not condition:
        raise GatewayError("%s; the shell answered:\n%s" % (what, answer))


def readings(gateway, device):
    answer = gateway.command("range sensors %s --limit 1000" % device)
    return [line.split()[2] for line in answer.splitlines()[1:] if line.startswith("20")]


def check_shell(gateway, arch, base_seconds):
    answer = gateway.command("version")
    expect(re.search(r"target_arch\s+%s" % ARCH_NAMES[arch], answer), "version names the wrong architecture", answer)
    values = ["21.5", "22.25", "-3.75"]
    for i, value in enumerate(values):
        answer = gateway.command("put sensors env,device=uart temp=%s %d" % (value, (base_seconds + i) * 10**9))
        expect(re.search(r"outcome\s+stored", answer), "put was not stored", answer)
    answer = gateway.command("latest sensors uart")
    expect("-3.75" in answer, "latest is not the newest reading", answer)
    expect(readings(gateway, "uart") == values, "range is not the three readings in order", "\n".join(values))
    answer = gateway.command("agg sensors uart env temp --step 1h --fn count,min,max --from %d --to %d"
                             % ((base_seconds - 10) * 10**9, (base_seconds + 10) * 10**9))
    rows = [line.split() for line in answer.splitlines()[1:] if line.startswith("20")]
    expect(len(rows) >= 1 and sum(int(r[1]) for r in rows) == 3, "agg did not count 3 readings", answer)
    expect(any(r[2] == "-3.75" for r in rows) and any(r[3] == "22.25" for r in rows), "agg min/max are wrong", answer)
    answer = gateway.command("help")
    for command in ("agg", "health", "latest", "put", "range", "sync", "version"):
        expect(re.search(r"^%s\b" % command, answer, re.M), "help does not list %s" % command, answer)
    answer = gateway.command("frobnicate now")
    expect(answer.startswith("error: unknown command 'frobnicate'"), "a bad command is not refused clearly", answer)
    answer = gateway.command("put sensors this is not line protocol")
    expect(answer.startswith("error:"), "bad line protocol is not refused", answer)
    answer = gateway.command("health")
    expect(re.search(r"^status\s+ok", answer, re.M), "health is not ok", answer)
    return values


def boot_and_check(boot, machine, work):
    disk = os.path.join(work, "card.img")
    shutil.copy(boot.image, disk)
    base_seconds = int(time.time()) - 3600
    with Gateway(boot, disk, machine=machine).start() as gateway:
        ready = gateway.wait_ready(120)
        values = check_shell(gateway, boot.arch, base_seconds)
    # Power cut right after the acknowledgements, then a second boot.
    with Gateway(boot, disk, machine=machine).start() as gateway:
        second_ready = gateway.wait_ready(120)
        got = readings(gateway, "uart")
        expect(got == values, "after a power cut the readings are not there exactly once", "\n".join(got))
    return ready, second_ready


def check_bad_config(boot, machine, work):
    disk = os.path.join(work, "bad-config.img")
    shutil.copy(boot.image, disk)
    bad = os.path.join(work, "cairn.toml")
    with open(bad, "w") as f:
        f.write("[storage]\ndurability = 'full'\n[http]\nplain = yes\n")
    # The boot partition starts at 1 MiB (firmware/image/README.md).
    subprocess.run(["mcopy", "-o", "-i", "%s@@1M" % disk, bad, "::cairn.toml"], check=True)
    with Gateway(boot, disk, machine=machine).start() as gateway:
        gateway.wait_ready(120)
        error = gateway.wait_for(r"cairn\.toml:4:\d+[^\n]*", 5).group(0)
        gateway.wait_for(r"cairn: /boot/cairn.toml is invalid", 5)
        answer = gateway.command("health")
        expect(re.search(r"^status\s+ok", answer, re.M), "health is not ok on the default config", answer)
    return error.strip()


DATA_OFFSET_MIB = {"arm64": 31, "armhf": 21}  # build-image.sh: 1 MiB + the boot partition


def with_data_partition(disk, arch, work, change):
    """Runs change(path) on the card's data partition, copied out and back."""
    part = os.path.join(work, "data.ext4")
    offset = DATA_OFFSET_MIB[arch]
    subprocess.run(["dd", "if=" + disk, "of=" + part, "bs=1M", "skip=%d" % offset, "status=none"], check=True)
    change(part)
    subprocess.run(["dd", "if=" + part, "of=" + disk, "bs=1M", "seek=%d" % offset, "conv=notrunc", "status=none"],
                   check=True)
    os.unlink(part)


def fill(part):
    """Leaves the file system no free block: one file takes them all."""
    header = subprocess.run(["dumpe2fs", "-h", part], capture_output=True, text=True, check=True).stdout
    free = int(re.search(r"^Free blocks:\s+(\d+)", header, re.M).group(1))
    filler = part + ".filler"
    with open(filler, "wb") as f:  # real bytes: debugfs copies holes as holes
        for _ in range(free):
            f.write(b"\xa5" * 4096)
    subprocess.run(["debugfs", "-w", "-R", "write %s filler" % filler, part], capture_output=True, check=True)
    os.unlink(filler)


def read_only(part):
    """Marks ext4 read-only, as a card at the end of its life may force."""
    subprocess.run(["tune2fs", "-O", "read-only", part], capture_output=True, check=True)


def check_bad_disk(boot, machine, work):
    """A full, then a read-only data partition: the shell comes up and says so."""
    said = []
    for name, change, pattern in (("full", fill, r"full|space"), ("read-only", read_only, r"read-only")):
        disk = os.path.join(work, "%s.img" % name)
        shutil.copy(boot.image, disk)
        with_data_partition(disk, boot.arch, work, change)
        with Gateway(boot, disk, machine=machine).start() as gateway:
            gateway.wait_ready(120)
            answer = gateway.command("health")
            expect(not re.search(r"^status\s+ok$", answer, re.M), "health is ok on a %s data partition" % name,
                   answer)
            expect(re.search(pattern, answer), "health does not name the %s data partition" % name, answer)
            put = gateway.command("put sensors env,device=uart temp=1 %d" % (int(time.time()) * 10**9))
            expect(put.startswith("error:"), "put on a %s data partition did not answer an error" % name, put)
            problem = [line for line in answer.splitlines() if line.startswith(("status", "problem"))]
            said.append("%s data partition: health says %s" % (name, " / ".join(" ".join(l.split()) for l in problem)))
    return said


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", required=True, choices=["arm64", "armhf"])
    parser.add_argument("--machine", default="virt", choices=["virt", "raspi3b"])
    parser.add_argument("--bad-config", action="store_true")
    parser.add_argument("--bad-disk", action="store_true")
    parser.add_argument("image_dir")
    args = parser.parse_args()
    boot = BootFiles(args.image_dir, args.arch)
    with tempfile.TemporaryDirectory(prefix="cairn-system-") as work:
        ready, second_ready = boot_and_check(boot, args.machine, work)
        print("%s on %s: boot-to-ready %.2f s (first boot), %.2f s (after a power cut)"
              % (args.arch, args.machine, ready, second_ready))
        print("%s on %s: shell answered version, put, latest, range, agg, help, a bad command; "
              "3 acknowledged readings present once after the cut" % (args.arch, args.machine))
        if args.bad_config:
            print("%s on %s: a bad cairn.toml on the boot partition: the UART says: %s"
                  % (args.arch, args.machine, check_bad_config(boot, args.machine, work)))
        if args.bad_disk:
            for line in check_bad_disk(boot, args.machine, work):
                print("%s on %s: a %s" % (args.arch, args.machine, line))
    return 0


if __name__ == "__main__":
    run_test(main)
