#!/usr/bin/env bash
# Builds the flashable cairn gateway image for one architecture:
#
#   bash firmware/image/build-image.sh arm64|armhf [BUILD_DIR]
#
# BUILD_DIR is the cross build holding firmware/cairnd (default build/aarch64
# for arm64, build/armhf for armhf; `cmake --preset aarch64 && cmake --build
# --preset aarch64` makes it). The image lands in build/image/ (or
# $CAIRN_IMAGE_OUT):
#
#   cairn-<version>-<arch>.img   64 MiB, MBR partition table:
#     1: FAT16 "CAIRN-BOOT"  kernel, initramfs, device trees, config.txt,
#                            cmdline.txt, cairn.toml (editable from any PC)
#     2: ext4  "cairn-data"  cairnd's data directory
#   cairn-<version>-<arch>.vmlinuz / .initrd.img / .cmdline  the same boot
#     files, for QEMU's -kernel/-initrd/-append (`virt` has no Pi firmware)
#
# Needs root only for nothing: every step works on plain files (mkfs.vfat +
# mtools, mkfs.ext4 -d, sfdisk, dd). Debian packages (kernel, busybox-static,
# e2fsck-static) are fetched with the machine's apt sources into
# build/image-cache/<arch> and reused while their versions stand.
# The layout and boot flow are described in firmware/image/README.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
arch=${1:?usage: build-image.sh arm64|armhf [BUILD_DIR]}
case "$arch" in
  arm64) triplet=aarch64-linux-gnu; flavour=arm64; preset=aarch64; loader=ld-linux-aarch64.so.1 ;;
  armhf) triplet=arm-linux-gnueabihf; flavour=armmp-lpae; preset=armhf; loader=ld-linux-armhf.so.3 ;;
  *) echo "build-image.sh: unknown architecture '$arch' (arm64 or armhf)" >&2; exit 2 ;;
esac
build_dir=$(cd "${2:-$root/build/$preset}" && pwd)
cairnd_bin=$build_dir/firmware/cairnd
[ -x "$cairnd_bin" ] || { echo "build-image.sh: $cairnd_bin is missing; build the $preset preset first" >&2; exit 2; }
version=$(sed -nE 's/^project\(cairn VERSION ([0-9.]+).*/\1/p' "$root/CMakeLists.txt")
sysroot=${CAIRN_SYSROOT_BASE:-/opt/cairn/sysroot}/$arch
out_dir=${CAIRN_IMAGE_OUT:-$root/build/image}
cache=$root/build/image-cache/$arch
work=$out_dir/work-$arch
image=$out_dir/cairn-$version-$arch.img

# The image is exactly 64 MiB (a power of two, as QEMU's emulated SD cards
# require); the boot partition takes what the kernel needs, the data
# partition the rest. On a larger card the data partition can be grown with
# any partition tool and resize2fs (firmware/image/README.md).
image_mib=64
boot_mib=$([ "$arch" = arm64 ] && echo 30 || echo 20)
data_mib=$((image_mib - 1 - boot_mib))

started=$(date +%s)
log() { printf '[build-image %s] %s\n' "$arch" "$*"; }

# --- Debian packages -------------------------------------------------------
fetch_packages() {
  local kernel_meta kernel_pkg p
  kernel_meta=linux-image-$flavour
  kernel_pkg=$(apt-cache depends "$kernel_meta:$arch" | awk '/Depends: linux-image-[0-9]/ {sub(/:.*/, "", $2); print $2; exit}')
  [ -n "$kernel_pkg" ] || { echo "build-image.sh: apt knows no $kernel_meta:$arch (run toolchains/install-deps.sh)" >&2; exit 1; }
  PACKAGES=("$kernel_pkg" busybox-static e2fsck-static)
  mkdir -p "$cache"
  chown _apt "$cache" 2>/dev/null || true
  for p in "${PACKAGES[@]}"; do
    local candidate
    candidate=$(apt-cache policy "$p:$arch" | awk '/Candidate:/ {print $2}')
    if ! ls "$cache/${p}_"*"_$arch.deb" 2>/dev/null | grep -qF "_${candidate//:/%3a}_"; then
      rm -f "$cache/${p}_"*"_$arch.deb"
      (cd "$cache" && apt-get download -q "$p:$arch" >/dev/null)
    fi
  done
  KERNEL_RELEASE=${kernel_pkg#linux-image-}
}

# --- initramfs: busybox, e2fsck, cairnd and what it links, kernel modules ---
# Copies a shared library and, recursively, what it needs (DT_NEEDED) from
# the cross toolchain's libc and the sysroot of Debian's ARM packages.
copy_with_libraries() {
  local file=$1 needed lib dir found
  for needed in $(readelf -d "$file" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}'); do
    [ -e "$rootfs/lib/$needed" ] && continue
    found=""
    for dir in "/usr/$triplet/lib" "$sysroot/usr/lib/$triplet" "$sysroot/lib/$triplet"; do
      if [ -e "$dir/$needed" ]; then found=$dir/$needed; break; fi
    done
    [ -n "$found" ] || { echo "build-image.sh: $needed (needed by $file) is in neither the toolchain nor $sysroot" >&2; exit 1; }
    cp -L "$found" "$rootfs/lib/$needed"
    "$triplet-strip" --strip-unneeded "$rootfs/lib/$needed" 2>/dev/null || true
    copy_with_libraries "$rootfs/lib/$needed"
  done
}

# Modules for the boards the image boots on: virtio (QEMU virt), the Pi's SD
# host, USB and Ethernet, ext4 and FAT; init loads those of the board it is
# on. Their dependencies come from depmod.
# crc32c_generic is what ext4 and jbd2 ask the crypto API for at mount time
# (a soft dependency modules.dep does not list); nls_ascii and nls_cp437 are
# FAT's default character sets in Debian's kernels.
MODULES="virtio_mmio virtio_pci virtio_blk virtio_net crc32c_generic ext4 nls_ascii nls_cp437
  nls_utf8 vfat sdhci_iproc bcm2835 dwc2 smsc95xx lan78xx bcm2835_wdt genet"

copy_modules() {
  local kernel_tree=$1 release=$2 module path dep
  depmod -b "$kernel_tree" "$release"
  local want=()
  for module in $MODULES; do
    path=$(modinfo -b "$kernel_tree" -k "$release" -n "$module" 2>/dev/null) || continue
    [[ "$path" == /* ]] || continue
    want+=("${path#"$kernel_tree"/}")
    for dep in $(grep -E "^${path#"$kernel_tree"/lib/modules/$release/}:" "$kernel_tree/lib/modules/$release/modules.dep" | cut -d: -f2); do
      want+=("lib/modules/$release/$dep")
    done
  done
  for path in $(printf '%s\n' "${want[@]}" | sort -u); do
    mkdir -p "$rootfs/$(dirname "$path")"
    cp "$kernel_tree/$path" "$rootfs/$path"
  done
  cp "$kernel_tree/lib/modules/$release/modules.order" "$kernel_tree/lib/modules/$release/modules.builtin" \
     "$kernel_tree/lib/modules/$release/modules.builtin.modinfo" "$rootfs/lib/modules/$release/" 2>/dev/null || true
  depmod -b "$rootfs" "$release"
}

build_initramfs() {
  rootfs=$work/rootfs
  rm -rf "$rootfs" && mkdir -p "$rootfs"/{bin,sbin,lib,etc,proc,sys,dev,run,tmp,boot,var/lib/cairn,usr/sbin,usr/bin}
  dpkg-deb -x "$cache"/busybox-static_*_"$arch".deb "$work/busybox"
  cp "$work/busybox/bin/busybox" "$rootfs/bin/busybox"
  ln -s busybox "$rootfs/bin/sh"
  dpkg-deb -x "$cache"/e2fsck-static_*_"$arch".deb "$work/e2fsck"
  cp "$work/e2fsck/sbin/e2fsck.static" "$rootfs/sbin/e2fsck.static"
  cp "$cairnd_bin" "$rootfs/usr/sbin/cairnd"
  "$triplet-strip" --strip-all "$rootfs/usr/sbin/cairnd"
  cp -L "/usr/$triplet/lib/$loader" "$rootfs/lib/$loader"
  copy_with_libraries "$rootfs/usr/sbin/cairnd"
  install -m 0755 "$here/init" "$rootfs/init"
  install -m 0755 "$here/udhcpc.script" "$rootfs/etc/udhcpc.script"
  ln -s /run/resolv.conf "$rootfs/etc/resolv.conf"
  printf 'root:x:0:0:root:/root:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\ndialout:x:20:\n' >"$rootfs/etc/group"
  printf '%s\n' "$version" >"$rootfs/etc/cairn-version"
  copy_modules "$work/kernel" "$KERNEL_RELEASE"
  (cd "$rootfs" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner=0:0 --quiet) |
    gzip -9 -n >"$work/initrd.img"
}

# --- boot partition ---------------------------------------------------------
image_cairn_toml() {
  # The packaged example, with the image's choices: the shell on the first
  # UART and plain HTTP on port 8086 (tokens still guard it; put tls.cert
  # and tls.key on this partition for HTTPS).
  sed -e "s|^# path =$|path = '/dev/ttyAMA0'|" \
      -e "s|^plain = false$|plain = true|" \
      -e "1,/^$/c\\
# cairnd's config file on the cairn gateway image: the boot partition's\\
# cairn.toml, editable from any PC. init checks it at boot; an invalid file\\
# is reported on the UART and cairnd runs on its defaults until it is fixed.\\
#\\
# The data directory is the image's data partition and the shell's tty comes\\
# from cmdline.txt (cairn.serial=): init passes both on cairnd's command\\
# line, which overrides storage.data_dir and serial.path here.\\
" "$root/firmware/cairn.toml.example"
}

device_tree_sections() {
  local dtbs=$1
  if [ "$arch" = arm64 ]; then
    printf '[pi3]\ndevice_tree=bcm2837-rpi-3-b.dtb\n[pi3+]\ndevice_tree=bcm2837-rpi-3-b-plus.dtb\n'
    printf '[pi02]\ndevice_tree=bcm2837-rpi-zero-2-w.dtb\n[pi4]\ndevice_tree=bcm2711-rpi-4-b.dtb\n'
    printf '[pi400]\ndevice_tree=bcm2711-rpi-400.dtb\n[cm4]\ndevice_tree=bcm2711-rpi-cm4-io.dtb\n'
  else
    printf '[pi2]\ndevice_tree=bcm2836-rpi-2-b.dtb\n[pi3]\ndevice_tree=bcm2837-rpi-3-b.dtb\n'
    printf '[pi3+]\ndevice_tree=bcm2837-rpi-3-b-plus.dtb\n'
  fi
  : "$dtbs"
}

# The Pi's device trees give the PL011 UART (ttyAMA0) to the on-board
# Bluetooth and the header pins 14/15 to the mini UART, whose speed follows
# the core clock. A gateway wants its console on the header and has no use
# for Bluetooth, so each tree gets what Raspberry Pi's `disable-bt` overlay
# does: the Bluetooth node goes, the PL011 takes pins 14/15 as ttyAMA0 and
# the mini UART is disabled. (QEMU's raspi3b wires its first serial port to
# the PL011 too.) Trees without Bluetooth (Pi 2) are copied unchanged.
header_uart_device_tree() {
  local in=$1 out=$2 uart0=/soc/serial@7e201000 pins=/soc/gpio@7e200000/uart0_gpio14 phandle
  cp "$in" "$out"
  fdtget -l "$out" "$uart0" 2>/dev/null | grep -qx bluetooth || return 0
  phandle=$(dtc -q -I dtb -O dts "$out" | sed -nE 's/.*phandle = <0x([0-9a-f]+)>.*/\1/p' |
            while read -r hex; do echo $((16#$hex)); done | sort -n | tail -1)
  phandle=$((phandle + 1))
  fdtput -t x "$out" "$pins" phandle "$(printf %x "$phandle")"
  fdtput -t x "$out" "$uart0" pinctrl-0 "$(printf %x "$phandle")"
  fdtput -r "$out" "$uart0/bluetooth"
  fdtput -t s "$out" /soc/serial@7e215040 status disabled
}

build_boot_partition() {
  local boot=$work/boot.fat kernel_image dtb_dir files=()
  dtb_dir=$work/kernel/usr/lib/linux-image-$KERNEL_RELEASE
  rm -f "$boot"
  mkfs.vfat -C -F 16 -n CAIRN-BOOT "$boot" $((boot_mib * 1024)) >/dev/null
  if [ "$arch" = arm64 ]; then
    # arm64 kernels are plain Images; gzip keeps the image under 64 MiB, and
    # both QEMU and the Pi firmware load a gzip-compressed Image.
    kernel_image=vmlinuz
    gzip -9 -n -c "$work/kernel/boot/vmlinuz-$KERNEL_RELEASE" >"$work/vmlinuz"
    sed -e 's/@ARM_64BIT@/arm_64bit=1/' -e "s/@KERNEL@/$kernel_image/" "$here/config.txt" >"$work/config.txt"
  else
    kernel_image=vmlinuz
    cp "$work/kernel/boot/vmlinuz-$KERNEL_RELEASE" "$work/vmlinuz"
    sed -e '/@ARM_64BIT@/d' -e "s/@KERNEL@/$kernel_image/" "$here/config.txt" >"$work/config.txt"
  fi
  python3 - "$work/config.txt" "$(device_tree_sections "$dtb_dir")" <<'EOF'
import sys
path, sections = sys.argv[1], sys.argv[2]
text = open(path).read().replace("@DEVICE_TREES@", sections)
open(path, "w").write(text)
EOF
  cp "$here/cmdline.txt" "$work/cmdline.txt"
  image_cairn_toml >"$work/cairn.toml"
  files=("$work/vmlinuz" "$work/initrd.img" "$work/config.txt" "$work/cmdline.txt" "$work/cairn.toml")
  mkdir -p "$work/dtb"
  for dtb in $(grep -o 'bcm[0-9a-z-]*\.dtb' "$work/config.txt" | sort -u); do
    if [ -e "$dtb_dir/broadcom/$dtb" ]; then
      header_uart_device_tree "$dtb_dir/broadcom/$dtb" "$work/dtb/$dtb"
    else
      header_uart_device_tree "$dtb_dir/$dtb" "$work/dtb/$dtb"
    fi
    files+=("$work/dtb/$dtb")
  done
  mcopy -i "$boot" "${files[@]}" ::
}

build_data_partition() {
  local data=$work/data.ext4
  rm -f "$data"
  # 4 KiB blocks, a journal, no lazy init (nothing runs in the background on
  # the first boot), and reserved blocks off: the card is cairnd's alone and
  # cairnd keeps its own free-space reserve.
  mkfs.ext4 -q -F -L cairn-data -b 4096 -m 0 -E lazy_itable_init=0,lazy_journal_init=0 \
    "$data" $((data_mib * 1024))k
}

assemble_image() {
  local tmp=$image.tmp
  rm -f "$tmp"
  truncate -s $((image_mib * 1024 * 1024)) "$tmp"
  sfdisk --quiet "$tmp" <<EOF
label: dos
unit: sectors
start=2048, size=$((boot_mib * 2048)), type=e, bootable
start=$((2048 + boot_mib * 2048)), size=$((data_mib * 2048)), type=83
EOF
  dd if="$work/boot.fat" of="$tmp" bs=1M seek=1 conv=notrunc status=none
  dd if="$work/data.ext4" of="$tmp" bs=1M seek=$((1 + boot_mib)) conv=notrunc status=none
  mv "$tmp" "$image"
  cp "$work/vmlinuz" "$out_dir/cairn-$version-$arch.vmlinuz"
  cp "$work/initrd.img" "$out_dir/cairn-$version-$arch.initrd.img"
  cp "$work/cmdline.txt" "$out_dir/cairn-$version-$arch.cmdline"
  cp "$work/dtb/bcm2837-rpi-3-b.dtb" "$out_dir/cairn-$version-$arch.rpi3b.dtb"
}

mkdir -p "$out_dir"
rm -rf "$work" && mkdir -p "$work"
fetch_packages
log "kernel $KERNEL_RELEASE, cairnd from $build_dir"
dpkg-deb -x "$cache/linux-image-${KERNEL_RELEASE}_"*"_$arch.deb" "$work/kernel"
build_initramfs
build_boot_partition
build_data_partition
assemble_image
rm -rf "$work"
used_boot=$(($(stat -c %s "$out_dir/cairn-$version-$arch.vmlinuz") + $(stat -c %s "$out_dir/cairn-$version-$arch.initrd.img")))
log "built $image: $(( $(stat -c %s "$image") / 1048576 )) MiB (boot $boot_mib MiB, kernel + initramfs $((used_boot / 1024)) KiB; data $data_mib MiB) in $(( $(date +%s) - started )) s"
