#!/usr/bin/env bash
# Tests the Debian packages the way a gateway owner uses them:
#
#   bash tests/package/run.sh          (as root; needs build/host and the apt mirror)
#
# 1. builds every package that has a build directory (firmware/package/build-debs.sh)
#    and a second cairn amd64 package one Debian revision up, for the upgrade;
# 2. runs lintian on each and fails on any error (E:);
# 3. makes a fresh bookworm root with mmdebstrap from this machine's apt sources
#    (cached under build/package-test/ for the day), installs the amd64 cairn
#    package with apt so its Depends are resolved from the mirror, and checks:
#    - `systemd-analyze verify` of the installed unit;
#    - the packaged user cairn (in group dialout) runs the installed cairnd with
#      the packaged config on /var/lib/cairn: a reading written over HTTP on
#      loopback reads back, and SIGTERM stops it with status 0; its serial
#      shell on a terminal that only group dialout may open answers `version`
#      (tests/package/serial_session.py);
#    - an upgrade over itself (revision + 1, --force-confold) keeps the edited
#      /etc/cairn/cairn.toml and the data: the reading is still there;
#    - booted with systemd-nspawn, cairnd.service runs under its sandbox as
#      cairn, serves the data, takes `systemctl reload` and stops cleanly;
#    - purge removes /usr/sbin/cairnd, the unit, /etc/cairn and /var/lib/cairn
#      and keeps the system user (firmware/package/README.md says why);
# 4. the same install, verify, run (--help) and purge for cairn-ingest;
# 5. prints package, arch, size and lintian counts.
#
# The root, its mounts and the cairnd it started are removed on any exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=$ROOT/build/package-test
DEBS=$ROOT/build/debs

fail() { echo "tests/package: FAIL: $*" >&2; exit 1; }
step() { printf '\n== package: %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (mmdebstrap, chroot, mounts)"
for tool in mmdebstrap lintian curl python3 dpkg-deb systemd-nspawn nsenter; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run toolchains/install-deps.sh"
done
[ -x "$ROOT/build/host/firmware/cairnd" ] || fail "build/host has no cairnd: cmake --build build/host --target cairnd cairn-ingest"

work=$(mktemp -d /tmp/cairn-package-test.XXXXXX)
chroot_dir=$work/root
cairnd_pid=""
nspawn_pid=""
cleanup() {
  local status=$?
  if [ -n "$cairnd_pid" ]; then kill -KILL "$cairnd_pid" 2>/dev/null || true; fi
  if [ -n "$nspawn_pid" ]; then stop_boot; fi
  for m in dev/pts dev proc; do
    mountpoint -q "$chroot_dir/$m" 2>/dev/null && umount -l "$chroot_dir/$m"
  done
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Ends the booted root: SIGTERM asks systemd-nspawn for a clean shutdown;
# killing the root's init ends every process in its pid namespace.
stop_boot() {
  kill -TERM "$nspawn_pid" 2>/dev/null || true
  timeout 30 tail --pid="$nspawn_pid" -f /dev/null 2>/dev/null || {
    [ -n "${init_pid:-}" ] && kill -KILL "$init_pid" 2>/dev/null
    kill -KILL "$nspawn_pid" 2>/dev/null || true
  }
  wait "$nspawn_pid" 2>/dev/null || true
  nspawn_pid=""
}

in_root() { chroot "$chroot_dir" "$@"; }
apt_in_root() {
  timeout 300 chroot "$chroot_dir" env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
    -o Dpkg::Options::=--force-confold "$@" >"$work/apt.log" 2>&1 || {
    tail -30 "$work/apt.log" >&2
    fail "apt-get $* in the bookworm root"
  }
}

step "build the packages"
timeout 300 bash "$ROOT/firmware/package/build-debs.sh"
CAIRN_DEB_REVISION=$(( ${CAIRN_DEB_REVISION:-1} + 1 )) CAIRN_DEB_OUT=$work/next timeout 300 bash "$ROOT/firmware/package/build-debs.sh" host >/dev/null
host_arch=$(dpkg --print-architecture)
cairn_deb=$(ls "$DEBS"/cairn_*_"$host_arch".deb)
next_deb=$(ls "$work"/next/cairn_*_"$host_arch".deb)
ingest_deb=$(ls "$DEBS"/cairn-ingest_*_"$host_arch".deb 2>/dev/null || true)

step "lintian"
declare -A lint_e lint_w
lint_failed=0
for deb in "$DEBS"/*.deb; do
  name=$(basename "$deb")
  lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>/dev/null || true
  sed 's/^/  /' "$work/lintian.txt"
  lint_e[$name]=$(grep -c '^E: ' "$work/lintian.txt" || true)
  lint_w[$name]=$(grep -c '^W: ' "$work/lintian.txt" || true)
  [ "${lint_e[$name]}" -eq 0 ] || { echo "  $name: lintian errors" >&2; lint_failed=1; }
done
[ "$lint_failed" -eq 0 ] || fail "lintian reports errors"

step "bookworm root (mmdebstrap)"
# This machine's apt sources, read now: the mirror is whatever it is configured with.
mapfile -t mirrors < <(python3 - <<'PY'
import glob, re
lines = []
def add(uri, suite, comps):
    if suite.startswith("bookworm"):
        lines.append("deb %s %s %s" % (uri, suite, " ".join(comps)))
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                add(uri, suite, fields.get("components", "main").split())
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        text = open(path).read()
    except OSError:
        continue
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb":
            add(words[1], words[2], words[3:] or ["main"])
print("\n".join(dict.fromkeys(lines)))
PY
)
[ ${#mirrors[@]} -gt 0 ] && [ -n "${mirrors[0]}" ] || fail "no bookworm apt source in /etc/apt"
includes=systemd,adduser,man-db
key=$(printf '%s\n' "$(date -u +%F)" "$includes" "${mirrors[@]}" | sha256sum | cut -c1-16)
tarball=$CACHE/bookworm-$key.tar
mkdir -p "$CACHE"
if [ ! -f "$tarball" ]; then
  rm -rf "$CACHE"/bookworm-*.tar "$CACHE"/bookworm-*.tar.part
  # Apt lists are kept so the root can install packages without an update.
  timeout 600 mmdebstrap --quiet --format=tar --variant=minbase --include="$includes" \
    --skip=cleanup/apt/lists bookworm "$tarball.part" "${mirrors[@]}" ||
    fail "mmdebstrap could not make a bookworm root"
  mv "$tarball.part" "$tarball"
fi
mkdir -p "$chroot_dir"
tar -C "$chroot_dir" -xf "$tarball"
mount -t proc proc "$chroot_dir/proc"
mount --bind /dev "$chroot_dir/dev"
mount --bind /dev/pts "$chroot_dir/dev/pts"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2>/dev/null || true

step "install cairn ($(basename "$cairn_deb"))"
cp "$cairn_deb" "$next_deb" "$chroot_dir/tmp/"
[ -n "$ingest_deb" ] && cp "$ingest_deb" "$chroot_dir/tmp/"
apt_in_root install --no-install-recommends "/tmp/$(basename "$cairn_deb")"
in_root test -x /usr/sbin/cairnd || fail "no /usr/sbin/cairnd after install"
in_root id -nG cairn | grep -qw dialout || fail "user cairn is not in group dialout"
[ "$(in_root stat -c %U:%G:%a /var/lib/cairn)" = cairn:cairn:750 ] || fail "/var/lib/cairn is not cairn:cairn 0750"
in_root test -L /etc/systemd/system/multi-user.target.wants/cairnd.service || fail "cairnd.service is not enabled"

step "systemd-analyze verify cairnd.service"
in_root systemd-analyze verify /lib/systemd/system/cairnd.service >"$work/verify.txt" 2>&1 || {
  cat "$work/verify.txt" >&2; fail "systemd-analyze verify cairnd.service"
}
[ ! -s "$work/verify.txt" ] || { cat "$work/verify.txt" >&2; fail "systemd-analyze verify printed warnings"; }
in_root cairnd config check --config /etc/cairn/cairn.toml || fail "the packaged config fails cairnd config check"

# The owner's edit: another loopback port (8086 may be taken here) and a table.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -i "s|^listen = '127.0.0.1:8086'$|listen = '127.0.0.1:$port'|" "$chroot_dir/etc/cairn/cairn.toml"
printf "\n[tables.sensors]\nperiod = 'day'\nretention = '30d'\n" >>"$chroot_dir/etc/cairn/cairn.toml"
in_root cairnd config check --config /etc/cairn/cairn.toml || fail "the edited config fails cairnd config check"

as_cairn() { in_root setpriv --reuid=cairn --regid=cairn --init-groups --inh-caps=-all "$@"; }
start_cairnd() {
  # chroot and setpriv exec: $! is cairnd's pid.
  chroot "$chroot_dir" setpriv --reuid=cairn --regid=cairn --init-groups --inh-caps=-all \
    /usr/sbin/cairnd --config /etc/cairn/cairn.toml >>"$work/cairnd.log" 2>&1 &
  cairnd_pid=$!
  local _
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/ping" && return 0
    kill -0 "$cairnd_pid" 2>/dev/null || { cat "$work/cairnd.log" >&2; fail "cairnd exited at start"; }
    sleep 0.1
  done
  cat "$work/cairnd.log" >&2
  fail "cairnd does not answer on 127.0.0.1:$port"
}
stop_cairnd() {
  local pid=$cairnd_pid status=0
  kill -TERM "$pid"
  timeout 60 tail --pid="$pid" -f /dev/null || fail "cairnd did not stop within 60 s of SIGTERM"
  wait "$pid" || status=$?
  cairnd_pid=""
  [ "$status" -eq 0 ] || { cat "$work/cairnd.log" >&2; fail "cairnd exited with $status after SIGTERM"; }
}
latest() {
  curl -sf -H "Authorization: Token $token" "http://127.0.0.1:$port/v1/tables/sensors/devices/gw-test/latest"
}

step "run the installed cairnd as user cairn"
token=$(as_cairn /usr/sbin/cairnd token create --name package-test --scope admin --data-dir /var/lib/cairn) ||
  fail "cairnd token create as user cairn"
start_cairnd
groups=$(awk '/^Groups:/ {$1=""; print}' "/proc/$cairnd_pid/status")
dialout=$(in_root getent group dialout | cut -d: -f3)
[ "$(readlink "/proc/$cairnd_pid/exe")" = "$chroot_dir/usr/sbin/cairnd" ] || fail "pid $cairnd_pid is not the installed cairnd"
[ "$(stat -c %u "/proc/$cairnd_pid")" = "$(in_root id -u cairn)" ] || fail "cairnd does not run as user cairn"
grep -qw "$dialout" <<<"$groups" || fail "cairnd runs without group dialout (groups:$groups)"
curl -sf -H "Authorization: Token $token" --data-binary "climate,device=gw-test temperature=21.5 $(date +%s)" \
  "http://127.0.0.1:$port/write?db=sensors&precision=s" || fail "POST /write"
latest | grep -q '21.5' || fail "the reading does not read back: $(latest || true)"
stop_cairnd
# The serial shell on a terminal of group dialout, which only the group reaches.
timeout 120 python3 "$ROOT/tests/package/serial_session.py" "$dialout" -- \
  chroot "$chroot_dir" setpriv --reuid=cairn --regid=cairn --init-groups --inh-caps=-all \
  /usr/sbin/cairnd --config /etc/cairn/cairn.toml || fail "the serial shell as user cairn"
[ "$(find "$chroot_dir/var/lib/cairn" ! -user "$(in_root id -u cairn)" | wc -l)" -eq 0 ] ||
  fail "files in /var/lib/cairn not owned by cairn"

step "upgrade over itself ($(basename "$next_deb"))"
apt_in_root install --no-install-recommends "/tmp/$(basename "$next_deb")"
[ "$(in_root dpkg-query -W -f='${Version}' cairn)" = "$(dpkg-deb -f "$next_deb" Version)" ] || fail "cairn was not upgraded"
grep -qx "listen = '127.0.0.1:$port'" "$chroot_dir/etc/cairn/cairn.toml" || fail "the upgrade lost the config edit"
grep -qx '\[tables.sensors\]' "$chroot_dir/etc/cairn/cairn.toml" || fail "the upgrade lost the config edit"
start_cairnd
latest | grep -q '21.5' || fail "the reading is gone after the upgrade: $(latest || true)"
stop_cairnd

step "cairnd.service under systemd (systemd-nspawn --boot)"
# The unit's sandbox, user and state directory for real: systemd as PID 1 of
# the root starts the enabled unit at boot.
umount "$chroot_dir/dev/pts" "$chroot_dir/dev" "$chroot_dir/proc"
systemd-nspawn --quiet --boot --register=no --keep-unit --directory="$chroot_dir" \
  >"$work/nspawn.log" 2>&1 </dev/null &
nspawn_pid=$!
in_boot() { nsenter --target "$init_pid" --all "$@"; }
init_pid=""
for _ in $(seq 1 300); do
  init_pid=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [ -n "$init_pid" ] && in_boot systemctl is-active --quiet cairnd 2>/dev/null && break
  kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/nspawn.log" >&2; fail "systemd-nspawn exited"; }
  sleep 0.2
done
in_boot systemctl is-active --quiet cairnd || {
  in_boot journalctl -u cairnd --no-pager >&2 || true; fail "cairnd.service is not active after boot"
}
main_pid=$(in_boot systemctl show -P MainPID cairnd)
# The unit's cairnd as seen from here: its innermost pid is the unit's MainPID.
host_pid=$(for p in $(pgrep -x cairnd); do [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$p/status")" = "$main_pid" ] && echo "$p"; done | head -1)
[ -n "$host_pid" ] || fail "no cairnd process of the unit"
grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$host_pid/status" || fail "the unit's cairnd may gain privileges"
grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$host_pid/status" || fail "the unit's cairnd keeps capabilities"
grep -q '^Seccomp:[[:space:]]*2' "/proc/$host_pid/status" || fail "the unit's cairnd has no system call filter"
[ "$(stat -c %u "/proc/$host_pid")" = "$(in_root id -u cairn)" ] || fail "the unit's cairnd does not run as cairn"
latest | grep -q '21.5' || fail "the unit's cairnd does not serve the reading: $(latest || true)"
curl -sf -H "Authorization: Token $token" --data-binary "climate,device=gw-test temperature=22.5 $(date +%s)" \
  "http://127.0.0.1:$port/write?db=sensors&precision=s" || fail "POST /write to the unit's cairnd"
in_boot systemctl reload cairnd || fail "systemctl reload cairnd"
for _ in $(seq 1 50); do in_boot journalctl -u cairnd --no-pager | grep -q 'SIGHUP' && break; sleep 0.1; done
in_boot journalctl -u cairnd --no-pager | grep -q 'SIGHUP' || fail "systemctl reload did not reach cairnd"
in_boot systemctl stop cairnd
[ "$(in_boot systemctl show -P Result cairnd)" = success ] && [ "$(in_boot systemctl show -P ExecMainStatus cairnd)" = 0 ] || {
  in_boot journalctl -u cairnd --no-pager >&2; fail "cairnd.service did not stop cleanly"
}
in_boot systemctl poweroff 2>/dev/null || true
timeout 60 tail --pid="$nspawn_pid" -f /dev/null || fail "the booted root did not power off"
wait "$nspawn_pid" || true
nspawn_pid=""
mount -t proc proc "$chroot_dir/proc"
mount --bind /dev "$chroot_dir/dev"
mount --bind /dev/pts "$chroot_dir/dev/pts"
start_cairnd
latest | grep -q '22.5' || fail "the reading written under systemd is gone: $(latest || true)"
stop_cairnd

step "purge cairn"
apt_in_root purge cairn
for path in /usr/sbin/cairnd /etc/cairn /var/lib/cairn /lib/systemd/system/cairnd.service \
            /etc/systemd/system/multi-user.target.wants/cairnd.service /usr/share/doc/cairn; do
  in_root test ! -e "$path" || fail "$path is still there after purge"
done
in_root id cairn >/dev/null || fail "purge removed the system user cairn (it is kept on purpose)"

if [ -n "$ingest_deb" ]; then
  step "install, verify and purge cairn-ingest ($(basename "$ingest_deb"))"
  apt_in_root install --no-install-recommends "/tmp/$(basename "$ingest_deb")"
  in_root systemd-analyze verify /lib/systemd/system/cairn-ingest.service >"$work/verify.txt" 2>&1 || {
    cat "$work/verify.txt" >&2; fail "systemd-analyze verify cairn-ingest.service"
  }
  [ ! -s "$work/verify.txt" ] || { cat "$work/verify.txt" >&2; fail "systemd-analyze verify printed warnings"; }
  in_root setpriv --reuid=cairn-ingest --regid=cairn-ingest --init-groups /usr/bin/cairn-ingest --help |
    grep -q -- '--broker' || fail "the installed cairn-ingest does not run"
  [ "$(in_root stat -c %U /var/lib/cairn-ingest)" = cairn-ingest ] || fail "/var/lib/cairn-ingest is not cairn-ingest's"
  apt_in_root purge cairn-ingest
  for path in /usr/bin/cairn-ingest /etc/default/cairn-ingest /var/lib/cairn-ingest \
              /lib/systemd/system/cairn-ingest.service; do
    in_root test ! -e "$path" || fail "$path is still there after purge"
  done
fi

step "packages"
printf '%-36s %-6s %9s %9s %9s\n' package arch "size KiB" "lintian E" "lintian W"
for deb in "$DEBS"/*.deb; do
  name=$(basename "$deb")
  printf '%-36s %-6s %9s %9s %9s\n' "$(dpkg-deb -f "$deb" Package)_$(dpkg-deb -f "$deb" Version)" \
    "$(dpkg-deb -f "$deb" Architecture)" "$(( ($(stat -c %s "$deb") + 1023) / 1024 ))" \
    "${lint_e[$name]}" "${lint_w[$name]}"
done
echo "package tests: 1 passed, 0 failed"
