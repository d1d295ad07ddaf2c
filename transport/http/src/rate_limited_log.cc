#include "cairn/http/rate_limited_log.h"

#include <algorithm>
#include <utility>

namespace cairn {

RateLimitedLog::RateLimitedLog(Env* env, Sink sink, int burst, int64_t interval_nanos)
    : env_(env),
      sink_(std::move(sink)),
      burst_(std::max(burst, 1)),
      interval_nanos_(std::max<int64_t>(interval_nanos, 1)) {}

void RateLimitedLog::Log(std::string_view key, const std::string& line) {
  if (!sink_) return;
  const int64_t now = env_->MonotonicNanos();
  uint64_t left_out = 0;
  {
    MutexLock lock(&mutex_);
    auto found = windows_.find(key);
    if (found == windows_.end()) found = windows_.emplace(std::string(key), Window{now, 0, 0}).first;
    Window& window = found->second;
    if (now - window.started_nanos >= interval_nanos_) {
      window.started_nanos = now;
      window.passed = 0;
    }
    if (window.passed >= burst_) {
      ++window.suppressed;
      return;
    }
    ++window.passed;
    left_out = std::exchange(window.suppressed, 0);
  }
  // Outside the lock: the sink may be slow (a journal on an SD card).
  if (left_out == 0) {
    sink_(line);
  } else {
    sink_(line + " (" + std::to_string(left_out) + " similar message" + (left_out == 1 ? "" : "s") +
          " left out before this one)");
  }
}

}  // namespace cairn
