// Write counters: what the kernel counts of the bytes a process and a block
// device have written, for telling how fast cairn wears its flash card.
//
// The figures come from Linux: /proc/self/io for the process and
// /sys/dev/block/<major>:<minor>/stat for the device. Env::ProcessBytesWritten
// and Env::BlockDeviceWritesOf read them; the parsers below are separate so
// that their handling of odd kernel text can be tested without a kernel.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// The block device holding a path, and what the kernel counted of the
// writes it received since the machine booted.
struct BlockDeviceWrites {
  // The kernel's name of the device holding the path ("mmcblk0p2", "sda1",
  // "vda"): a partition when the filesystem is on one.
  std::string name;
  uint32_t major = 0, minor = 0;
  // Bytes written to `name` since boot: the stat file's "sectors written"
  // (field 7) x 512, the unit the kernel uses there whatever the device's
  // sector size. Restarts at 0 at every boot.
  uint64_t bytes_written_since_boot = 0;
  // Size of the whole disk `name` is on (the card, not the partition), in
  // bytes; 0 when the kernel does not say. Wear levelling spreads erase
  // cycles over the whole card, so this is the size endurance scales with.
  uint64_t disk_size_bytes = 0;
  // The kernel's id of this boot (/proc/sys/kernel/random/boot_id); it
  // changes exactly when bytes_written_since_boot restarts. Empty when the
  // kernel does not say.
  std::string boot_id;
};

// The bytes a process caused to be written to storage, from the text of
// /proc/<pid>/io: write_bytes minus cancelled_write_bytes (dirty pages
// truncated away before they reached the device never wear it). Corruption
// when either line is missing or not a number.
Result<uint64_t> ParseProcessIoBytesWritten(std::string_view proc_io_text);

// Bytes written from the text of a /sys/block/.../stat file: the 7th
// whitespace-separated field (sectors written) x 512. Corruption when the
// text has fewer than 7 fields or the 7th is not a number.
Result<uint64_t> ParseBlockStatBytesWritten(std::string_view stat_text);

}  // namespace cairn
