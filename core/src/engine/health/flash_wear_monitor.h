// FlashWearMonitor: samples the kernel's write counters for the engine and
// turns them into the figures of cairn/core/flash_wear.h.
//
// Counting across restarts and reboots. The process counter starts at 0 with
// every process, so the first sample of a run adds all of it and later ones
// the difference. The device counter starts at 0 with every boot: the state
// file keeps the last value seen with the boot id and device number it was
// seen under; when either differs (or the value went down) the machine
// rebooted, or the directory moved, and everything the device counted since
// boot is added, else the difference since the last sample. So device writes
// while cairnd was stopped are counted when the machine stayed up, and
// writes between the last sample and a shutdown are the only ones missed.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/core/flash_wear.h"
#include "cairn/core/record.h"
#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"

#include "engine/health/health_board.h"

namespace cairn {

// The bytes of readings one stored record counts for (flash_wear.h):
// 8 for its timestamp, plus 8 per double, int64 or timestamp field, 1 per
// bool field and the length of each string field.
uint64_t ReadingBytes(const Record& record);

// The totals kept in <data_dir>/flash_wear.state
// (flash_wear_state_format.md beside this file).
struct FlashWearState {
  int64_t installed_unix_nanos = 0;
  int64_t observed_nanos = 0;
  std::optional<uint64_t> process_bytes, device_bytes;
  uint64_t reading_bytes = 0;
  // The device counter as last seen, with what it was seen under.
  std::string device_name, device_number, device_boot_id;
  std::optional<uint64_t> device_since_boot;
};

std::string EncodeFlashWearState(const FlashWearState& state);
// Corruption naming the line for anything but a file EncodeFlashWearState
// wrote (unknown keys included: a newer version's file is not guessed at).
Result<FlashWearState> DecodeFlashWearState(std::string_view text);

class FlashWearMonitor {
 public:
  // The state file's name inside the data directory.
  static constexpr const char* kStateFileName = "flash_wear.state";

  // Loads <data_dir>/flash_wear.state, or starts afresh when there is none.
  // A state file that cannot be read or parsed does not stop the engine:
  // counting starts afresh and `health` says so under "flash.state" until
  // the next save replaces the file. `env` and `health` must outlive the
  // monitor; `health` may be null.
  FlashWearMonitor(Env* env, std::string data_dir, const FlashWearOptions& options, HealthBoard* health);

  // Adds the bytes of readings just stored (flash_wear.h defines them).
  // Lock-free: the write path calls it after every group commit.
  void CountReadingBytes(uint64_t bytes) {
    pending_reading_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

  // Reads the counters when sample_interval_ms has passed since the last
  // sample (always, the first time and when `force`), folds them into the
  // totals, updates the health problems, and saves the state at the first
  // sample of a run, then when save_interval_ms has passed (always when
  // `force`). Returns the save's failure, if any; sampling itself cannot
  // fail (unknown counters are reported as unknown).
  Status Sample(bool force = false);

  // True once Sample has run in this process.
  bool HasSampled() const {
    MutexLock lock(&mutex_);
    return sampled_;
  }

  // The figures as of the last sample.
  FlashWearStatus Report() const;

 private:
  // Totals at one sample, for the rolling window.
  struct WindowPoint {
    int64_t monotonic_nanos = 0;
    std::optional<uint64_t> process_bytes, device_bytes;
    uint64_t reading_bytes = 0;
  };

  void SampleProcessLocked() REQUIRES(mutex_);
  void SampleDeviceLocked() REQUIRES(mutex_);
  void AddWindowPointLocked(int64_t now_monotonic) REQUIRES(mutex_);
  FlashWearStatus ReportLocked() const REQUIRES(mutex_);
  void UpdateHealthLocked(const FlashWearStatus& status, const WindowPoint* window_start) REQUIRES(mutex_);

  Env* const env_;
  const std::string data_dir_;
  const std::string state_path_;
  const FlashWearOptions options_;
  HealthBoard* const health_;

  std::atomic<uint64_t> pending_reading_bytes_{0};

  // Held while raising and clearing health problems: taken before the
  // HealthBoard's own lock, never the other way round.
  mutable Mutex mutex_;
  FlashWearState state_ GUARDED_BY(mutex_);
  // This run only.
  std::optional<uint64_t> process_raw_ GUARDED_BY(mutex_);  // the process counter at the last sample
  bool process_known_now_ GUARDED_BY(mutex_) = false;
  bool device_known_now_ GUARDED_BY(mutex_) = false;
  std::string device_note_ GUARDED_BY(mutex_);
  uint64_t device_disk_size_bytes_ GUARDED_BY(mutex_) = 0;
  bool sampled_ GUARDED_BY(mutex_) = false;
  int64_t last_sample_monotonic_ GUARDED_BY(mutex_) = 0;
  int64_t last_save_monotonic_ GUARDED_BY(mutex_) = 0;
  std::deque<WindowPoint> window_ GUARDED_BY(mutex_);
};

}  // namespace cairn
