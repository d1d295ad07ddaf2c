// Timing, interruption and the data's digest for `cairn-bench sync`.
#include "sync_bench_common.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <optional>
#include <string_view>
#include <system_error>

#include <time.h>

#include "sensor_generator.h"

namespace cairn::bench::sync_bench {

namespace {

// SplitMix64's finalizer: every input bit reaches every output bit.
uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

// Rounds to `digits` significant digits, for ratios that span many decades.
double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return Round(value, digits - 1 - magnitude);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
// CPU time of the calling thread, and of the whole process (every thread).
int64_t ThreadCpuNanos() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

int64_t ProcessCpuNanos() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

// Set by OnInterruptSignal.
volatile std::sig_atomic_t interrupted = 0;

void OnInterruptSignal(int) { interrupted = 1; }

Status CheckInterrupt() {
  if (interrupted != 0) return Status::Unavailable("interrupted");
  return Status::Ok();
}

uint64_t RecordHash(uint32_t device, int64_t timestamp, int64_t centidegrees, int64_t humidity_permille,
                    int64_t pressure_decapascals) {
  uint64_t hash = Mix64(device + 0x9e3779b97f4a7c15ull);
  hash = Mix64(hash ^ static_cast<uint64_t>(timestamp));
  hash = Mix64(hash ^ static_cast<uint64_t>(centidegrees));
  hash = Mix64(hash ^ static_cast<uint64_t>(humidity_permille));
  return Mix64(hash ^ static_cast<uint64_t>(pressure_decapascals));
}

DataSummary SummarizeData(const Plan& plan, uint64_t limit) {
  DataSummary summary;
  SeenGrid grid;
  grid.Reset(plan.devices, plan.seconds, plan.start);
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  while (summary.delivered < limit &&
         generator.NextBatch(static_cast<size_t>(std::min<uint64_t>(plan.batch, limit - summary.delivered)),
                             &batch)) {
    for (const SensorRecord& record : batch) {
      ++summary.delivered;
      const std::optional<uint64_t> cell = grid.Cell(record.device_index, record.timestamp);
      if (!cell || !grid.Insert(*cell)) continue;
      ++summary.distinct_records;
      summary.distinct_readings += kReadingsPerRecord;
      summary.digest += RecordHash(record.device_index, record.timestamp, record.temperature_centidegrees,
                                   record.humidity_permille, record.pressure_decapascals);
    }
  }
  return summary;
}

std::optional<uint32_t> DeviceIndex(std::string_view device_id) {
  if (!device_id.starts_with(kDeviceIdPrefix)) return std::nullopt;
  device_id.remove_prefix(kDeviceIdPrefix.size());
  uint32_t index = 0;
  const auto result = std::from_chars(device_id.data(), device_id.data() + device_id.size(), index);
  if (result.ec != std::errc() || result.ptr != device_id.data() + device_id.size()) return std::nullopt;
  return index;
}

uint64_t PublishPacketBytes(size_t topic_bytes, size_t payload_bytes) {
  const uint64_t remaining = 2 + uint64_t{topic_bytes} + 2 + uint64_t{payload_bytes};
  uint64_t length_bytes = 1;
  for (uint64_t rest = remaining >> 7; rest != 0; rest >>= 7) ++length_bytes;
  return 1 + length_bytes + remaining;
}

}  // namespace cairn::bench::sync_bench
