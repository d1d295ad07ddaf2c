"""Summary of a soak run: python3 soak_report.py OUT  ->  OUT/summary.txt

Reads OUT/soak.csv (soak.py's minute samples) and OUT/verdict.json (the
exact per-device check at the end) and writes min/max/last of each column,
the minutes with a loss or duplicates, a table every 5 minutes and text
charts of RSS, open files, threads and acknowledged/stored/synced.
"""

import csv
import json
import os
import sys

NUMERIC = ["rss_kb", "fds", "threads", "acked", "stored", "attempted", "synced", "unsynced", "data_bytes",
           "log_dir_bytes", "cairnd_log_bytes", "restarts", "queries_ok", "queries_wrong", "queries_failed",
           "write_retries", "lost", "duplicated", "hwm_kb", "latest_ms", "range_ms", "aggregate_ms"]
HEIGHT = 12
MARKS = "*o+"


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def chart(title, rows, columns, scale=1.0, unit=""):
    """A text chart, one column per sample; each series its own mark."""
    series = [[None if number(r.get(c)) is None else number(r.get(c)) / scale for r in rows] for c in columns]
    values = [v for s in series for v in s if v is not None]
    if not values:
        return "%s: no data\n" % title
    low, high = min(values), max(values)
    if high == low:
        high = low + 1
    grid = [[" "] * len(rows) for _ in range(HEIGHT)]
    # The first series is drawn last, on top of the others where they meet.
    for mark, points in reversed(list(zip(MARKS, series))):
        for x, value in enumerate(points):
            if value is not None:
                y = int(round((value - low) / (high - low) * (HEIGHT - 1)))
                grid[HEIGHT - 1 - y][x] = mark
    legend = ", ".join("%s %s" % (m, c) for m, c in zip(MARKS, columns))
    lines = ["%s (%s%s)" % (title, legend, ", " + unit if unit else "")]
    for i, row in enumerate(grid):
        level = high - (high - low) * i / (HEIGHT - 1)
        lines.append("%12.1f |%s" % (level, "".join(row)))
    lines.append(" " * 13 + "+" + "-" * len(rows))
    axis = "".join(str(int(r["minute"]) // 10 % 10) if int(r["minute"]) % 10 == 0 else " " for r in rows)
    lines.append(" " * 14 + axis + "   (minute, tens digit every 10)")
    return "\n".join(lines) + "\n"


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "soak.csv")) as f:
        rows = list(csv.DictReader(f))
    verdict = {}
    if os.path.exists(os.path.join(out, "verdict.json")):
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
    text = ["cairn soak run: %d samples, %s to %s UTC" % (len(rows), rows[0]["utc"], rows[-1]["utc"]), ""]
    text.append("%-18s %14s %14s %14s" % ("column", "min", "max", "last"))
    for column in NUMERIC:
        values = [number(r.get(column)) for r in rows if number(r.get(column)) is not None]
        if values:
            text.append("%-18s %14d %14d %14d" % (column, min(values), max(values), values[-1]))
    lost = [r["minute"] for r in rows if (number(r["lost"]) or 0) > 0]
    duplicated = [r["minute"] for r in rows if (number(r["duplicated"]) or 0) > 0]
    unanswered = [r["minute"] for r in rows if r["stored"] == ""]
    text += ["", "minutes with stored < acknowledged (loss): %s" % (", ".join(lost) or "none"),
             "minutes with stored > sent (duplicates): %s" % (", ".join(duplicated) or "none"),
             "minutes cairnd did not answer the sample: %s" % (", ".join(unanswered) or "none"), ""]
    if verdict:
        exact = sum(1 for d in verdict["devices"].values() if d["exact"])
        text.append("end of run: acknowledged %s, sent %s, stored %s, synced %s (distinct in cloud %s), "
                    "restarts %s, cairnd exit on SIGTERM %s; devices exact (count, min, max, sum of n): %d of %d"
                    % (verdict["acknowledged"], verdict["sent"], verdict["stored"], verdict["synced"],
                       verdict["cloud_distinct"], verdict["restarts"], verdict["cairnd_sigterm_status"], exact,
                       len(verdict["devices"])))
        for device, d in sorted(verdict["devices"].items()):
            if not d["exact"]:
                text.append("  %s: %s" % (device, d))
        text.append("")
    text.append("every 5 minutes:")
    text.append("%6s %8s %5s %7s %10s %10s %10s %8s %6s" % ("minute", "RSS MB", "fds", "threads", "acked", "stored",
                                                          "synced", "restarts", "broker"))
    for r in rows:
        if int(r["minute"]) % 5 == 0 or r is rows[-1]:
            rss = number(r["rss_kb"])
            text.append("%6s %8s %5s %7s %10s %10s %10s %8s %6s" % (
                r["minute"], "%.1f" % (rss / 1024) if rss else "-", r["fds"] or "-", r["threads"] or "-",
                r["acked"], r["stored"] or "-", r["synced"], r["restarts"], r["broker"]))
    text.append("")
    text.append(chart("RSS", rows, ["rss_kb", "hwm_kb"], 1024, "MB"))
    text.append(chart("open files", rows, ["fds"]))
    text.append(chart("threads", rows, ["threads"]))
    text.append(chart("readings", rows, ["acked", "stored", "synced"], 1e6, "millions"))
    text.append(chart("slowest query of the minute", rows, ["latest_ms", "range_ms", "aggregate_ms"], 1, "ms"))
    text.append(chart("data directory", rows, ["data_bytes", "log_dir_bytes"], 1 << 20, "MB"))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
