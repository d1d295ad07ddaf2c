"""The cloud side on this machine's loopback, for the system sync test.

Mosquitto (the cloud broker), a PostgreSQL cluster (the cloud store) and
cairn-ingest (the host build of cloud/ingest) between them. Each starts on
a free loopback port in a scratch directory and stops with its context;
PostgreSQL runs as the cairn-pg system user (it refuses root), which
toolchains/install-deps.sh creates.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

from gateway import GatewayError, free_port


def wait_port(port, what, process, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise GatewayError("%s exited at start (status %d)" % (what, process.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise GatewayError("%s did not listen on 127.0.0.1:%d within %d s" % (what, port, timeout))


class Mosquitto:
    def __init__(self, work):
        self.port = free_port()
        self.config = os.path.join(work, "mosquitto.conf")
        with open(self.config, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % self.port)
        self.process = None

    def __enter__(self):
        self.process = subprocess.Popen(["mosquitto", "-c", self.config], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        wait_port(self.port, "mosquitto", self.process)
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(10)


class Postgres:
    USER = "cairn-pg"

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise GatewayError("no /usr/lib/postgresql/<version>/bin/initdb (Debian's postgresql)")
        self.bin = os.path.dirname(bins[-1])
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="cairn-pg-")
        self.data = os.path.join(self.dir, "data")
        entry = pwd.getpwnam(self.USER)
        os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        os.chmod(self.dir, 0o700)

    def run(self, *command, timeout=60):
        return subprocess.run(["runuser", "-u", self.USER, "--"] + list(command), capture_output=True,
                              text=True, timeout=timeout, cwd="/")

    def __enter__(self):
        result = self.run(self.bin + "/initdb", "--pgdata=" + self.data, "--username=" + self.USER, "--locale=C",
                          "--encoding=UTF8", "--auth-local=trust", "--no-instructions")
        if result.returncode != 0:
            raise GatewayError("initdb failed: " + result.stderr)
        options = "-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=on" % (
            self.port, self.dir)
        result = self.run(self.bin + "/pg_ctl", "start", "--pgdata=" + self.data, "--wait", "--timeout=60",
                          "--log=" + os.path.join(self.dir, "log"), "-o", options, timeout=90)
        if result.returncode != 0:
            raise GatewayError("pg_ctl start failed: " + result.stderr)
        return self

    @property
    def conninfo(self):
        return "host=%s port=%d user=%s dbname=postgres" % (self.dir, self.port, self.USER)

    def query(self, sql):
        result = self.run(self.bin + "/psql", "-X", "-A", "-t", "-h", self.dir, "-p", str(self.port),
                          "-d", "postgres", "-c", sql)
        if result.returncode != 0:
            raise GatewayError("psql %r failed: %s" % (sql, result.stderr))
        return result.stdout.strip()

    def __exit__(self, *exc):
        self.run(self.bin + "/pg_ctl", "stop", "--pgdata=" + self.data, "--mode=fast", "--wait", timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


class Ingest:
    """cairn-ingest between the broker and PostgreSQL, with one gateway's key."""

    def __init__(self, binary, broker_port, postgres, gateway_id, key_hex, work):
        if not os.access(binary, os.X_OK):
            raise GatewayError("%s is missing: build the host preset first (cairn-ingest)" % binary)
        self.keys = os.path.join(work, "ingest.keys")
        with open(self.keys, "w") as f:
            f.write("%s %s\n" % (gateway_id, key_hex))
        self.log_path = os.path.join(work, "ingest.log")
        self.command = [binary, "--broker", "tcp://127.0.0.1:%d" % broker_port, "--keys", self.keys,
                        "--postgres", postgres.conninfo, "--client-id", "cairn-ingest-system-test", "--progress-every", "1"]
        self.process = None

    def __enter__(self):
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        if self.process.poll() is not None:
            raise GatewayError("cairn-ingest exited at start:\n" + open(self.log_path).read())
        return self

    def log_tail(self, lines=20):
        self.log.flush()
        with open(self.log_path) as f:
            return "\n".join(f.read().splitlines()[-lines:])

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(20)
        self.log.close()
