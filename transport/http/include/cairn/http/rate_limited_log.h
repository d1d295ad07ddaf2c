// RateLimitedLog: log lines about events a client can cause at will (failed
// authentications, timeouts, refused connections, rejected writes) without
// letting that client fill the journal of a gateway's SD card.
//
// Per key (a kind of event, chosen by the caller from a small fixed set:
// never an address or anything else a client controls), at most `burst`
// lines pass per `interval`; the rest are counted, and the next line that
// passes for that key says how many were left out before it.
//
// Thread-safety: Log may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"

namespace cairn {

class RateLimitedLog {
 public:
  using Sink = std::function<void(const std::string& line)>;

  // `env` (for the monotonic clock) must outlive the log; an empty `sink`
  // drops everything.
  RateLimitedLog(Env* env, Sink sink, int burst = 5, int64_t interval_nanos = int64_t{60} * 1'000'000'000);

  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // Passes `line` to the sink unless `key` has used up its burst in the
  // current interval.
  void Log(std::string_view key, const std::string& line);

 private:
  struct Window {
    int64_t started_nanos = 0;
    int passed = 0;
    uint64_t suppressed = 0;
  };

  Env* const env_;
  const Sink sink_;
  const int burst_;
  const int64_t interval_nanos_;
  Mutex mutex_;
  std::map<std::string, Window, std::less<>> windows_ GUARDED_BY(mutex_);
};

}  // namespace cairn
