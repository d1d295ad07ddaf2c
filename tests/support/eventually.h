// Bounded polling for tests that wait on another thread or process.
#pragma once

#include <cstdint>
#include <functional>

#include "cairn/platform/env.h"

namespace cairn {

// Polls `condition` every 10 ms until it holds (true) or `timeout_ms`
// passes (false). Never waits longer, so a broken peer fails the test
// instead of hanging it.
inline bool Eventually(const std::function<bool()>& condition, int timeout_ms) {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{timeout_ms} * 1'000'000;
  while (!condition()) {
    if (env->MonotonicNanos() >= deadline) return false;
    env->SleepForMicros(10'000);
  }
  return true;
}

}  // namespace cairn
