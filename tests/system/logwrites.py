#!/usr/bin/env python3
"""Reads the write log QEMU's blklogwrites driver keeps of a disk and rebuilds
the disk as a power cut could have left it.

QEMU writes to the disk file and to the log as the guest writes; killing QEMU
leaves the host file with every write the guest issued, which is more than a
disk loses in a power cut. Replaying the log onto a copy of the disk as it was
before QEMU started gives the states a real cut can leave: everything up to the
last completed flush, and that plus any subset of the later writes.

The log format, as this tool reads it, is written down in logwrites.md beside
this file. Library use:

    log = parse_log("log.bin")
    result = replay("base.raw", "log.bin", "out.raw", mode="random-after", seed=3)

Command line:

    logwrites.py info LOG [--entries]
    logwrites.py replay --mode last-flush|random-after|all [--seed N]
                        [--upto N] [--discard zero|skip] BASE LOG OUT
"""

import argparse
import dataclasses
import os
import random
import struct
import sys

# Entry flags, as the Linux dm-log-writes target defines them.
FLAG_FLUSH = 1
FLAG_FUA = 2
FLAG_DISCARD = 4
FLAG_MARK = 8
FLAG_METADATA = 16
FLAG_MASK = FLAG_FLUSH | FLAG_FUA | FLAG_DISCARD | FLAG_MARK | FLAG_METADATA

MAGIC = 0x6A736677736872  # "rhswfsj" read as a little-endian integer
VERSION = 1
DEFAULT_SECTOR_SIZE = 512  # QEMU's log-sector-size when none is given

SUPER = struct.Struct("<QQQI")  # magic, version, nr_entries, sectorsize
ENTRY = struct.Struct("<QQQQ")  # sector, nr_sectors, flags, data_len

MODES = ("last-flush", "random-after", "all")

_FLAG_NAMES = ((FLAG_FLUSH, "FLUSH"), (FLAG_FUA, "FUA"), (FLAG_DISCARD, "DISCARD"),
               (FLAG_MARK, "MARK"), (FLAG_METADATA, "METADATA"))


class LogFormatError(Exception):
    """The file is not a write log this tool can read (bad magic, version or
    sector size). A log that merely ends early is not an error: see Log.stop."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One logged request. sector and nr_sectors count log sectors
    (Log.sector_size bytes); data_offset is where the written data starts in
    the log file (meaningless for flushes, discards and marks)."""
    index: int
    sector: int
    nr_sectors: int
    flags: int
    data_offset: int

    @property
    def is_flush(self):
        return bool(self.flags & FLAG_FLUSH)

    @property
    def is_discard(self):
        return bool(self.flags & FLAG_DISCARD)

    @property
    def changes_disk(self):
        """True for writes (including write-zeroes) and discards: the entries a
        replay applies. Marks never change the disk; a flush only when it
        carries data, which QEMU's flush entries never do."""
        return not self.flags & FLAG_MARK and self.nr_sectors > 0

    def flag_names(self):
        names = [name for bit, name in _FLAG_NAMES if self.flags & bit]
        return "|".join(names) if names else "WRITE"


@dataclasses.dataclass
class Log:
    """A parsed log: the super block's fields and every entry that could be read.

    super_present is False when sector 0 is all zeros: QEMU writes the super
    block only when the first flush completes, so a process killed before that
    leaves entries behind an empty sector 0. super_nr_entries is then 0.
    stop says why reading ended ("end of log" when the data simply ran out at
    an entry boundary)."""
    path: str
    sector_size: int
    super_present: bool
    super_nr_entries: int
    entries: list
    stop: str
    stop_offset: int

    def last_flush_index(self, upto=None):
        """Index of the last flush entry among the first `upto` entries (all
        when None), or -1 when there is none."""
        entries = self.entries if upto is None else self.entries[:upto]
        for entry in reversed(entries):
            if entry.is_flush:
                return entry.index
        return -1

    def warnings(self):
        """Facts a caller should see: today only a super block that counts more
        entries than could be read (see logwrites.md, "Reading a killed log")."""
        if self.super_nr_entries > len(self.entries):
            return [f"super block counts {self.super_nr_entries} entries but only "
                    f"{len(self.entries)} could be read ({self.stop} at byte "
                    f"{self.stop_offset})"]
        return []


def _read_super(head, sector_size):
    """Returns (sector_size, present, nr_entries) from the first bytes of the log."""
    if not any(head):
        return sector_size or DEFAULT_SECTOR_SIZE, False, 0
    if len(head) < SUPER.size:
        raise LogFormatError(f"{len(head)} bytes are too short for a log super block")
    magic, version, nr_entries, size = SUPER.unpack_from(head)
    if magic != MAGIC:
        raise LogFormatError(
            f"not a blklogwrites/dm-log-writes log: magic is {magic:#x}, expected {MAGIC:#x}")
    if version != VERSION:
        raise LogFormatError(f"unsupported log version {version} (this tool reads {VERSION})")
    if sector_size is not None and sector_size != size:
        raise LogFormatError(f"log sector size is {size}, not the {sector_size} asked for")
    return size, True, nr_entries


def _check_sector_size(size):
    # The entry header must fit one sector; QEMU requires a power of two below 16 MiB.
    if size < ENTRY.size or size >= 1 << 24 or size & (size - 1):
        raise LogFormatError(f"invalid log sector size {size}")


def _entry_problem(sector, nr_sectors, flags, padding, sector_size, disk_size):
    """Why a header cannot be a real entry, or None. These checks are what lets
    reading stop at the end of the valid log instead of trusting nr_entries."""
    if flags & ~FLAG_MASK:
        return f"invalid flags {flags:#x}"
    if not flags & (FLAG_FLUSH | FLAG_MARK) and nr_sectors == 0:
        return "write of zero sectors"
    if not flags & FLAG_MARK and any(padding):
        return "non-zero bytes after the entry header"
    if disk_size is not None and (sector + nr_sectors) * sector_size > disk_size:
        return "entry reaches past the end of the disk"
    return None


def parse_log(path, sector_size=None, disk_size=None):
    """Parses the log at `path`.

    Entries are read from sector 1 on until the file ends or a header is not a
    plausible entry; the super block's nr_entries is reported but not trusted,
    since QEMU updates it only on flush and a killed process leaves it behind.
    sector_size is needed only for a log without a super block (default 512);
    disk_size, when given, rejects entries that reach past the disk's end.
    Raises LogFormatError for a wrong magic, version or sector size."""
    with open(path, "rb") as log_file:
        head = log_file.read(SUPER.size)
        size, present, nr_entries = _read_super(head, sector_size)
        _check_sector_size(size)
        file_size = os.fstat(log_file.fileno()).st_size
        entries = []
        offset = size
        stop = "end of log"
        while True:
            if offset >= file_size:
                break
            if offset + size > file_size:
                stop = "log ends inside an entry header"
                break
            log_file.seek(offset)
            header = log_file.read(size)
            if not any(header):
                stop = "unwritten (all-zero) entry header"
                break
            sector, nr_sectors, flags, _data_len = ENTRY.unpack_from(header)
            problem = _entry_problem(sector, nr_sectors, flags, header[ENTRY.size:],
                                     size, disk_size)
            if problem:
                stop = f"entry {len(entries)}: {problem}"
                break
            data_bytes = 0 if flags & FLAG_DISCARD else nr_sectors * size
            if offset + size + data_bytes > file_size:
                stop = f"log ends inside the data of entry {len(entries)}"
                break
            entries.append(Entry(len(entries), sector, nr_sectors, flags, offset + size))
            offset += size + data_bytes
    return Log(path, size, present, nr_entries, entries, stop, offset)


@dataclasses.dataclass
class Plan:
    """Which entries a replay writes, in the order it writes them."""
    order: list
    durable: int    # entries of `order` that a flush or FUA made durable
    later: int      # entries of `order` chosen from the writes after the last flush
    dropped: int    # entries that change the disk but are not in `order`
    last_flush: int  # index of the last flush considered, -1 for none


def plan_replay(log, mode, seed=0, upto=None, keep_probability=0.5):
    """Chooses the entries to apply; see logwrites.md, "Replay states".

    A write (or discard) is durable when a flush entry comes after it in the
    log, or when it carries FUA. "last-flush" applies exactly the durable
    entries, in log order. "random-after" applies those, then each non-durable
    entry with probability keep_probability in a random order drawn from
    `seed`, then the FUA entries after the last flush once more so that no
    earlier-logged write lands over them. "all" applies every entry in log
    order. upto limits the log to its first `upto` entries, as if cut there."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if upto is not None and upto < 0:
        raise ValueError(f"upto must not be negative, got {upto}")
    entries = log.entries if upto is None else log.entries[:upto]
    changing = [entry for entry in entries if entry.changes_disk]
    last_flush = log.last_flush_index(upto)
    durable = [e for e in changing if e.index < last_flush or e.flags & FLAG_FUA]
    later = [e for e in changing if not (e.index < last_flush or e.flags & FLAG_FUA)]
    if mode == "all":
        return Plan(changing, len(durable), len(later), 0, last_flush)
    if mode == "last-flush":
        return Plan(durable, len(durable), 0, len(later), last_flush)
    rng = random.Random(seed)
    kept = [entry for entry in later if rng.random() < keep_probability]
    rng.shuffle(kept)
    fua_after = [e for e in durable if e.index > last_flush]
    return Plan(durable + kept + fua_after, len(durable), len(kept),
                len(later) - len(kept), last_flush)


def _copy_sparse(source, destination, chunk=1 << 20):
    """Copies a disk image, leaving all-zero chunks as holes so a large, mostly
    empty image costs little space."""
    with open(source, "rb") as src, open(destination, "wb") as dst:
        while True:
            block = src.read(chunk)
            if not block:
                break
            if any(block):
                dst.write(block)
            else:
                dst.seek(len(block), os.SEEK_CUR)
        dst.truncate()


def _apply(log, log_file, out_file, entry, discard):
    start = entry.sector * log.sector_size
    length = entry.nr_sectors * log.sector_size
    if entry.is_discard:
        if discard == "skip":
            return
        data = bytes(length)
    else:
        log_file.seek(entry.data_offset)
        data = log_file.read(length)
    out_file.seek(start)
    out_file.write(data)


@dataclasses.dataclass
class ReplayResult:
    """What a replay wrote: counts as in Plan, plus the parsed log."""
    log: Log
    plan: Plan

    @property
    def applied(self):
        """Distinct entries written (a FUA entry rewritten last counts once)."""
        return self.plan.durable + self.plan.later

    @property
    def dropped(self):
        return self.plan.dropped


def replay(base_image, log_path, out_image, mode="last-flush", seed=0, upto=None,
           discard="zero", sector_size=None):
    """Writes out_image: a copy of base_image (the disk as it was when the log
    began) with the entries plan_replay chooses applied. discard is "zero"
    (discarded ranges read back as zeros, as QEMU's raw files do after a hole
    punch) or "skip" (they keep their old data, as a disk may). Returns a
    ReplayResult. Raises LogFormatError for an unreadable log and ValueError
    for a bad mode or discard choice; out_image is not created then."""
    if discard not in ("zero", "skip"):
        raise ValueError(f"unknown discard choice {discard!r}; expected zero or skip")
    disk_size = os.path.getsize(base_image)
    log = parse_log(log_path, sector_size=sector_size, disk_size=disk_size)
    plan = plan_replay(log, mode, seed=seed, upto=upto)
    _copy_sparse(base_image, out_image)
    with open(log_path, "rb") as log_file, open(out_image, "r+b") as out_file:
        for entry in plan.order:
            _apply(log, log_file, out_file, entry, discard)
    return ReplayResult(log, plan)


def _print_info(log, show_entries, out):
    print(f"log: {log.path}", file=out)
    print(f"sector size: {log.sector_size}", file=out)
    if log.super_present:
        print(f"super block entries: {log.super_nr_entries}", file=out)
    else:
        print("super block entries: none (no flush completed)", file=out)
    flushes = sum(1 for entry in log.entries if entry.is_flush)
    print(f"readable entries: {len(log.entries)} ({flushes} flushes)", file=out)
    print(f"last flush: {log.last_flush_index()}", file=out)
    print(f"stopped: {log.stop} at byte {log.stop_offset}", file=out)
    if show_entries:
        print("index sector nr_sectors flags", file=out)
        for entry in log.entries:
            print(f"{entry.index} {entry.sector} {entry.nr_sectors} {entry.flag_names()}",
                  file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Read a blklogwrites log and rebuild a disk as a power cut leaves it.")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="describe a log")
    info.add_argument("log")
    info.add_argument("--entries", action="store_true", help="list every entry")
    info.add_argument("--sector-size", type=int, help="for a log without super block")
    rep = commands.add_parser("replay", help="write a disk image from base + log")
    rep.add_argument("--mode", choices=MODES, default="last-flush")
    rep.add_argument("--seed", type=int, default=0)
    rep.add_argument("--upto", type=int, help="consider only the first N entries")
    rep.add_argument("--discard", choices=("zero", "skip"), default="zero")
    rep.add_argument("--sector-size", type=int, help="for a log without super block")
    rep.add_argument("base")
    rep.add_argument("log")
    rep.add_argument("out")
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            log = parse_log(args.log, sector_size=args.sector_size)
            _print_info(log, args.entries, sys.stdout)
        else:
            result = replay(args.base, args.log, args.out, mode=args.mode, seed=args.seed,
                            upto=args.upto, discard=args.discard,
                            sector_size=args.sector_size)
            log, plan = result.log, result.plan
            print(f"mode {args.mode} seed {args.seed}: {len(log.entries)} entries read "
                  f"({log.stop}), last flush {plan.last_flush}, applied {result.applied} "
                  f"({plan.durable} durable, {plan.later} later), dropped {result.dropped}")
        for warning in log.warnings():
            print(f"warning: {warning}", file=sys.stderr)
    except (LogFormatError, OSError, ValueError) as error:
        print(f"logwrites: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
