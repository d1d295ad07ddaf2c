#!/usr/bin/env bash
# Builds everything a gateway owner installs, from a fresh clone (as root on
# Debian bookworm; installs what is missing first):
#
#   bash firmware/release.sh
#
#   build/debs/cairn_<version>_{amd64,arm64,armhf}.deb          (the gateway)
#   build/debs/cairn-ingest_<version>_{amd64,arm64,armhf}.deb   (the cloud side)
#   build/image/cairn-<version>-{arm64,armhf}.img               (flashable cards)
#
# Release builds of cairnd and cairn-ingest for the three presets (host,
# aarch64, armhf), then firmware/package/build-debs.sh and
# firmware/image/build-image.sh; see the README beside each.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  bash toolchains/install-deps.sh
fi
started=$(date +%s)
for preset in host aarch64 armhf; do
  echo "[release] building cairnd and cairn-ingest ($preset)"
  cmake --preset "$preset" >/dev/null
  cmake --build "build/$preset" --target cairnd cairn-ingest -j "$(nproc)"
done
bash firmware/package/build-debs.sh host aarch64 armhf
bash firmware/image/build-image.sh arm64 build/aarch64
bash firmware/image/build-image.sh armhf build/armhf
echo "[release] done in $(( $(date +%s) - started )) s:"
ls -l build/debs/*.deb build/image/*.img
