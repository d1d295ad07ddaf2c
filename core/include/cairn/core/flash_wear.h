// Flash wear: how fast cairn wears the card it writes to, and how long the
// card will last at that pace.
//
// SD cards and eMMC die of writes. The engine samples what the kernel counts
// (the process's bytes written, the data directory's block device's bytes
// written: cairn/platform/write_counters.h), keeps the totals in
// <data_dir>/flash_wear.state across restarts and reboots
// (core/src/engine/health/flash_wear_state_format.md), and derives:
//
//  - bytes written per day, over a rolling window and since install;
//  - write amplification: bytes cairn wrote ÷ bytes of readings stored;
//  - the card's projected remaining life from its rated endurance.
//
// "Bytes of readings" is a fixed, encoding-independent measure of what the
// writers handed over: for every stored record, 8 bytes of timestamp plus,
// per field, 8 bytes for a double, int64 or timestamp value, 1 byte for a
// bool, and the UTF-8 length of a string. Names (table, device, measure,
// field, dimension), version and ttl are not counted: they identify a
// reading, they are not its payload. Duplicates, rejected and invalid
// records are not counted (nothing of them is stored). An amplification of
// 1 would mean cairn wrote exactly one fixed-width binary copy of the data;
// the log, the sealed chunks, SQLite's pages and the filesystem's metadata
// all add to it, compression takes from it.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cairn {

struct FlashWearOptions {
  // The card's rated endurance, one of two ways. endurance_tbw (terabytes
  // written, 10^12 bytes, as card makers rate it) wins when set; otherwise
  // pe_cycles x the card's size, the size being card_size_bytes or, when
  // that is 0, the size the kernel reports for the disk under the data
  // directory. Nothing set: no projection (the rates are still measured).
  double endurance_tbw = 0;
  uint64_t pe_cycles = 0;
  uint64_t card_size_bytes = 0;

  // Health thresholds; a threshold of 0 is off. `flash.life` is raised when
  // the projected remaining life falls below warn_remaining_days;
  // `flash.amplification` when the amplification over the rolling window
  // exceeds warn_amplification.
  int64_t warn_remaining_days = 365;
  double warn_amplification = 0;

  // How often the counters are read (from Engine::Maintain), and how often
  // the totals are saved to the state file. A save is a few hundred bytes
  // written, synced and renamed: hourly it costs the card nothing that
  // shows, and a crash loses at most this long of counting.
  int64_t sample_interval_ms = 60'000;
  int64_t save_interval_ms = 3'600'000;
  // The rolling window of the per-day rates and of the amplification
  // compared with warn_amplification. It lives in memory and starts again
  // at each start of cairnd; the since-install figures cover the long run.
  int64_t window_seconds = 86'400;
  // Verdicts wait for enough evidence: no projected life (nor warning)
  // before cairn has watched the counters this long in total, and no
  // amplification warning before the window holds this many reading bytes
  // (a fresh data directory writes its catalog before any reading arrives).
  int64_t min_observed_seconds = 3'600;
  uint64_t min_window_reading_bytes = 1 << 20;
};

// What FlashWear() reports. Optional figures are unknown when empty (the
// kernel keeps no such count, the data directory is on tmpfs or overlay,
// too little has been observed yet), never a made-up 0.
struct FlashWearStatus {
  // Unix ns of the first sample on this data directory ("install").
  int64_t installed_unix_nanos = 0;
  // Time cairn has watched the counters, summed over every run (monotonic
  // clock, so a wall-clock jump does not bend the rates).
  int64_t observed_seconds = 0;

  // Totals since install.
  std::optional<uint64_t> process_bytes_written;  // by cairnd processes, summed over restarts
  std::optional<uint64_t> device_bytes_written;   // to the data directory's device, summed over boots
  uint64_t reading_bytes = 0;                     // bytes of readings stored (see above)

  // The data directory's block device ("mmcblk0p2"); empty when unknown,
  // with the reason in device_note.
  std::string device;
  std::string device_note;
  uint64_t device_disk_size_bytes = 0;

  // Bytes per day over the rolling window (window_seconds is how much of it
  // this run has covered so far) and since install.
  int64_t window_seconds = 0;
  std::optional<double> process_bytes_per_day_window, process_bytes_per_day_since_install;
  std::optional<double> device_bytes_per_day_window, device_bytes_per_day_since_install;

  // Write amplification: process bytes written ÷ reading bytes, over the
  // window and since install. Unknown without process counts or readings.
  std::optional<double> amplification_window, amplification_since_install;

  // The rated endurance in bytes (0: not configured), how much of it is
  // used, and the projection: remaining endurance ÷ the higher of the two
  // daily rates (window, since install), of the device when known, else of
  // the process (a lower bound on the card's real writes).
  uint64_t endurance_bytes = 0;
  std::optional<double> endurance_used_fraction;
  std::optional<double> projected_remaining_days;
  std::string projection_basis;  // "device", "process", or empty when no projection
};

}  // namespace cairn
