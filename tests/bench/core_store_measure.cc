#include "core_store_measure.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cairn/platform/env.h"

#include "sensor_generator.h"
#include "system_probe.h"

namespace cairn::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kLatestSamples = 10'000;
constexpr size_t kRangeSamples = 20;

// The random streams of the main data, the day series and the latest probes
// are derived from --seed with distinct constants so they never coincide.
constexpr uint64_t kDayStream = 0x6461792d73657269ull;
constexpr uint64_t kLatestStream = 0x6c61746573742d31ull;

// The day series: one device over the whole UTC day from plan.start, where
// the main data starts too.
SensorGeneratorOptions DayGeneratorOptions(const DataPlan& plan) {
  SensorGeneratorOptions options;
  options.devices = 1;
  options.device_id_prefix = "day-";
  options.start_unix_nanos = plan.start;
  options.seconds = kSecondsPerDay;
  options.seed = plan.seed ^ kDayStream;
  return options;
}

int64_t ElapsedNanos(Clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since).count();
}

// Order-sensitive 64-bit digest (FNV-1a over whole words).
struct Digest {
  uint64_t value = 0xcbf29ce484222325ull;
  template <typename Integer>
  void Mix(Integer word) {
    value = (value ^ static_cast<uint64_t>(word)) * 0x100000001b3ull;
  }
};

// What the steps of MeasureStore gather, in the order they run.
struct StoreMeasurements {
  // Ingest of the main data set, up to the settled store.
  int64_t ingest_nanos = 0;
  std::optional<IoCounters> io_before;  // empty where /proc has no io file
  std::optional<IoCounters> io_after;
  uint64_t bytes_on_disk = 0;
  // Latest reading of random devices.
  std::vector<int64_t> latest_nanos;
  Digest latest_digest;
  // The one-day series: a full-day range read and its hourly aggregate.
  RangeSummary range;
  std::vector<int64_t> range_nanos;
  std::vector<HourlyAggregate> hours;
  std::vector<int64_t> aggregate_nanos;
  // After the runs, before the store closes.
  uint64_t stored_records = 0;
  double rss_mb = 0;
  double rss_peak_mb = 0;
};

std::optional<IoCounters> IoCountersIfReadable() {
  Result<IoCounters> counters = ReadIoCounters();
  if (!counters.ok()) return std::nullopt;
  return *counters;
}

// Writes the main data set in batches, timing only the writes, then settles
// the store and takes its size on disk and the process's bytes written.
Status IngestMain(BenchStore* store, const DataPlan& plan, const std::string& directory,
                  SensorGenerator* main, StoreMeasurements* out) {
  Progress(plan, store->name(), "ingest");
  std::vector<SensorRecord> batch;
  batch.reserve(plan.batch);
  out->io_before = IoCountersIfReadable();
  while (main->NextBatch(plan.batch, &batch)) {
    const Clock::time_point start = Clock::now();
    CAIRN_RETURN_IF_ERROR(store->Write(batch).WithContext("write"));
    out->ingest_nanos += ElapsedNanos(start);
  }
  Progress(plan, store->name(), "settle");
  CAIRN_RETURN_IF_ERROR(store->Settle().WithContext("settle"));
  out->io_after = IoCountersIfReadable();
  CAIRN_ASSIGN_OR_RETURN(out->bytes_on_disk, DirectoryBytes(directory));
  return Status::Ok();
}

// Writes the one-day series the range and aggregate queries read, untimed.
Status WriteDaySeries(BenchStore* store, const DataPlan& plan, SensorGenerator* day) {
  Progress(plan, store->name(), "day series");
  std::vector<SensorRecord> batch;
  batch.reserve(plan.batch);
  while (day->NextBatch(plan.batch, &batch)) CAIRN_RETURN_IF_ERROR(store->Write(batch).WithContext("write"));
  return store->Settle().WithContext("settle");
}

// Times the latest reading of devices picked at random, and digests the answers.
Status MeasureLatest(BenchStore* store, const DataPlan& plan, const SensorGenerator& main,
                     StoreMeasurements* out) {
  Progress(plan, store->name(), "latest");
  DeterministicRandom pick(plan.seed ^ kLatestStream);
  out->latest_nanos.assign(kLatestSamples, 0);
  for (int64_t& sample : out->latest_nanos) {
    const std::string& device = main.device_id(static_cast<uint32_t>(pick.Uniform(plan.devices)));
    const Clock::time_point start = Clock::now();
    Result<LatestReading> latest = store->Latest(device);
    sample = ElapsedNanos(start);
    if (!latest.ok()) return latest.status().WithContext("latest of " + device);
    out->latest_digest.Mix(latest->timestamp);
    out->latest_digest.Mix(std::llround(latest->temperature * 100));
    out->latest_digest.Mix(std::llround(latest->humidity * 10));
    out->latest_digest.Mix(std::llround(latest->pressure * 10));
  }
  return Status::Ok();
}

// Times a full-day range read and the day's hourly temperature aggregate.
// One untimed call of each warms the caches and gives the answer every timed
// call must repeat.
Status MeasureDayQueries(BenchStore* store, const DataPlan& plan, const std::string& day_device,
                         StoreMeasurements* out) {
  const int64_t day_end = plan.start + kNanosPerDay;
  Progress(plan, store->name(), "range");
  CAIRN_ASSIGN_OR_RETURN(out->range, store->ReadRange(day_device, plan.start, day_end));
  out->range_nanos.assign(kRangeSamples, 0);
  for (int64_t& sample : out->range_nanos) {
    const Clock::time_point start = Clock::now();
    CAIRN_ASSIGN_OR_RETURN(const RangeSummary again, store->ReadRange(day_device, plan.start, day_end));
    sample = ElapsedNanos(start);
    if (again.rows != out->range.rows || again.timestamp_sum != out->range.timestamp_sum) {
      return Status::Internal("two reads of the same day returned different rows");
    }
  }

  Progress(plan, store->name(), "aggregate");
  CAIRN_ASSIGN_OR_RETURN(out->hours, store->AggregateTemperatureHourly(day_device, plan.start, day_end));
  out->aggregate_nanos.assign(kRangeSamples, 0);
  for (int64_t& sample : out->aggregate_nanos) {
    const Clock::time_point start = Clock::now();
    CAIRN_ASSIGN_OR_RETURN(const std::vector<HourlyAggregate> again,
                           store->AggregateTemperatureHourly(day_device, plan.start, day_end));
    sample = ElapsedNanos(start);
    if (again.size() != out->hours.size()) return Status::Internal("two aggregates of the same day differ");
  }
  return Status::Ok();
}

// The timings and sizes of one store's result.
JsonValue MeasurementsJson(const DataPlan& plan, const StoreMeasurements& m) {
  const double readings = static_cast<double>(MainReadings(plan));
  const double ingest_seconds = static_cast<double>(m.ingest_nanos) / 1e9;
  JsonValue result = JsonValue::Object();
  result.Set("ingest_seconds", JsonValue::Number(Round(ingest_seconds, 3)));
  result.Set("ingest_readings_per_s", JsonValue::Number(Round(readings / ingest_seconds, 0)));
  result.Set("bytes_on_disk", JsonValue::Unsigned(m.bytes_on_disk));
  result.Set("bytes_per_reading",
             JsonValue::Number(Round(static_cast<double>(m.bytes_on_disk) / readings, 3)));
  if (m.io_before && m.io_after) {
    JsonValue io = JsonValue::Object();
    io.Set("write_bytes", JsonValue::Unsigned(m.io_after->write_bytes - m.io_before->write_bytes));
    io.Set("wchar", JsonValue::Unsigned(m.io_after->write_chars - m.io_before->write_chars));
    result.Set("io", std::move(io));
  } else {
    result.Set("io", JsonValue());
  }
  result.Set("latest_ns_p50", JsonValue::Integer(Percentile(m.latest_nanos, 0.50)));
  result.Set("latest_ns_p99", JsonValue::Integer(Percentile(m.latest_nanos, 0.99)));
  result.Set("range_1d_ms_p50", JsonValue::Number(Round(Percentile(m.range_nanos, 0.50) / 1e6, 3)));
  result.Set("agg_1d_1h_ms_p50", JsonValue::Number(Round(Percentile(m.aggregate_nanos, 0.50) / 1e6, 3)));
  result.Set("rss_mb", JsonValue::Number(Round(m.rss_mb, 1)));
  result.Set("rss_peak_mb", JsonValue::Number(Round(m.rss_peak_mb, 1)));
  return result;
}

// The answers both stores must agree on, and what the generators delivered.
JsonValue ChecksJson(const StoreMeasurements& m, const SensorGenerator& main, const SensorGenerator& day) {
  uint64_t aggregate_count = 0;
  double aggregate_average_sum = 0;
  Digest aggregate_digest;
  for (const HourlyAggregate& hour : m.hours) {
    aggregate_count += hour.count;
    aggregate_average_sum += hour.avg;
    aggregate_digest.Mix(hour.start);
    aggregate_digest.Mix(hour.count);
    aggregate_digest.Mix(std::llround(hour.min * 100));
    aggregate_digest.Mix(std::llround(hour.max * 100));
  }
  JsonValue checks = JsonValue::Object();
  checks.Set("stored_records", JsonValue::Unsigned(m.stored_records));
  checks.Set("duplicates_delivered", JsonValue::Unsigned(main.duplicates() + day.duplicates()));
  checks.Set("out_of_order_delivered", JsonValue::Unsigned(main.out_of_order() + day.out_of_order()));
  checks.Set("latest_digest", JsonValue::Unsigned(m.latest_digest.value));
  checks.Set("range_rows", JsonValue::Unsigned(m.range.rows));
  checks.Set("range_timestamp_sum", JsonValue::Unsigned(m.range.timestamp_sum));
  checks.Set("range_temperature_centidegrees_sum", JsonValue::Integer(m.range.temperature_centidegrees_sum));
  checks.Set("agg_buckets", JsonValue::Unsigned(m.hours.size()));
  checks.Set("agg_count", JsonValue::Unsigned(aggregate_count));
  checks.Set("agg_digest", JsonValue::Unsigned(aggregate_digest.value));
  checks.Set("agg_avg_sum", JsonValue::Number(aggregate_average_sum));
  return checks;
}

}  // namespace

uint64_t MainReadings(const DataPlan& plan) { return PlannedRecords(plan) * kReadingsPerRecord; }

// Ingests the main data set and the one-day series into `store`, times the
// queries, and returns the result with the answers to cross-check.
Result<JsonValue> MeasureStore(BenchStore* store, const DataPlan& plan, const std::string& directory) {
  CAIRN_RETURN_IF_ERROR(store->Open(directory).WithContext("open"));
  StoreMeasurements measured;
  SensorGenerator main(GeneratorOptions(plan));
  CAIRN_RETURN_IF_ERROR(IngestMain(store, plan, directory, &main, &measured));
  SensorGenerator day(DayGeneratorOptions(plan));
  CAIRN_RETURN_IF_ERROR(WriteDaySeries(store, plan, &day));
  CAIRN_RETURN_IF_ERROR(MeasureLatest(store, plan, main, &measured));
  CAIRN_RETURN_IF_ERROR(MeasureDayQueries(store, plan, day.device_id(0), &measured));

  Progress(plan, store->name(), "done");
  CAIRN_ASSIGN_OR_RETURN(measured.stored_records, store->StoredRecords());
  CAIRN_ASSIGN_OR_RETURN(measured.rss_mb, ReadResidentMebibytes());
  CAIRN_ASSIGN_OR_RETURN(measured.rss_peak_mb, ReadPeakResidentMebibytes());
  CAIRN_RETURN_IF_ERROR(store->Close().WithContext("close"));

  JsonValue result = MeasurementsJson(plan, measured);
  result.Set("checks", ChecksJson(measured, main, day));
  return result;
}

Result<JsonValue> MeasureManySeries(BenchStore* store, const std::string& directory, uint32_t series,
                                    uint32_t records_each) {
  CAIRN_RETURN_IF_ERROR(store->Open(directory).WithContext("open"));
  std::vector<std::string> ids(series);
  for (uint32_t i = 0; i < series; ++i) ids[i] = "many-" + std::to_string(i);
  // An hour ago, whole seconds: inside the table's retention, in one period.
  const int64_t start = (Env::Default()->NowUnixNanos() / kNanosPerSecond - 3600) * kNanosPerSecond;
  constexpr size_t kBatch = 1000;
  std::vector<SensorRecord> batch;
  batch.reserve(kBatch);
  for (uint32_t r = 0; r < records_each; ++r) {
    for (uint32_t i = 0; i < series; ++i) {
      batch.push_back(SensorRecord{ids[i], i, start + r * kNanosPerSecond, static_cast<int32_t>(2000 + i % 500),
                                   static_cast<int32_t>(400 + r), static_cast<int32_t>(10130 + i % 50)});
      if (batch.size() == kBatch) {
        CAIRN_RETURN_IF_ERROR(store->Write(batch));
        batch.clear();
      }
    }
  }
  if (!batch.empty()) CAIRN_RETURN_IF_ERROR(store->Write(batch));
  JsonValue result = JsonValue::Object();
  result.Set("series", JsonValue::Unsigned(series));
  result.Set("records_each", JsonValue::Unsigned(records_each));
  CAIRN_ASSIGN_OR_RETURN(const double rss, ReadResidentMebibytes());
  CAIRN_ASSIGN_OR_RETURN(const double peak, ReadPeakResidentMebibytes());
  result.Set("rss_mb", JsonValue::Number(Round(rss, 1)));
  result.Set("rss_peak_mb", JsonValue::Number(Round(peak, 1)));
  CAIRN_ASSIGN_OR_RETURN(const uint64_t stored, store->StoredRecords());
  if (stored != uint64_t{series} * records_each) {
    return Status::Internal("the many-series store holds " + std::to_string(stored) + " records, not " +
                            std::to_string(uint64_t{series} * records_each));
  }
  CAIRN_RETURN_IF_ERROR(store->Close().WithContext("close"));
  return result;
}

}  // namespace cairn::bench
