#include "engine/reclaim/retention.h"

#include <algorithm>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

}  // namespace

bool PastRetention(Period period, int64_t start, int64_t retention_seconds, int64_t now_ns) {
  return NextPeriodStart(period, start) <= now_ns - retention_seconds * kNanosPerSecond;
}

int64_t RecordExpiry(int64_t ttl, int64_t timestamp_ns, int64_t default_ttl_seconds) {
  if (ttl != 0 || default_ttl_seconds <= 0) return ttl;
  return std::max<int64_t>(1, timestamp_ns / kNanosPerSecond + default_ttl_seconds);
}

}  // namespace cairn
