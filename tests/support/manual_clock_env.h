// An Env whose clocks move only when a test moves them.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "cairn/platform/env.h"

namespace cairn {

// Wraps another Env (for files, threads, randomness) and replaces its clocks
// with two counters. SleepForMicros advances both counters instead of
// sleeping, so code that waits for time to pass completes at once and a test
// decides what "now" is.
//
// Thread-safe: every member may be called from any thread.
class ManualClockEnv : public EnvWrapper {
 public:
  // 2023-11-14T22:13:20Z: a fixed, recent instant, so results do not depend
  // on the machine's clock.
  static constexpr int64_t kDefaultStartUnixNanos = int64_t{1'700'000'000} * 1'000'000'000;
  // The monotonic clock starts well away from 0 so that code treating 0 as
  // "never" is caught.
  static constexpr int64_t kDefaultStartMonotonicNanos = int64_t{1'000} * 1'000'000'000;

  // `target` must outlive this object.
  explicit ManualClockEnv(Env* target, int64_t start_unix_nanos = kDefaultStartUnixNanos);

  int64_t NowUnixNanos() override;
  int64_t MonotonicNanos() override;

  // Advances both clocks by `micros` (when positive) and yields the thread,
  // so a loop that sleeps lets other threads run.
  void SleepForMicros(int64_t micros) override;

  // Moves both clocks forward. Precondition: nanos >= 0.
  void AdvanceNanos(int64_t nanos);
  void AdvanceSeconds(int64_t seconds) { AdvanceNanos(seconds * 1'000'000'000); }

  // Sets the wall clock only, forward or backward, as NTP or an operator
  // setting the date would; the monotonic clock does not move.
  void SetUnixNanos(int64_t unix_nanos);

  // The kernel's synchronisation state as the test sets it; true at
  // construction (the test decides what the true time is), false for a
  // gateway that booted without a time source.
  bool WallClockSynchronized() override;
  void SetWallClockSynchronized(bool synchronized);

  // The boot id as the test sets it ("manual-boot-1" at construction).
  // Changing it is a reboot as far as monotonic offsets are concerned:
  // tests pair it with SetMonotonicNanos.
  std::string BootId() override;
  void SetBootId(std::string boot_id);

  // Sets the monotonic clock, as a reboot does (it restarts near 0); the
  // wall clock does not move.
  void SetMonotonicNanos(int64_t monotonic_nanos);

  // Total microseconds requested through SleepForMicros so far.
  int64_t SleptMicros() const { return slept_micros_.load(); }

 private:
  std::atomic<int64_t> unix_nanos_;
  std::atomic<int64_t> monotonic_nanos_;
  std::atomic<int64_t> slept_micros_{0};
  std::atomic<bool> synchronized_{true};
  mutable std::mutex boot_id_mutex_;
  std::string boot_id_ = "manual-boot-1";
};

}  // namespace cairn
