// BenchStore: one store under benchmark (cairn or a peer), driven through the
// same five operations so that every store sees the same data and answers the
// same questions in the same run.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/status.h"

#include "sensor_generator.h"

namespace cairn::bench {

struct LatestReading {
  int64_t timestamp = 0;
  double temperature = 0;
  double humidity = 0;
  double pressure = 0;
};

// What a range read returned, reduced to numbers both stores must agree on.
struct RangeSummary {
  uint64_t rows = 0;
  uint64_t timestamp_sum = 0;  // wraps; compared, not interpreted
  int64_t temperature_centidegrees_sum = 0;
};

struct HourlyAggregate {
  int64_t start = 0;  // ns, start of the hour
  uint64_t count = 0;
  double min = 0;
  double max = 0;
  double avg = 0;
};

class BenchStore {
 public:
  virtual ~BenchStore() = default;

  // The name used in reports: "cairn", "naive_sqlite".
  virtual std::string_view name() const = 0;

  // Creates the store in `directory`, which exists and is empty.
  virtual Status Open(const std::string& directory) = 0;

  // Writes one batch and returns once the store's durability guarantee holds
  // for it. Every record of the batch is valid: any record the store refuses
  // is an error.
  virtual Status Write(const std::vector<SensorRecord>& batch) = 0;

  // Brings what was written into its final on-disk form before bytes are
  // counted: cairn seals every head into chunks; SQLite checkpoints its WAL.
  virtual Status Settle() = 0;

  // The device's most recent reading (largest timestamp).
  virtual Result<LatestReading> Latest(const std::string& device_id) = 0;

  // Reads every record of the device in [from, to) in timestamp order.
  virtual Result<RangeSummary> ReadRange(const std::string& device_id, int64_t from, int64_t to) = 0;

  // min, max, avg and count of temperature per hour over [from, to); `from`
  // is a whole hour. Only non-empty hours, ascending.
  virtual Result<std::vector<HourlyAggregate>> AggregateTemperatureHourly(const std::string& device_id,
                                                                          int64_t from, int64_t to) = 0;

  // Distinct records the store holds (duplicates collapsed).
  virtual Result<uint64_t> StoredRecords() = 0;

  virtual Status Close() = 0;
};

// cairnd's default --memory-budget (firmware/cairnd/options.h, which the
// bench does not link).
inline constexpr size_t kCairndMemoryBudgetBytes = size_t{32} << 20;

// cairn's engine with one memory budget (EngineOptions::memory_budget_bytes).
std::unique_ptr<BenchStore> NewCairnStore(size_t memory_budget_bytes = kCairndMemoryBudgetBytes);

// The table of seed 000 (DynamoDB style) in SQLite:
//   readings(deviceId, timestamp, temperature, humidity, pressure, metadata, ttl)
//   PRIMARY KEY (deviceId, timestamp) WITHOUT ROWID, WAL, synchronous=FULL,
//   one transaction per batch of INSERT OR REPLACE.
std::unique_ptr<BenchStore> NewNaiveSqliteStore();

}  // namespace cairn::bench
