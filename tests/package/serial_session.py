#!/usr/bin/env python3
"""Runs the installed cairnd with its serial shell on a pseudo-terminal.

    serial_session.py GID -- COMMAND...

Opens a pty pair, gives the terminal to group GID (the root's dialout) with
mode 0660 and to no user that cairnd runs as, so only the dialout group
reaches it; runs COMMAND with "--serial <terminal>" appended (COMMAND starts
cairnd in the test's root as user cairn); waits for the shell's prompt, types
`version`, expects the version line, then stops cairnd with SIGTERM and
expects exit status 0. Exits non-zero with the reason on any other outcome.
"""
import os
import re
import select
import signal
import subprocess
import sys
import time


def read_until(fd, needle, timeout):
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no %r within %ss; the terminal showed %r" % (needle, timeout, seen[-400:]))
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # EIO: the other side closed
                raise TimeoutError("the terminal closed; it showed %r" % seen[-400:])
    return seen


def main():
    gid = int(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1:]
    master, slave = os.openpty()
    terminal = os.ttyname(slave)
    os.chown(terminal, 0, gid)
    os.chmod(terminal, 0o660)
    process = subprocess.Popen(command + ["--serial", terminal], stdin=subprocess.DEVNULL)
    try:
        read_until(master, b"cairn> ", 20)
        os.write(master, b"version\r")
        answer = read_until(master, b"cairn> ", 10)
        if not re.search(rb"version\s+\d+\.\d+\.\d+", answer):
            raise RuntimeError("`version` answered %r" % answer)
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=60)
        if status != 0:
            raise RuntimeError("cairnd exited with %d after SIGTERM" % status)
    except Exception as error:  # report, and never leave cairnd running
        process.kill()
        process.wait()
        print("serial session: %s" % error, file=sys.stderr)
        return 1
    finally:
        os.close(slave)
        os.close(master)
    print("serial session on %s: prompt, version, SIGTERM -> 0" % terminal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
