"""An emulated cairn gateway: the image from firmware/image booted in QEMU.

A Gateway boots one image (arm64 or armhf) on one machine (`virt`, or
`raspi3b` for arm64) under software emulation. Its first UART is a pipe to
this process: `command()` types a line into cairnd's serial shell and returns
the answer, exactly as an operator on a serial cable sees it. On `virt` the
guest's port 8086 is forwarded to a free loopback port (`http_url`), and the
guest reaches this machine's loopback services at 10.0.2.2 (QEMU user-mode
networking). With `log_writes`, the disk sits behind QEMU's blklogwrites
driver, so a power cut can be replayed (tests/system/logwrites.py).

Nothing here waits without a bound: every wait has a timeout and raises
GatewayError naming what did not appear, with the UART's last lines.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

PROMPT = "cairn> "
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class GatewayError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def image_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(cairn VERSION ([0-9.]+)", f.read()).group(1)


class BootFiles:
    """The files build-image.sh left in IMAGE_DIR for one architecture."""

    def __init__(self, image_dir, arch):
        stem = os.path.join(image_dir, "cairn-%s-%s" % (image_version(), arch))
        self.arch = arch
        self.image = stem + ".img"
        self.kernel = stem + ".vmlinuz"
        self.initrd = stem + ".initrd.img"
        self.rpi3b_dtb = stem + ".rpi3b.dtb"
        with open(stem + ".cmdline") as f:
            self.cmdline = f.read().strip()
        for path in (self.image, self.kernel, self.initrd):
            if not os.path.exists(path):
                raise GatewayError("%s is missing: run firmware/image/build-image.sh %s" % (path, arch))


class Gateway:
    def __init__(self, boot, disk, machine="virt", log_writes=None, append="", memory_mib=512):
        self.boot = boot
        self.disk = disk
        self.machine = machine
        self.log_writes = log_writes
        self.append = append
        self.memory_mib = memory_mib
        self.http_port = free_port() if machine == "virt" else None
        self.process = None
        self.started_at = None
        self._output = bytearray()
        self._cond = threading.Condition()
        self._reader = None

    # --- lifecycle ---------------------------------------------------------
    def qemu_command(self):
        # cairn.ntp points at the host's user-mode address: the tests never
        # reach past this machine, and no NTP answers there.
        # CAIRN_SYSTEM_LOG=console puts cairnd's log on the UART, for looking
        # into a failure by hand (it interleaves with the shell's answers).
        log = " cairn.log=console" if os.environ.get("CAIRN_SYSTEM_LOG") == "console" else ""
        cmdline = "%s cairn.ntp=10.0.2.2 %s%s" % (self.boot.cmdline, self.append, log)
        if self.machine == "raspi3b":
            command = ["qemu-system-aarch64", "-M", "raspi3b", "-m", "1G", "-dtb", self.boot.rpi3b_dtb,
                       "-drive", "if=sd,format=raw,file=%s" % self.disk]
        else:
            if self.boot.arch == "arm64":
                command = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a53"]
            else:
                command = ["qemu-system-arm", "-M", "virt", "-cpu", "cortex-a15"]
            command += ["-m", str(self.memory_mib), "-device", "virtio-blk-device,drive=disk",
                        "-netdev", "user,id=net,hostfwd=tcp:127.0.0.1:%d-:8086" % self.http_port,
                        "-device", "virtio-net-device,netdev=net"]
            command += self._disk_options()
        return command + ["-kernel", self.boot.kernel, "-initrd", self.boot.initrd, "-append", cmdline,
                          "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"]

    def _disk_options(self):
        if self.log_writes is None:
            return ["-drive", "if=none,id=disk,format=raw,cache=writeback,file=%s" % self.disk]
        # Write-back cache: durability then rests on the guest's flushes,
        # which blklogwrites records (tests/system/logwrites.md).
        return ["-blockdev", "driver=file,node-name=base,filename=%s" % self.disk,
                "-blockdev", "driver=file,node-name=log,filename=%s" % self.log_writes,
                "-blockdev", "driver=blklogwrites,node-name=disk,file=base,log=log,log-append=off"]

    def start(self):
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(self.qemu_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self):
        while True:
            chunk = self.process.stdout.read1(4096)
            with self._cond:
                if not chunk:
                    self._cond.notify_all()
                    return
                self._output += chunk
                self._cond.notify_all()

    def kill(self):
        """A power cut: QEMU dies at once, with whatever the guest had in flight."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        if self._reader:
            self._reader.join(10)

    stop = kill  # the gateway has no shutdown of its own: power goes away

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    # --- the UART ----------------------------------------------------------
    def output(self, start=0):
        with self._cond:
            return self._output[start:].decode("utf-8", "replace")

    def mark(self):
        with self._cond:
            return len(self._output)

    def wait_for(self, pattern, timeout, start=0):
        """Waits until PATTERN (a regex) appears in the UART output after START."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self._cond:
            while True:
                text = self._output[start:].decode("utf-8", "replace")
                found = regex.search(text)
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    tail = "\n".join(text.splitlines()[-15:])
                    raise GatewayError("no %r on the UART within %.0f s; last lines:\n%s" % (pattern, timeout, tail))
                self._cond.wait(min(left, 0.5))

    def wait_ready(self, timeout=60):
        """Waits for the shell's first prompt; returns seconds since QEMU started."""
        self.wait_for(re.escape(PROMPT), timeout)
        return time.monotonic() - self.started_at

    def command(self, line, timeout=30):
        """Types LINE into the shell; returns its answer (without echo and prompt)."""
        start = self.mark()
        self.process.stdin.write(line.encode() + b"\r")
        self.process.stdin.flush()
        self.wait_for(re.escape(line) + r"\r?\n(?:.*\n)*?" + re.escape(PROMPT), timeout, start)
        text = self.output(start).replace("\r\n", "\n")
        answer = text.split("\n", 1)[1] if "\n" in text else ""
        return answer.rsplit(PROMPT, 1)[0].rstrip("\n")

    def admin_token(self):
        found = self.wait_for(r"\(shown once; store it now\):\r?\n(cairn_[A-Za-z0-9_-]+)", 5)
        return found.group(1)

    @property
    def http_url(self):
        return "http://127.0.0.1:%d" % self.http_port


def run_test(main):
    """Runs a system test's main(): exit status 0, or 1 with the failure said."""
    try:
        sys.exit(main())
    except GatewayError as error:
        print("FAIL: %s" % error, file=sys.stderr)
        sys.exit(1)
