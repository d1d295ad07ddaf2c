#include "manual_clock_env.h"

#include <cassert>
#include <thread>

namespace cairn {

ManualClockEnv::ManualClockEnv(Env* target, int64_t start_unix_nanos)
    : EnvWrapper(target), unix_nanos_(start_unix_nanos), monotonic_nanos_(kDefaultStartMonotonicNanos) {}

int64_t ManualClockEnv::NowUnixNanos() { return unix_nanos_.load(); }

int64_t ManualClockEnv::MonotonicNanos() { return monotonic_nanos_.load(); }

void ManualClockEnv::SleepForMicros(int64_t micros) {
  if (micros > 0) {
    slept_micros_.fetch_add(micros);
    AdvanceNanos(micros * 1000);
  }
  std::this_thread::yield();
}

void ManualClockEnv::AdvanceNanos(int64_t nanos) {
  assert(nanos >= 0);
  // Monotonic first: a reader that sees the new wall time never sees an
  // older monotonic time than one read before the advance.
  monotonic_nanos_.fetch_add(nanos);
  unix_nanos_.fetch_add(nanos);
}

void ManualClockEnv::SetUnixNanos(int64_t unix_nanos) { unix_nanos_.store(unix_nanos); }

bool ManualClockEnv::WallClockSynchronized() { return synchronized_.load(); }

void ManualClockEnv::SetWallClockSynchronized(bool synchronized) { synchronized_.store(synchronized); }

std::string ManualClockEnv::BootId() {
  std::lock_guard lock(boot_id_mutex_);
  return boot_id_;
}

void ManualClockEnv::SetBootId(std::string boot_id) {
  std::lock_guard lock(boot_id_mutex_);
  boot_id_ = std::move(boot_id);
}

void ManualClockEnv::SetMonotonicNanos(int64_t monotonic_nanos) { monotonic_nanos_.store(monotonic_nanos); }

}  // namespace cairn
