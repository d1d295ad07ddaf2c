#!/usr/bin/env bash
# Builds the Debian packages of cairn from the preset build directories.
#
#   bash firmware/package/build-debs.sh [PRESET...]
#
# PRESET is host (amd64), aarch64 (arm64) or armhf; without one, every preset
# whose build directory has cairnd built. For each: build/debs/cairn_<version>_<arch>.deb
# (cairnd) and, where the build has it, build/debs/cairn-ingest_<version>_<arch>.deb.
# <version> is the CMake project version plus a Debian revision
# (CAIRN_DEB_REVISION, default 1). Build the binaries first, e.g.
#   cmake --preset aarch64 && cmake --build build/aarch64 --target cairnd cairn-ingest
# CAIRN_DEB_OUT changes the output directory.
#
# Why dpkg-deb from a script and not CPack DEB: the binaries already exist in
# three build directories, and one command packages all of them without
# configuring anything again; the maintainer scripts, conffiles and unit are
# plain files here rather than CPack variables; and the Depends of a cross
# build need the handling below, which CPack's dpkg-shlibdeps call cannot do.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CAIRN_DEB_OUT:-$root/build/debs}
revision=${CAIRN_DEB_REVISION:-1}
maintainer=${CAIRN_DEB_MAINTAINER:-cairn maintainers <maintainers@cairn.example.org>}

die() { echo "build-debs.sh: $*" >&2; exit 1; }
log() { echo "[build-debs] $*"; }

for tool in dpkg-deb dpkg-shlibdeps help2man fakeroot; do
  command -v "$tool" >/dev/null || die "$tool is missing: run toolchains/install-deps.sh as root"
done

# preset -> Debian architecture, GNU triplet, and how to run its binaries here.
preset_arch() {
  case $1 in
    host) dpkg --print-architecture ;;
    aarch64) echo arm64 ;;
    armhf) echo armhf ;;
    *) die "unknown preset '$1' (host, aarch64 or armhf)" ;;
  esac
}
arch_triplet() { dpkg-architecture -qDEB_HOST_MULTIARCH -a"$1" 2>/dev/null; }
arch_runner() {
  case $1 in
    "$(dpkg --print-architecture)") echo "" ;;
    arm64) echo "qemu-aarch64 -L /usr/aarch64-linux-gnu" ;;
    armhf) echo "qemu-arm -L /usr/arm-linux-gnueabihf" ;;
  esac
}

# Depends of a foreign-architecture binary. dpkg-shlibdeps looks libraries up
# in the dpkg database, and the ARM libraries are not installed there: they are
# extracted into /opt/cairn/sysroot/<arch> (toolchains/install-deps.sh). So
# each DT_NEEDED soname maps to the bookworm package and minimum version that
# dpkg-shlibdeps gives for the same library on amd64 (the symbols files behind
# those versions are the same on every architecture), except libgcc-s1,
# whose armhf symbols need 3.5. A soname missing here fails the build rather
# than going unlisted.
declare -A cross_depends=(
  [libc.so.6]="libc6 (>= 2.34)" [libm.so.6]="libc6 (>= 2.34)"
  [ld-linux-aarch64.so.1]="libc6 (>= 2.34)" [ld-linux-armhf.so.3]="libc6 (>= 2.34)"
  [libgcc_s.so.1]="libgcc-s1 (>= 3.5)" [libstdc++.so.6]="libstdc++6 (>= 12)"
  [libatomic.so.1]="libatomic1 (>= 4.8)"
  [libhttp_parser.so.2.9]="libhttp-parser2.9 (>= 2.7.1)"
  [libz.so.1]="zlib1g (>= 1:1.1.4)" [libzstd.so.1]="libzstd1 (>= 1.5.2)"
  [libpaho-mqttpp3.so.1]="libpaho-mqttpp3-1 (>= 1.2.0)"
  [libpaho-mqtt3as.so.1]="libpaho-mqtt1.3 (>= 1.3.0)"
  [libsqlite3.so.0]="libsqlite3-0 (>= 3.32.0)"
  [libmbedtls.so.14]="libmbedtls14 (>= 2.28.0)" [libmbedx509.so.1]="libmbedx509-1 (>= 2.28.0)"
  [libmbedcrypto.so.7]="libmbedcrypto7 (>= 2.28.0)" [libpq.so.5]="libpq5"
)

shlib_depends() { # staged-binary arch
  local binary=$1 arch=$2 work soname
  if [ "$arch" = "$(dpkg --print-architecture)" ]; then
    work=$(mktemp -d)
    mkdir "$work/debian"
    printf 'Source: cairn\n\nPackage: cairn\nArchitecture: any\n' >"$work/debian/control"
    (cd "$work" && dpkg-shlibdeps -O "$binary" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
    rm -rf "$work"
    return
  fi
  for soname in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -n "${cross_depends[$soname]:-}" ] || die "no known package for $soname (needed by $binary): add it to cross_depends"
    echo "${cross_depends[$soname]}"
  done | sort -u | paste -sd, | sed 's/,/, /g'
}

# Copies a built binary, stripped and without the build tree's RPATH (the
# cross builds point it at the sysroot).
stage_binary() { # source dest triplet
  local strip=strip
  [ "$3" = "$(dpkg-architecture -qDEB_BUILD_MULTIARCH)" ] || strip=$3-strip
  install -D -m 0755 "$1" "$2"
  "$strip" --strip-unneeded --remove-section=.comment --remove-section=.note "$2"
  printf 'file(RPATH_REMOVE FILE "%s")\n' "$2" >"$2.cmake"
  cmake -P "$2.cmake" >/dev/null && rm "$2.cmake"
}

# Man page from the binary's --help, run under qemu-user for ARM builds.
make_man() { # binary section description runner dest version name
  local wrap
  wrap=$(mktemp -d)/$7
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$4" "$1" >"$wrap"
  chmod +x "$wrap"
  install -d "$(dirname "$5")"
  help2man --no-info --no-discard-stderr --section="$2" --name="$3" \
    --version-string="$6" "$wrap" >"$5.tmp"
  rm -rf "$(dirname "$wrap")"
  gzip -9n <"$5.tmp" >"$5" && rm "$5.tmp"
}

write_doc() { # pkgroot package version
  local doc=$1/usr/share/doc/$2
  install -d "$doc"
  install -m 0644 "$here/copyright" "$doc/copyright"
  {
    printf '%s (%s) bookworm; urgency=medium\n\n' "$2" "$3"
    printf '  * Package of cairn %s built from the project'"'"'s CMake build.\n\n' "${3%-*}"
    printf ' -- %s  %s\n' "$maintainer" "$(date -R -d "@$SOURCE_DATE_EPOCH")"
  } | gzip -9n >"$doc/changelog.Debian.gz"
}

# Maintainer scripts from the templates beside this file.
write_scripts() { # pkgroot package user unit statedir groups
  local s
  for s in postinst prerm postrm; do
    sed -e "s|@PKG@|$2|g" -e "s|@USER@|$3|g" -e "s|@UNIT@|$4|g" \
        -e "s|@STATEDIR@|$5|g" -e "s|@GROUPS@|$6|g" "$here/$s.in" >"$1/DEBIAN/$s"
    chmod 0755 "$1/DEBIAN/$s"
  done
}

finish_deb() { # pkgroot package version arch depends description-line description-body
  local pkgroot=$1 size
  (cd "$pkgroot" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
     xargs -0 md5sum >DEBIAN/md5sums)
  chmod 0644 "$pkgroot/DEBIAN/md5sums"
  size=$(du -k -s --exclude=DEBIAN "$pkgroot" | cut -f1)
  cat >"$pkgroot/DEBIAN/control" <<CONTROL
Package: $2
Version: $3
Architecture: $4
Maintainer: $maintainer
Installed-Size: $size
Depends: $5
Section: database
Priority: optional
Description: $6
$7
CONTROL
  find "$pkgroot" -type d -exec chmod 0755 {} +
  fakeroot dpkg-deb -Zxz --root-owner-group --build "$pkgroot" "$out/${2}_${3}_$4.deb" >/dev/null
  log "built $out/${2}_${3}_$4.deb"
}

build_cairn() { # builddir arch triplet version runner
  local pkgroot=$work/cairn-$2
  mkdir -p "$pkgroot/DEBIAN"
  stage_binary "$1/firmware/cairnd" "$pkgroot/usr/sbin/cairnd" "$3"
  # The example config, but serving plain HTTP on loopback only, so that an
  # installed cairnd starts (a config that serves nothing is refused) and
  # exposes nothing to the network until its owner sets TLS or a serial tty.
  install -d "$pkgroot/etc/cairn"
  sed -e "s|^listen = '0.0.0.0:8086'$|listen = '127.0.0.1:8086'|" \
      -e 's|^plain = false$|plain = true|' \
      -e '1i # Installed by the cairn package: HTTP serves loopback only (127.0.0.1:8086),\n# plain. Listen on 0.0.0.0 only with tls.cert and tls.key, or on a trusted network.\n#' \
      "$root/firmware/cairn.toml.example" >"$pkgroot/etc/cairn/cairn.toml"
  grep -qx "listen = '127.0.0.1:8086'" "$pkgroot/etc/cairn/cairn.toml" &&
    grep -qx "plain = true" "$pkgroot/etc/cairn/cairn.toml" ||
    die "firmware/cairn.toml.example changed: its http.listen/http.plain lines were not found"
  chmod 0644 "$pkgroot/etc/cairn/cairn.toml"
  echo /etc/cairn/cairn.toml >"$pkgroot/DEBIAN/conffiles"
  install -D -m 0644 "$here/cairn/cairnd.service" "$pkgroot/lib/systemd/system/cairnd.service"
  # The config must be one cairnd accepts (checked with this build's binary).
  # shellcheck disable=SC2086
  $5 "$1/firmware/cairnd" config check --config "$pkgroot/etc/cairn/cairn.toml" >/dev/null ||
    die "the packaged cairn.toml fails cairnd config check"
  make_man "$1/firmware/cairnd" 8 "cairn time-series store daemon for sensor gateways" "$5" \
    "$pkgroot/usr/share/man/man8/cairnd.8.gz" "$4" cairnd
  write_doc "$pkgroot" cairn "$4"
  write_scripts "$pkgroot" cairn cairn cairnd.service /var/lib/cairn dialout
  finish_deb "$pkgroot" cairn "$4" "$2" "adduser, procps, $(shlib_depends "$pkgroot/usr/sbin/cairnd" "$2")" \
    "time-series store for ARM sensor gateways (daemon)" \
" cairnd keeps sensor readings on a gateway's SD card, safe across power
 cuts, and serves them over an InfluxDB-compatible HTTP API and a command
 shell on a serial line; it can sync every reading to the cloud over MQTT.
 .
 This package runs cairnd as the system user cairn under a hardened
 systemd unit, with its data in /var/lib/cairn and its config in
 /etc/cairn/cairn.toml."
}

build_ingest() { # builddir arch triplet version runner
  local pkgroot=$work/cairn-ingest-$2
  mkdir -p "$pkgroot/DEBIAN"
  stage_binary "$1/cloud/ingest/cairn-ingest" "$pkgroot/usr/bin/cairn-ingest" "$3"
  install -D -m 0644 "$here/cairn-ingest/default" "$pkgroot/etc/default/cairn-ingest"
  echo /etc/default/cairn-ingest >"$pkgroot/DEBIAN/conffiles"
  install -D -m 0644 "$here/cairn-ingest/cairn-ingest.service" \
    "$pkgroot/lib/systemd/system/cairn-ingest.service"
  make_man "$1/cloud/ingest/cairn-ingest" 1 "cloud ingest service for cairn gateway sync" "$5" \
    "$pkgroot/usr/share/man/man1/cairn-ingest.1.gz" "$4" cairn-ingest
  write_doc "$pkgroot" cairn-ingest "$4"
  write_scripts "$pkgroot" cairn-ingest cairn-ingest cairn-ingest.service /var/lib/cairn-ingest ""
  finish_deb "$pkgroot" cairn-ingest "$4" "$2" \
    "adduser, $(shlib_depends "$pkgroot/usr/bin/cairn-ingest" "$2")" \
    "cloud ingest service for cairn gateway sync" \
" cairn-ingest receives the sync batches that cairn gateways publish over
 MQTT, verifies their signatures, stores their readings exactly once in
 PostgreSQL or SQLite and answers each batch with a signed receipt after
 the commit.
 .
 This package runs it as the system user cairn-ingest under a hardened
 systemd unit; its flags live in /etc/default/cairn-ingest."
}

presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
  for p in host aarch64 armhf; do [ -x "$root/build/$p/firmware/cairnd" ] && presets+=("$p"); done
  [ ${#presets[@]} -gt 0 ] || die "no build/<preset>/firmware/cairnd: build a preset first"
fi

umask 022
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for preset in "${presets[@]}"; do
  dir=$root/build/$preset
  arch=$(preset_arch "$preset")
  [ -f "$dir/CMakeCache.txt" ] || die "no build directory $dir: cmake --preset $preset first"
  triplet=$(arch_triplet "$arch")
  upstream=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$dir/CMakeCache.txt")
  [ -n "$upstream" ] || die "no CMAKE_PROJECT_VERSION in $dir/CMakeCache.txt"
  version=$upstream-$revision
  runner=$(arch_runner "$arch")
  [ -x "$dir/firmware/cairnd" ] || die "$dir/firmware/cairnd is not built: cmake --build $dir --target cairnd"
  build_cairn "$dir" "$arch" "$triplet" "$version" "$runner"
  if [ -x "$dir/cloud/ingest/cairn-ingest" ]; then
    build_ingest "$dir" "$arch" "$triplet" "$version" "$runner"
  else
    log "$preset: no cairn-ingest in $dir (not built there), no cairn-ingest package for $arch"
  fi
done
