#!/usr/bin/env bash
# Makes a fresh Debian bookworm machine (root) ready for every cairn preset.
#
#   toolchains/install-deps.sh            install host tools and both ARM sysroots
#
# Idempotent: a second run installs nothing new and re-extracts a sysroot only
# when the package versions behind it changed.
#
# Why sysroots instead of `apt-get install libfoo-dev:arm64`: Multi-Arch "same"
# packages must carry the identical version on every architecture, and the
# archive often publishes a security update for amd64 hours before arm64 or
# armhf (libssl3 is the usual victim). A co-installed foreign -dev package then
# cannot be installed at all. We still use Debian's arm64/armhf packages, but
# extract them into /opt/cairn/sysroot/<arch> with dpkg-deb, which never has to
# agree with the host's versions. The cross compilers and C libraries come from
# crossbuild-essential-*, which live under /usr/<triplet>.
set -euo pipefail

SYSROOT_BASE=${CAIRN_SYSROOT_BASE:-/opt/cairn/sysroot}

log() { printf '[install-deps] %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: must run as root (it calls apt-get and dpkg)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive

HOST_PACKAGES=(
  build-essential cmake ninja-build pkg-config git file ca-certificates xz-utils python3
  crossbuild-essential-arm64 crossbuild-essential-armhf qemu-user
  clang-14 libclang-rt-14-dev
  libsqlite3-dev sqlite3 libmbedtls-dev libpaho-mqtt-dev libpaho-mqttpp-dev
  libzstd-dev libhttp-parser-dev zlib1g-dev libgtest-dev libgmock-dev libtomlplusplus-dev
  curl openssl python3-influxdb python3-pil chromium
  mosquitto mosquitto-clients postgresql libpq-dev
  influxdb influxdb-client
  lintian mmdebstrap help2man fakeroot systemd-container
  qemu-system-arm qemu-utils dosfstools mtools fdisk cpio kmod device-tree-compiler e2fsprogs
)

# Debian packages extracted into each ARM sysroot: the -dev packages cairn
# links against plus the runtime libraries they pull in (closure taken from
# `apt-cache depends`; libc, libstdc++ and libgcc come from crossbuild-essential).
# toml++ is used header-only (toolchains/Dependencies.cmake), so its runtime
# library libtomlplusplus3 is not needed.
SYSROOT_PACKAGES=(
  libsqlite3-dev libsqlite3-0
  libmbedtls-dev libmbedtls14 libmbedx509-1 libmbedcrypto7
  libpaho-mqtt-dev libpaho-mqtt1.3 libpaho-mqttpp-dev libpaho-mqttpp3-1 libssl3
  libzstd-dev libzstd1
  libhttp-parser-dev libhttp-parser2.9
  zlib1g-dev zlib1g
  libtomlplusplus-dev
  libgtest-dev libgmock-dev
  # libpq, for cairn-ingest's PostgreSQL sink, and the libraries it links
  libpq-dev libpq5 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2
  libkeyutils1 libldap-2.5-0 libsasl2-2 libsasl2-modules-db libdb5.3 libgnutls30 libgmp10
  libhogweed6 libnettle8 libidn2-0 libp11-kit0 libffi8 libtasn1-6 libunistring2
)

apt_update() {
  # A mirror caught mid-sync answers with a size mismatch; that is transient.
  local attempt
  for attempt in 1 2 3 4 5; do
    if apt-get update -q >/tmp/cairn-apt-update.log 2>&1; then return 0; fi
    log "apt-get update failed (attempt $attempt), retrying"
    sleep $((attempt * 5))
  done
  log "apt-get update kept failing; continuing with the indexes apt has:"
  grep -E '^(E|W):' /tmp/cairn-apt-update.log >&2 || true
}

missing_host_packages() {
  local p
  for p in "${HOST_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

foreign_arch_missing() {
  local a
  for a in arm64 armhf; do
    dpkg --print-foreign-architectures | grep -qx "$a" || return 0
  done
  return 1
}

need_update=0
if foreign_arch_missing; then
  dpkg --add-architecture arm64
  dpkg --add-architecture armhf
  need_update=1
fi
missing=$(missing_host_packages)
[ -n "$missing" ] && need_update=1
for arch in arm64 armhf; do
  [ -f "$SYSROOT_BASE/$arch/.versions" ] || need_update=1
done
[ "$need_update" = 1 ] && apt_update

if [ -n "$missing" ]; then
  log "installing host packages:" $missing
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
fi

# influxd is a benchmark peer and a reference for answers, started by the
# bench on loopback with its own directories. The package enables a service
# on port 8086, where cairnd listens by default: on a machine that runs
# systemd it is stopped and disabled, so that it neither takes the port nor
# runs beside the measurements.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] &&
   systemctl is-enabled influxdb >/dev/null 2>&1; then
  log "disabling the influxdb service (cairn-bench starts its own influxd)"
  systemctl disable --now influxdb >/dev/null 2>&1 || true
fi

# The integration tests run as root, but PostgreSQL refuses to: the test
# harness (tests/support/postgres_cluster) runs initdb, pg_ctl and the server
# as this system user. The harness creates it too when missing; creating it
# here keeps the test run from editing /etc/passwd.
if ! id -u cairn-pg >/dev/null 2>&1; then
  log "creating system user cairn-pg for the PostgreSQL tests"
  useradd --system --no-create-home --shell /usr/sbin/nologin cairn-pg
fi

build_sysroot() {
  local arch=$1 dir=$SYSROOT_BASE/$1 want have work p deb
  # One apt-cache call for all packages: "name=candidate" per line.
  want=$(apt-cache policy "${SYSROOT_PACKAGES[@]/%/:$arch}" |
         awk '/^[^ ].*:$/ {sub(/:.*/, ""); name=$0} /Candidate:/ {print name "=" $2}')
  if grep -q '=(none)$\|=$' <<<"$want"; then
    echo "install-deps.sh: no $arch candidate for:" >&2
    grep '=(none)$\|=$' <<<"$want" >&2
    exit 1
  fi
  # The layout line makes sysroots extracted before the merged-/usr step
  # below be extracted again.
  want=$(printf '%s\nlayout=merged-usr\n' "$want")
  have=$(cat "$dir/.versions" 2>/dev/null || true)
  if [ "$want" = "$have" ]; then
    log "sysroot $dir is current"
    return 0
  fi
  log "building sysroot $dir"
  work=$(mktemp -d)
  chmod 755 "$work"  # apt's download sandbox user must be able to write there
  chown _apt "$work" 2>/dev/null || true
  (cd "$work" && for p in "${SYSROOT_PACKAGES[@]}"; do
     apt-get download -q "$p:$arch" >/dev/null
   done)
  rm -rf "$dir.new" && mkdir -p "$dir.new"
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dir.new"; done
  rm -rf "$work"
  # Lay it out merged-/usr like a bookworm system, and point absolute links
  # inside the sysroot: zlib1g-dev's libz.so -> /lib/<triplet>/libz.so.1 would
  # dangle, and the linker would then take libz.a into cairnd.
  if [ -d "$dir.new/lib" ]; then
    cp -a "$dir.new/lib/." "$dir.new/usr/lib/" && rm -rf "$dir.new/lib" && ln -s usr/lib "$dir.new/lib"
  fi
  find "$dir.new" -type l -lname '/*' | while read -r link; do
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dir.new$(readlink "$link")")" "$link"
  done
  printf '%s\n' "$want" >"$dir.new/.versions"
  rm -rf "$dir" && mv "$dir.new" "$dir"
}

build_sysroot arm64
build_sysroot armhf

log "ready: host, aarch64 and armhf toolchains and libraries are installed"
