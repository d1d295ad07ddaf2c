#!/usr/bin/python3
"""cairnd's web page in a real browser.

Starts cairnd with plain HTTP on a loopback port, writes an hour of readings
shaped like a sine through the Influx-compatible endpoint, opens the page at
`/` in Debian's headless Chromium, and checks what a technician would see:
the DOM carries the chart's series and the latest values, and the screenshot
shows a line of the first series' colour with the shape that was written.

usage: web_page_test.py [EMULATOR WORDS...] CAIRND
  The arguments form the command that runs cairnd (in a cross build the
  emulator's words come first). Needs /usr/bin/chromium and python3-pil;
  exits 0 when every check passes, 1 otherwise.
"""

import html.parser
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

CHROMIUM = os.environ.get("CAIRN_CHROMIUM", "/usr/bin/chromium")
# Every child is bounded; qemu-user runs of cairnd are slow, hence the margins.
COMMAND_TIMEOUT = 120
START_TIMEOUT = 120
HTTP_TIMEOUT = 60
BROWSER_TIMEOUT = 180

WINDOW = (1200, 900)
FIRST_SERIES_COLOR = (0xD9, 0x48, 0x0F)  # #d9480f, the page's first series colour
POINTS = 120
STEP_SECONDS = 30
DEVICE = "pump-1"
MEASURE = "env"


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)
    print("ok   " + message)


def temperature(i):
    # Two periods over the hour, the newest reading exactly 21.5.
    return round(21.5 + 3 * math.sin(2 * math.pi * (i - (POINTS - 1)) / 60), 3)


def humidity(i):
    return round(30 + 4 * math.sin(2 * math.pi * (i - (POINTS - 1)) / 60 + 1), 2)


def page_number(value):
    # The page prints numbers with at most six significant digits and no trailing zeros.
    return "%.6g" % value


class Daemon:
    """cairnd with plain HTTP on an ephemeral loopback port."""

    def __init__(self, command, data_dir):
        self.command = command
        self.data_dir = data_dir
        self.process = None
        self.log = []
        self.url = None
        self._listening = threading.Event()

    def start(self):
        self.process = subprocess.Popen(
            self.command + ["--data-dir", self.data_dir, "--http-listen", "127.0.0.1:0", "--http-plain"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self._listening.wait(START_TIMEOUT) or self.url is None:
            raise CheckFailed("cairnd did not log 'listening on http://ADDRESS:PORT' within %d s; its log:\n%s"
                              % (START_TIMEOUT, self.log_text()))
        print("ok   cairnd listens on " + self.url)

    def _read_log(self):
        # Keeps draining stderr so that cairnd never blocks on a full pipe.
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log.append(line)
            match = re.search(r"listening on (https?)://([0-9.]+):([0-9]+)", line)
            if match and self.url is None:
                if match.group(1) == "http":
                    self.url = "http://%s:%s" % (match.group(2), match.group(3))
                self._listening.set()
        self._listening.set()

    def log_text(self):
        return "\n".join(self.log[-40:])

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(COMMAND_TIMEOUT)


def http(method, url, headers=None, body=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def run_chromium(mode_arguments, url, scratch):
    profile = tempfile.mkdtemp(prefix="profile-", dir=scratch)
    home = tempfile.mkdtemp(prefix="home-", dir=scratch)
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--user-data-dir=" + profile, "--window-size=%d,%d" % WINDOW, "--virtual-time-budget=10000"]
    command += mode_arguments + [url]
    environment = dict(os.environ, HOME=home)
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment, start_new_session=True)
    try:
        out, err = process.communicate(timeout=BROWSER_TIMEOUT)
    except subprocess.TimeoutExpired:
        # Chromium's helpers share its process group, which this test created.
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise CheckFailed("chromium did not finish within %d s: %s" % (BROWSER_TIMEOUT, " ".join(mode_arguments)))
    err = err.decode("utf-8", "replace")
    if process.returncode != 0:
        raise CheckFailed("chromium exited with %d:\n%s" % (process.returncode, err[-3000:]))
    return out.decode("utf-8", "replace"), err


class DomReader(html.parser.HTMLParser):
    """Collects the chart's series, the latest values and the visible error banner."""

    def __init__(self):
        super().__init__()
        self.series = []  # attributes of each path.series inside svg#chart, in document order
        self.values = {}  # (measure, field) -> text
        self.chart_found = False
        self.error_text = ""
        self.error_hidden = True
        self.login_hidden = True
        self._chart_depth = 0
        self._value_key = None
        self._in_error = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if self._chart_depth:
            self._chart_depth += 1
        elif tag == "svg" and a.get("id") == "chart":
            self.chart_found = True
            self._chart_depth = 1
        if self._chart_depth and tag == "path" and "series" in classes:
            self.series.append(a)
        if "value" in classes and "data-field" in a:
            self._value_key = (a.get("data-measure"), a["data-field"])
            self.values[self._value_key] = ""
        if a.get("id") == "error":
            self.error_hidden = "hidden" in a
            self._in_error = True
        if a.get("id") == "login":
            self.login_hidden = "hidden" in a

    def handle_endtag(self, tag):
        if self._chart_depth:
            self._chart_depth -= 1
        self._value_key = None
        self._in_error = False

    def handle_data(self, data):
        if self._value_key:
            self.values[self._value_key] += data
        if self._in_error:
            self.error_text += data


def check_dom(dom):
    reader = DomReader()
    reader.feed(dom)
    check(reader.login_hidden, "the token was taken from the URL fragment (no login form)")
    check(reader.error_hidden, "no error banner is shown (%r)" % reader.error_text.strip())
    check(reader.chart_found, "the DOM has svg#chart")
    fields = [s.get("data-field") for s in reader.series]
    check(sorted(fields) == ["humidity", "temperature"], "#chart draws one path.series per field: %s" % fields)
    for s in reader.series:
        points = int(s.get("data-points", "0"))
        check(100 <= points <= POINTS, "series %s has %d points (100..%d written in the last hour)"
              % (s.get("data-field"), points, POINTS))
    first = reader.series[0]
    check(first.get("stroke", "").lower() == "#%02x%02x%02x" % FIRST_SERIES_COLOR,
          "the first series (%s) is drawn in #%02x%02x%02x" % ((first.get("data-field"),) + FIRST_SERIES_COLOR))
    expected = {"temperature": page_number(temperature(POINTS - 1)), "humidity": page_number(humidity(POINTS - 1))}
    for field, text in expected.items():
        shown = reader.values.get((MEASURE, field), "").strip()
        check(shown == text, "latest %s/%s shows %s (page shows %r)" % (MEASURE, field, text, shown))
    return first.get("data-field")


def near(pixel, color, tolerance=48):
    return all(abs(pixel[i] - color[i]) <= tolerance for i in range(3))


def check_screenshot(path):
    from PIL import Image

    image = Image.open(path).convert("RGB")
    check(image.size == WINDOW, "screenshot is %dx%d" % image.size)
    width, height = image.size
    colors = image.getcolors(maxcolors=width * height)
    dominant = max(count for count, _ in colors)
    check(len(colors) >= 50 and dominant < 0.97 * width * height,
          "screenshot is not blank (%d colours, the most common covers %.0f%%)"
          % (len(colors), 100.0 * dominant / (width * height)))

    pixels = image.load()
    matching = {(x, y) for y in range(height) for x in range(width) if near(pixels[x, y], FIRST_SERIES_COLOR)}
    # The line is the largest 8-connected blob of the series colour; the legend swatch is a small one.
    largest, seen = set(), set()
    for start in matching:
        if start in seen:
            continue
        blob, stack = set(), [start]
        seen.add(start)
        while stack:
            x, y = stack.pop()
            blob.add((x, y))
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    neighbour = (x + dx, y + dy)
                    if neighbour in matching and neighbour not in seen:
                        seen.add(neighbour)
                        stack.append(neighbour)
        if len(blob) > len(largest):
            largest = blob
    check(largest, "pixels of the first series colour are present (%d)" % len(matching))
    xs = [x for x, _ in largest]
    ys = [y for _, y in largest]
    span_x = max(xs) - min(xs) + 1
    span_y = max(ys) - min(ys) + 1
    check(span_x >= 0.4 * width, "the line spans %d px of the %d px wide window" % (span_x, width))
    check(span_x <= len(largest) <= 12 * span_x,
          "the line has %d pixels over %d columns: a stroke, not a filled area" % (len(largest), span_x))

    columns = {}
    for x, y in largest:
        columns.setdefault(x, []).append(y)
    profile = [sorted(columns[x])[len(columns[x]) // 2] for x in sorted(columns)]
    amplitude = max(profile) - min(profile)
    check(amplitude >= 40, "the line rises and falls by %d px" % amplitude)
    # Two periods of a sine cross their middle three to five times; hysteresis ignores pixel noise.
    middle = (max(profile) + min(profile)) / 2.0
    band = amplitude * 0.25
    crossings, side = 0, 0
    for y in profile:
        now_side = 1 if y > middle + band else -1 if y < middle - band else 0
        if now_side and side and now_side != side:
            crossings += 1
        if now_side:
            side = now_side
    check(3 <= crossings <= 6, "the line crosses its middle %d times (two sine periods written)" % crossings)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    command = sys.argv[1:]
    if not os.access(CHROMIUM, os.X_OK):
        print("FAIL chromium not found at %s: install Debian's chromium package "
              "(toolchains' dependency installer does)" % CHROMIUM, file=sys.stderr)
        return 1
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("FAIL %s cannot import PIL: install Debian's python3-pil and run this test with /usr/bin/python3"
              % sys.executable, file=sys.stderr)
        return 1

    scratch = tempfile.mkdtemp(prefix="cairn-web-test-")
    daemon = Daemon(command, os.path.join(scratch, "data"))
    try:
        # cairnd would create its data directory on first start; the token has to exist before that.
        os.mkdir(daemon.data_dir)
        created = subprocess.run(command + ["token", "create", "--data-dir", daemon.data_dir, "--name", "web",
                                            "--scope", "admin"],
                                 stdin=subprocess.DEVNULL, capture_output=True, timeout=COMMAND_TIMEOUT)
        lines = created.stdout.decode("utf-8", "replace").splitlines()
        check(created.returncode == 0 and lines and lines[0].strip(),
              "cairnd token create printed a token (exit %d%s)"
              % (created.returncode, "" if created.returncode == 0 else ": " + created.stderr.decode()[-500:]))
        token = lines[0].strip()

        daemon.start()
        status, _, body = http("GET", daemon.url + "/healthz")
        check(status == 200 and json.loads(body).get("status") == "ok", "GET /healthz answers status ok")

        status, headers, page = http("GET", daemon.url + "/")
        content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        check(status == 200 and content_type.startswith("text/html"), "GET / serves HTML (%d, %s)"
              % (status, content_type))
        check(len(page) < 30 * 1024, "the page is %d bytes (< 30 KB)" % len(page))
        external = re.findall(rb"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|@import|url\(\s*["']?(?:https?:)?//""",
                              page)
        check(not external, "the page loads nothing from elsewhere (works offline)")

        newest = int(time.time()) - 5
        lines = []
        for i in range(POINTS):
            stamp = newest - (POINTS - 1 - i) * STEP_SECONDS
            lines.append("%s,device=%s temperature=%s,humidity=%s %d"
                         % (MEASURE, DEVICE, temperature(i), humidity(i), stamp))
        status, _, body = http("POST", daemon.url + "/write?db=sensors&precision=s",
                               {"Authorization": "Token " + token, "Content-Type": "text/plain"},
                               "\n".join(lines).encode())
        check(status == 204, "POST /write stored %d readings over the last hour (%d %s)"
              % (POINTS, status, body.decode("utf-8", "replace")[:300]))

        auth = {"Authorization": "Bearer " + token}
        status, _, body = http("GET", daemon.url + "/v1/tables/sensors/devices/%s/readings?measure=%s&from=-1h&limit=1000"
                               % (DEVICE, MEASURE), auth)
        check(status == 200 and len(json.loads(body).get("records", [])) == POINTS,
              "GET /v1/.../readings returns the %d readings (%d)" % (POINTS, status))

        url = daemon.url + "/#token=%s&table=sensors&device=%s" % (urllib.request.quote(token, safe=""), DEVICE)
        screenshot = os.path.join(scratch, "page.png")
        run_chromium(["--screenshot=" + screenshot], url, scratch)
        check(os.path.getsize(screenshot) > 0, "chromium wrote a screenshot")
        # With logging on, the page's console messages (script errors, refused loads) reach stderr.
        dom, log = run_chromium(["--dump-dom", "--enable-logging=stderr", "--v=0"], url, scratch)
        console = [line for line in log.splitlines() if ":CONSOLE" in line]
        problems = [line for line in console if re.search(r"Uncaught|Refused|Failed to load|Error", line)]
        check(not problems, "the page logged no script error or refused load%s" % "".join("\n  " + p for p in problems))
        first_field = check_dom(dom)
        print("     screenshot checks follow for the %s line" % first_field)
        check_screenshot(screenshot)
        print("PASS web page: chart and latest values rendered by headless Chromium")
        return 0
    except CheckFailed as failure:
        print("FAIL " + str(failure), file=sys.stderr)
        if daemon.log:
            print("cairnd log (last lines):\n" + daemon.log_text(), file=sys.stderr)
        return 1
    finally:
        daemon.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
