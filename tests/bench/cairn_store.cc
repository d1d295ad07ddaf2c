// cairn under benchmark: an Engine with the default Env and default options
// (durability full) but for the memory budget, which is cairnd's default
// (32 MiB), one table "bench" with default table options, and each
// device's reading at one instant as ONE multi-measure record "env" carrying
// temperature, humidity and pressure.
#include <cmath>

#include "cairn/core/engine.h"

#include "bench_common.h"
#include "bench_store.h"

namespace cairn::bench {

namespace {

constexpr int64_t kNanosPerHour = 3600 * kNanosPerSecond;
const Value* FindField(const RecordRow& row, std::string_view name) {
  for (const Field& field : row.fields) {
    if (field.name == name) return &field.value;
  }
  return nullptr;
}

double DoubleOr(const Value* value, double fallback) {
  if (value == nullptr) return fallback;
  if (const auto* d = std::get_if<double>(value)) return *d;
  return fallback;
}

class CairnStore final : public BenchStore {
 public:
  explicit CairnStore(size_t memory_budget_bytes) : memory_budget_bytes_(memory_budget_bytes) {}
  ~CairnStore() override { static_cast<void>(Close()); }  // a destructor cannot report

  std::string_view name() const override { return "cairn"; }

  Status Open(const std::string& directory) override {
    EngineOptions options;
    options.memory_budget_bytes = memory_budget_bytes_;
    CAIRN_ASSIGN_OR_RETURN(engine_, Engine::Open(Env::Default(), directory, options));
    return engine_->CreateTable(kBenchTable, TableOptions());
  }

  Status Write(const std::vector<SensorRecord>& batch) override {
    // The client keeps one batch of records and overwrites it in place, as a
    // gateway's input loop would; the field layout never changes.
    ToEnvRecords(batch, &records_);
    CAIRN_ASSIGN_OR_RETURN(WriteResult result, engine_->Write(kBenchTable, records_));
    if (result.invalid != 0 || result.rejected != 0) {
      for (size_t i = 0; i < result.records.size(); ++i) {
        const RecordResult& outcome = result.records[i];
        if (outcome.outcome == WriteOutcome::kInvalid || outcome.outcome == WriteOutcome::kRejectedVersion) {
          return Status::Internal("cairn refused a valid record of " + records_[i].device_id + " at " +
                                  std::to_string(records_[i].timestamp) + ": " + outcome.reason);
        }
      }
      return Status::Internal("cairn counted refused records but reported none");
    }
    stored_ += result.stored;
    return Status::Ok();
  }

  Status Settle() override { return engine_->SealAll(); }

  Result<LatestReading> Latest(const std::string& device_id) override {
    CAIRN_ASSIGN_OR_RETURN(std::vector<RecordRow> rows, engine_->Latest(kBenchTable, device_id, kEnvMeasure));
    if (rows.empty()) return Status::NotFound("no reading of " + device_id);
    LatestReading reading;
    reading.timestamp = rows[0].timestamp;
    reading.temperature = DoubleOr(FindField(rows[0], "temperature"), NAN);
    reading.humidity = DoubleOr(FindField(rows[0], "humidity"), NAN);
    reading.pressure = DoubleOr(FindField(rows[0], "pressure"), NAN);
    return reading;
  }

  Result<RangeSummary> ReadRange(const std::string& device_id, int64_t from, int64_t to) override {
    RangeQuery query;
    query.table = kBenchTable;
    query.device_id = device_id;
    query.measure_name = kEnvMeasure;
    query.from = from;
    query.to = to;
    query.limit = 0;
    RangeSummary summary;
    // The columnar read: what the HTTP and export paths serialise from.
    while (true) {
      CAIRN_ASSIGN_OR_RETURN(ColumnarRangeResult result, engine_->RangeColumnar(query));
      const RangeColumns& columns = result.columns;
      const ValueColumn* temperature = nullptr;
      for (const ValueColumn& column : columns.columns) {
        if (column.name == "temperature" && column.type == FieldType::kDouble) temperature = &column;
      }
      summary.rows += columns.size();
      for (size_t i = 0; i < columns.size(); ++i) {
        summary.timestamp_sum += static_cast<uint64_t>(columns.timestamps[i]);
        if (temperature != nullptr && temperature->present[i]) {
          summary.temperature_centidegrees_sum += std::llround(temperature->doubles[i] * 100);
        }
      }
      if (result.next_page_token.empty()) break;
      query.page_token = std::move(result.next_page_token);
    }
    return summary;
  }

  Result<std::vector<HourlyAggregate>> AggregateTemperatureHourly(const std::string& device_id, int64_t from,
                                                                  int64_t to) override {
    AggregateQuery query;
    query.table = kBenchTable;
    query.device_id = device_id;
    query.measure_name = kEnvMeasure;
    query.field = "temperature";
    query.from = from;
    query.to = to;
    query.step = kNanosPerHour;
    query.functions = {AggregateFunction::kMin, AggregateFunction::kMax, AggregateFunction::kAvg,
                       AggregateFunction::kCount};
    CAIRN_ASSIGN_OR_RETURN(AggregateResult result, engine_->Aggregate(query));
    std::vector<HourlyAggregate> hours;
    hours.reserve(result.buckets.size());
    for (const AggregateBucket& bucket : result.buckets) {
      if (bucket.values.size() != query.functions.size()) {
        return Status::Internal("aggregate bucket has " + std::to_string(bucket.values.size()) + " values, " +
                                std::to_string(query.functions.size()) + " requested");
      }
      HourlyAggregate hour;
      hour.start = bucket.start;
      hour.min = DoubleOr(&bucket.values[0], NAN);
      hour.max = DoubleOr(&bucket.values[1], NAN);
      hour.avg = DoubleOr(&bucket.values[2], NAN);
      const auto* count = std::get_if<int64_t>(&bucket.values[3]);
      hour.count = count != nullptr ? static_cast<uint64_t>(*count) : 0;
      hours.push_back(hour);
    }
    return hours;
  }

  // What the engine acknowledged as stored (new identities), summed over
  // every Write: duplicates are dropped by the engine and not counted.
  Result<uint64_t> StoredRecords() override { return stored_; }

  Status Close() override {
    if (engine_ == nullptr) return Status::Ok();
    Status status = engine_->Close();
    engine_.reset();
    return status;
  }

 private:
  const size_t memory_budget_bytes_;
  std::unique_ptr<Engine> engine_;
  std::vector<Record> records_;
  uint64_t stored_ = 0;
};

}  // namespace

std::unique_ptr<BenchStore> NewCairnStore(size_t memory_budget_bytes) {
  return std::make_unique<CairnStore>(memory_budget_bytes);
}

}  // namespace cairn::bench
