#include "core_benchmark.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>

#include "cairn/platform/env.h"
#include "cairn/transport/json_value.h"

#include "bench_store.h"
#include "child_process.h"
#include "sensor_generator.h"
#include "system_probe.h"

namespace cairn::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;
constexpr int64_t kNanosPerDay = kSecondsPerDay * kNanosPerSecond;
constexpr uint64_t kReadingsPerRecord = 3;  // temperature, humidity, pressure
constexpr size_t kLatestSamples = 10'000;
constexpr size_t kRangeSamples = 20;
constexpr uint64_t kHoursPerDay = 24;
// Hours of data stay inside the default 30-day table retention.
constexpr double kMaxHours = 27 * 24;
// The random streams of the main data, the day series and the latest probes
// are derived from --seed with distinct constants so they never coincide.
constexpr uint64_t kDayStream = 0x6461792d73657269ull;
constexpr uint64_t kLatestStream = 0x6c61746573742d31ull;

constexpr std::string_view kStoreNames[] = {"cairn", "naive_sqlite"};
constexpr std::string_view kPeer = "naive_sqlite";

// The metrics every store reports, in report order. `decimals` is the
// precision kept in the JSON and shown in the table.
struct MetricSpec {
  std::string_view name;
  int decimals;
  std::string_view target;  // the goal for cairn, for reference
};

constexpr MetricSpec kMetrics[] = {
    {"ingest_readings_per_s", 0, ">= 2e6/core, >= 5x naive"},
    {"bytes_per_reading", 3, "<= 2"},
    {"flash_bytes_written_per_reading", 3, "<= 10"},
    {"latest_ns_p50", 0, "<= 1000"},
    {"latest_ns_p99", 0, ""},
    {"range_1d_ms_p50", 3, "<= 2"},
    {"agg_1d_1h_ms_p50", 3, ""},
    {"rss_mb", 1, ""},
};

// Numeric targets of the issue, also printed in the JSON.
constexpr double kTargetIngestPerCore = 2e6;
constexpr double kTargetIngestRatio = 5;
constexpr double kTargetBytesPerReading = 2;
constexpr double kTargetFlashBytesPerReading = 10;
constexpr double kTargetLatestNanos = 1000;
constexpr double kTargetRangeMillis = 2;

// Defaults: 200 devices x 4 h = 2.88 M records = 8.64 M readings. The naive
// peer's cost per record grows with the number of devices per batch (each
// record dirties its device's own B-tree leaf), so 1000 devices x 1 h would
// keep it busy for over 4 minutes on a 2-core x86 host; this size runs in
// about 1.5 minutes there and still seals every series a dozen times.
struct CoreOptions {
  uint32_t devices = 200;
  double hours = 4.0;
  size_t batch = 1000;
  std::string dir;  // parent of the scratch directory; empty: $TMPDIR or /tmp
  uint64_t seed = 1;
  bool json = false;
  bool self_check = false;
  bool keep = false;
  std::vector<std::string> stores = {"cairn", "naive_sqlite"};
};

// Everything a measuring child needs; identical for every store.
struct Plan {
  uint32_t devices = 0;
  uint64_t seconds = 0;
  size_t batch = 0;
  uint64_t seed = 0;
  int64_t start = 0;  // first second of the main data and of the day series, a UTC midnight
  bool progress = false;
};

SensorGeneratorOptions MainGeneratorOptions(const Plan& plan) {
  SensorGeneratorOptions options;
  options.devices = plan.devices;
  options.device_id_prefix = "sensor-";
  options.start_unix_nanos = plan.start;
  options.seconds = plan.seconds;
  options.seed = plan.seed;
  return options;
}

SensorGeneratorOptions DayGeneratorOptions(const Plan& plan) {
  SensorGeneratorOptions options;
  options.devices = 1;
  options.device_id_prefix = "day-";
  options.start_unix_nanos = plan.start;
  options.seconds = kSecondsPerDay;
  options.seed = plan.seed ^ kDayStream;
  return options;
}

uint64_t MainRecords(const Plan& plan) { return static_cast<uint64_t>(plan.devices) * plan.seconds; }
uint64_t MainReadings(const Plan& plan) { return MainRecords(plan) * kReadingsPerRecord; }

double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

// Nearest-rank percentile. Precondition: !samples.empty().
int64_t Percentile(std::vector<int64_t> samples, double fraction) {
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(samples.size())));
  rank = std::clamp<size_t>(rank, 1, samples.size());
  return samples[rank - 1];
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

void Progress(const Plan& plan, std::string_view store, std::string_view step) {
  static const Clock::time_point origin = Clock::now();
  if (!plan.progress) return;
  char elapsed[32];
  std::snprintf(elapsed, sizeof(elapsed), "%8.2f s", static_cast<double>(ElapsedNanos(origin)) / 1e9);
  std::cerr << elapsed << "  " << store << ": " << step << std::endl;
}

// ---- measuring one store (runs in a child process) --------------------------

Result<JsonValue> MeasureStore(BenchStore* store, const Plan& plan, const std::string& directory) {
  const std::string_view name = store->name();
  CAIRN_RETURN_IF_ERROR(store->Open(directory).WithContext("open"));

  Progress(plan, name, "ingest");
  SensorGenerator main(MainGeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  batch.reserve(plan.batch);
  const Result<IoCounters> io_before = ReadIoCounters();
  int64_t ingest_nanos = 0;
  while (main.NextBatch(plan.batch, &batch)) {
    const Clock::time_point start = Clock::now();
    CAIRN_RETURN_IF_ERROR(store->Write(batch).WithContext("write"));
    ingest_nanos += ElapsedNanos(start);
  }
  Progress(plan, name, "settle");
  CAIRN_RETURN_IF_ERROR(store->Settle().WithContext("settle"));
  const Result<IoCounters> io_after = ReadIoCounters();
  CAIRN_ASSIGN_OR_RETURN(const uint64_t bytes_on_disk, DirectoryBytes(directory));

  Progress(plan, name, "day series");
  SensorGenerator day(DayGeneratorOptions(plan));
  while (day.NextBatch(plan.batch, &batch)) CAIRN_RETURN_IF_ERROR(store->Write(batch).WithContext("write"));
  CAIRN_RETURN_IF_ERROR(store->Settle().WithContext("settle"));
  const std::string& day_device = day.device_id(0);
  const int64_t day_end = plan.start + kNanosPerDay;

  Progress(plan, name, "latest");
  DeterministicRandom pick(plan.seed ^ kLatestStream);
  std::vector<int64_t> latest_nanos(kLatestSamples);
  Digest latest_digest;
  for (int64_t& sample : latest_nanos) {
    const std::string& device = main.device_id(static_cast<uint32_t>(pick.Uniform(plan.devices)));
    const Clock::time_point start = Clock::now();
    Result<LatestReading> latest = store->Latest(device);
    sample = ElapsedNanos(start);
    if (!latest.ok()) return latest.status().WithContext("latest of " + device);
    latest_digest.Mix(latest->timestamp);
    latest_digest.Mix(std::llround(latest->temperature * 100));
    latest_digest.Mix(std::llround(latest->humidity * 10));
    latest_digest.Mix(std::llround(latest->pressure * 10));
  }

  // One untimed call warms the caches and gives the answer every timed call
  // must repeat.
  Progress(plan, name, "range");
  CAIRN_ASSIGN_OR_RETURN(const RangeSummary range, store->ReadRange(day_device, plan.start, day_end));
  std::vector<int64_t> range_nanos(kRangeSamples);
  for (int64_t& sample : range_nanos) {
    const Clock::time_point start = Clock::now();
    CAIRN_ASSIGN_OR_RETURN(const RangeSummary again, store->ReadRange(day_device, plan.start, day_end));
    sample = ElapsedNanos(start);
    if (again.rows != range.rows || again.timestamp_sum != range.timestamp_sum) {
      return Status::Internal("two reads of the same day returned different rows");
    }
  }

  Progress(plan, name, "aggregate");
  CAIRN_ASSIGN_OR_RETURN(const std::vector<HourlyAggregate> hours,
                         store->AggregateTemperatureHourly(day_device, plan.start, day_end));
  std::vector<int64_t> aggregate_nanos(kRangeSamples);
  for (int64_t& sample : aggregate_nanos) {
    const Clock::time_point start = Clock::now();
    CAIRN_ASSIGN_OR_RETURN(const std::vector<HourlyAggregate> again,
                           store->AggregateTemperatureHourly(day_device, plan.start, day_end));
    sample = ElapsedNanos(start);
    if (again.size() != hours.size()) return Status::Internal("two aggregates of the same day differ");
  }
  uint64_t aggregate_count = 0;
  double aggregate_average_sum = 0;
  Digest aggregate_digest;
  for (const HourlyAggregate& hour : hours) {
    aggregate_count += hour.count;
    aggregate_average_sum += hour.avg;
    aggregate_digest.Mix(hour.start);
    aggregate_digest.Mix(hour.count);
    aggregate_digest.Mix(std::llround(hour.min * 100));
    aggregate_digest.Mix(std::llround(hour.max * 100));
  }

  Progress(plan, name, "done");
  CAIRN_ASSIGN_OR_RETURN(const uint64_t stored_records, store->StoredRecords());
  CAIRN_ASSIGN_OR_RETURN(const double rss_mb, ReadResidentMebibytes());
  CAIRN_ASSIGN_OR_RETURN(const double rss_peak_mb, ReadPeakResidentMebibytes());
  CAIRN_RETURN_IF_ERROR(store->Close().WithContext("close"));

  const double readings = static_cast<double>(MainReadings(plan));
  const double ingest_seconds = static_cast<double>(ingest_nanos) / 1e9;
  JsonValue result = JsonValue::Object();
  result.Set("ingest_seconds", JsonValue::Number(Round(ingest_seconds, 3)));
  result.Set("ingest_readings_per_s", JsonValue::Number(Round(readings / ingest_seconds, 0)));
  result.Set("bytes_on_disk", JsonValue::Unsigned(bytes_on_disk));
  result.Set("bytes_per_reading", JsonValue::Number(Round(static_cast<double>(bytes_on_disk) / readings, 3)));
  if (io_before.ok() && io_after.ok()) {
    JsonValue io = JsonValue::Object();
    io.Set("write_bytes", JsonValue::Unsigned(io_after->write_bytes - io_before->write_bytes));
    io.Set("wchar", JsonValue::Unsigned(io_after->write_chars - io_before->write_chars));
    result.Set("io", std::move(io));
  } else {
    result.Set("io", JsonValue());
  }
  result.Set("latest_ns_p50", JsonValue::Integer(Percentile(latest_nanos, 0.50)));
  result.Set("latest_ns_p99", JsonValue::Integer(Percentile(latest_nanos, 0.99)));
  result.Set("range_1d_ms_p50", JsonValue::Number(Round(Percentile(range_nanos, 0.50) / 1e6, 3)));
  result.Set("agg_1d_1h_ms_p50", JsonValue::Number(Round(Percentile(aggregate_nanos, 0.50) / 1e6, 3)));
  result.Set("rss_mb", JsonValue::Number(Round(rss_mb, 1)));
  result.Set("rss_peak_mb", JsonValue::Number(Round(rss_peak_mb, 1)));

  JsonValue checks = JsonValue::Object();
  checks.Set("stored_records", JsonValue::Unsigned(stored_records));
  checks.Set("duplicates_delivered", JsonValue::Unsigned(main.duplicates() + day.duplicates()));
  checks.Set("out_of_order_delivered", JsonValue::Unsigned(main.out_of_order() + day.out_of_order()));
  checks.Set("latest_digest", JsonValue::Unsigned(latest_digest.value));
  checks.Set("range_rows", JsonValue::Unsigned(range.rows));
  checks.Set("range_timestamp_sum", JsonValue::Unsigned(range.timestamp_sum));
  checks.Set("range_temperature_centidegrees_sum", JsonValue::Integer(range.temperature_centidegrees_sum));
  checks.Set("agg_buckets", JsonValue::Unsigned(hours.size()));
  checks.Set("agg_count", JsonValue::Unsigned(aggregate_count));
  checks.Set("agg_digest", JsonValue::Unsigned(aggregate_digest.value));
  checks.Set("agg_avg_sum", JsonValue::Number(aggregate_average_sum));
  result.Set("checks", std::move(checks));
  return result;
}

std::unique_ptr<BenchStore> NewStore(std::string_view name) {
  if (name == "cairn") return NewCairnStore();
  return NewNaiveSqliteStore();
}

// Runs one store's measurement in a child and returns its raw result.
Result<JsonValue> RunStore(std::string_view name, const Plan& plan, const std::string& run_directory) {
  const std::string directory = run_directory + "/" + std::string(name);
  CAIRN_RETURN_IF_ERROR(Env::Default()->CreateDirs(directory));
  auto measure = [&]() -> std::string {
    std::unique_ptr<BenchStore> store = NewStore(name);
    Result<JsonValue> result = MeasureStore(store.get(), plan, directory);
    if (!result.ok()) {
      JsonValue error = JsonValue::Object();
      error.Set("error", JsonValue::String(result.status().ToString()));
      return error.Serialize();
    }
    return result->Serialize();
  };
  CAIRN_ASSIGN_OR_RETURN(std::string output, RunInChildProcess(measure));
  CAIRN_ASSIGN_OR_RETURN(JsonValue parsed, JsonValue::Parse(output));
  if (const JsonValue* error = parsed.Find("error")) return Status::Internal(error->text());
  return parsed;
}

// ---- the report ------------------------------------------------------------

const JsonValue* FindPath(const JsonValue& root, std::initializer_list<std::string_view> path) {
  const JsonValue* node = &root;
  for (std::string_view key : path) {
    node = node->Find(key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

std::optional<double> NumberAt(const JsonValue& root, std::initializer_list<std::string_view> path) {
  const JsonValue* node = FindPath(root, path);
  if (node == nullptr || !node->is_number()) return std::nullopt;
  return node->number();
}

// Picks the I/O counter every store can report: write_bytes when non-zero
// for all of them, else wchar, else none.
std::string ChooseFlashCounter(const std::vector<std::pair<std::string, JsonValue>>& raw) {
  bool have_io = true, have_write_bytes = true;
  for (const auto& [name, result] : raw) {
    const JsonValue* io = result.Find("io");
    if (io == nullptr || !io->is_object()) {
      have_io = false;
      continue;
    }
    if (NumberAt(*io, {"write_bytes"}).value_or(0) <= 0) have_write_bytes = false;
  }
  if (!have_io) return "none";
  return have_write_bytes ? "write_bytes" : "wchar";
}

JsonValue StoreReport(const JsonValue& raw, const std::string& counter, const Plan& plan) {
  JsonValue report = JsonValue::Object();
  std::optional<double> flash_bytes;
  if (counter != "none") flash_bytes = NumberAt(raw, {"io", counter});
  const double readings = static_cast<double>(MainReadings(plan));
  for (const MetricSpec& metric : kMetrics) {
    if (metric.name == "flash_bytes_written_per_reading") {
      report.Set(metric.name, flash_bytes ? JsonValue::Number(Round(*flash_bytes / readings, metric.decimals))
                                          : JsonValue());
    } else {
      const JsonValue* value = raw.Find(metric.name);
      report.Set(metric.name, value != nullptr ? *value : JsonValue());
    }
  }
  report.Set("flash_counter", JsonValue::String(counter));
  report.Set("flash_bytes_written", flash_bytes ? JsonValue::Number(*flash_bytes) : JsonValue());
  for (std::string_view detail : {"ingest_seconds", "bytes_on_disk", "rss_peak_mb", "checks"}) {
    if (const JsonValue* value = raw.Find(detail)) report.Set(detail, *value);
  }
  return report;
}

// Compares what the stores answered with each other and with what the
// generator delivered; returns the differences found.
std::vector<std::string> CheckResults(const std::vector<std::pair<std::string, JsonValue>>& raw,
                                      const Plan& plan) {
  std::vector<std::string> problems;
  const uint64_t expected_records = MainRecords(plan) + kSecondsPerDay;
  const std::pair<std::string_view, uint64_t> expectations[] = {
      {"stored_records", expected_records},
      {"range_rows", kSecondsPerDay},
      {"agg_count", kSecondsPerDay},
      {"agg_buckets", kHoursPerDay},
  };
  for (const auto& [name, result] : raw) {
    for (const auto& [key, expected] : expectations) {
      const JsonValue* value = FindPath(result, {"checks", key});
      if (value == nullptr || value->text() != std::to_string(expected)) {
        problems.push_back(name + " " + std::string(key) + " = " + (value ? value->text() : "missing") +
                           ", expected " + std::to_string(expected));
      }
    }
  }
  for (size_t i = 1; i < raw.size(); ++i) {
    const JsonValue* first = raw[0].second.Find("checks");
    const JsonValue* other = raw[i].second.Find("checks");
    if (first == nullptr || other == nullptr) continue;
    for (const auto& [key, value] : first->members()) {
      const JsonValue* peer_value = other->Find(key);
      if (peer_value == nullptr) continue;
      bool same = value.text() == peer_value->text();
      if (key == "agg_avg_sum") {
        // Averages may round differently depending on summation order.
        same = std::fabs(value.number() - peer_value->number()) <=
               1e-9 * std::max(1.0, std::fabs(value.number()));
      }
      if (!same) {
        problems.push_back(std::string(key) + ": " + raw[0].first + " " + value.text() + ", " + raw[i].first +
                           " " + peer_value->text());
      }
    }
  }
  return problems;
}

JsonValue TargetsJson() {
  JsonValue targets = JsonValue::Object();
  targets.Set("ingest_readings_per_s_min_per_core", JsonValue::Number(kTargetIngestPerCore));
  targets.Set("ingest_ratio_min", JsonValue::Number(kTargetIngestRatio));
  targets.Set("bytes_per_reading_max", JsonValue::Number(kTargetBytesPerReading));
  targets.Set("flash_bytes_written_per_reading_max", JsonValue::Number(kTargetFlashBytesPerReading));
  targets.Set("latest_ns_p50_max", JsonValue::Number(kTargetLatestNanos));
  targets.Set("range_1d_ms_p50_max", JsonValue::Number(kTargetRangeMillis));
  return targets;
}

// Whether cairn meets each target; null where a number is missing. Ingest is
// measured with one writer thread, so its rate is the per-core rate.
JsonValue TargetsMet(const JsonValue& report) {
  auto at_most = [&](std::string_view metric, double limit) {
    const std::optional<double> value = NumberAt(report, {"cairn", metric});
    return value ? JsonValue::Bool(*value <= limit) : JsonValue();
  };
  JsonValue met = JsonValue::Object();
  const std::optional<double> ingest = NumberAt(report, {"cairn", "ingest_readings_per_s"});
  const std::optional<double> ratio = NumberAt(report, {"ratios", "ingest_readings_per_s"});
  met.Set("ingest_readings_per_s",
          ingest && ratio ? JsonValue::Bool(*ingest >= kTargetIngestPerCore && *ratio >= kTargetIngestRatio)
          : ingest        ? JsonValue::Bool(*ingest >= kTargetIngestPerCore)
                          : JsonValue());
  met.Set("bytes_per_reading", at_most("bytes_per_reading", kTargetBytesPerReading));
  met.Set("flash_bytes_written_per_reading",
          at_most("flash_bytes_written_per_reading", kTargetFlashBytesPerReading));
  met.Set("latest_ns_p50", at_most("latest_ns_p50", kTargetLatestNanos));
  met.Set("range_1d_ms_p50", at_most("range_1d_ms_p50", kTargetRangeMillis));
  return met;
}

JsonValue BuildReport(const CoreOptions& options, const Plan& plan, const std::string& run_directory,
                      const std::vector<std::pair<std::string, JsonValue>>& raw) {
  const MachineDescription machine = DescribeMachine();
  const std::string counter = ChooseFlashCounter(raw);

  JsonValue report = JsonValue::Object();
  report.Set("benchmark", JsonValue::String("core"));
  report.Set("readings", JsonValue::Unsigned(MainReadings(plan)));
  report.Set("records", JsonValue::Unsigned(MainRecords(plan)));
  report.Set("devices", JsonValue::Unsigned(plan.devices));
  report.Set("hours", JsonValue::Number(options.hours));
  report.Set("batch", JsonValue::Unsigned(plan.batch));
  report.Set("seed", JsonValue::Unsigned(plan.seed));
  JsonValue machine_json = JsonValue::Object();
  machine_json.Set("nproc", JsonValue::Integer(machine.cpus));
  machine_json.Set("cpu_model", JsonValue::String(machine.cpu_model));
  machine_json.Set("arch", JsonValue::String(machine.architecture));
  machine_json.Set("kernel", JsonValue::String(machine.kernel));
  report.Set("machine", std::move(machine_json));
  report.Set("sqlite_version", JsonValue::String(sqlite3_libversion()));
  report.Set("data_filesystem", JsonValue::String(FilesystemName(run_directory)));
  report.Set("flash_counter", JsonValue::String(counter));
  for (const auto& [name, result] : raw) report.Set(name, StoreReport(result, counter, plan));

  JsonValue ratios = JsonValue::Object();
  const JsonValue* cairn = report.Find("cairn");
  const JsonValue* peer = report.Find(kPeer);
  for (const MetricSpec& metric : kMetrics) {
    std::optional<double> numerator, denominator;
    if (cairn != nullptr) numerator = NumberAt(*cairn, {metric.name});
    if (peer != nullptr) denominator = NumberAt(*peer, {metric.name});
    ratios.Set(metric.name, numerator && denominator && *denominator != 0
                                ? JsonValue::Number(Round(*numerator / *denominator, 4))
                                : JsonValue());
  }
  report.Set("ratios", std::move(ratios));
  report.Set("targets", TargetsJson());
  report.Set("targets_met", TargetsMet(report));

  const std::vector<std::string> problems = CheckResults(raw, plan);
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_records", JsonValue::Unsigned(MainRecords(plan) + kSecondsPerDay));
  checks.Set("results_match", JsonValue::Bool(problems.empty()));
  JsonValue mismatches = JsonValue::Array();
  for (const std::string& problem : problems) mismatches.Append(JsonValue::String(problem));
  checks.Set("mismatches", std::move(mismatches));
  report.Set("checks", std::move(checks));
  return report;
}

std::string FormatNumber(const JsonValue* value, int decimals) {
  if (value == nullptr || !value->is_number()) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value->number());
  return buffer;
}

std::string FormatRatio(const JsonValue* value) {
  if (value == nullptr || !value->is_number()) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value->number());
  return buffer;
}

void PrintTable(const JsonValue& report, std::ostream& out) {
  const JsonValue& machine = *report.Find("machine");
  char line[256];
  out << "cairn-bench core: " << report.Find("devices")->text() << " devices x "
      << report.Find("hours")->text() << " h at 1 Hz = " << report.Find("records")->text()
      << " records = " << report.Find("readings")->text() << " readings, batch "
      << report.Find("batch")->text() << ", seed " << report.Find("seed")->text() << "\n";
  out << "machine: " << machine.Find("nproc")->text() << " CPUs, " << machine.Find("cpu_model")->text()
      << " (" << machine.Find("arch")->text() << ", Linux " << machine.Find("kernel")->text() << "), SQLite "
      << report.Find("sqlite_version")->text() << ", data on " << report.Find("data_filesystem")->text()
      << "\n";
  if (report.Find("data_filesystem")->text() == "tmpfs") {
    out << "warning: the data directory is on tmpfs: fsync is free and nothing reaches flash; "
           "use --dir on the gateway's storage\n";
  }
  out << "\n";
  std::snprintf(line, sizeof(line), "%-33s %14s %14s %9s  %s\n", "metric", "cairn", "naive_sqlite", "ratio",
                "target (cairn)");
  out << line;
  const JsonValue* cairn = report.Find("cairn");
  const JsonValue* peer = report.Find(kPeer);
  const JsonValue* ratios = report.Find("ratios");
  const JsonValue* met = report.Find("targets_met");
  for (const MetricSpec& metric : kMetrics) {
    std::string target(metric.target);
    if (const JsonValue* verdict = met->Find(metric.name); verdict != nullptr && !verdict->is_null()) {
      target += verdict->boolean() ? "  met" : "  NOT met";
    }
    std::snprintf(line, sizeof(line), "%-33s %14s %14s %9s  %s\n", std::string(metric.name).c_str(),
                  FormatNumber(cairn ? cairn->Find(metric.name) : nullptr, metric.decimals).c_str(),
                  FormatNumber(peer ? peer->Find(metric.name) : nullptr, metric.decimals).c_str(),
                  FormatRatio(ratios->Find(metric.name)).c_str(), target.c_str());
    out << line;
  }
  out << "\nflash counter: " << report.Find("flash_counter")->text()
      << " (delta over ingest + seal/checkpoint, /proc/self/io of each store's process)\n";
  for (std::string_view store : kStoreNames) {
    const JsonValue* result = report.Find(store);
    if (result == nullptr) continue;
    out << store << ": ingest " << FormatNumber(result->Find("ingest_seconds"), 2) << " s, "
        << FormatNumber(result->Find("bytes_on_disk"), 0) << " bytes on disk, peak RSS "
        << FormatNumber(result->Find("rss_peak_mb"), 1) << " MiB, "
        << FormatNumber(FindPath(*result, {"checks", "duplicates_delivered"}), 0) << " duplicates and "
        << FormatNumber(FindPath(*result, {"checks", "out_of_order_delivered"}), 0)
        << " late records delivered\n";
  }
  const JsonValue& checks = *report.Find("checks");
  if (checks.Find("results_match")->boolean()) {
    out << "results: every store returned the same latest readings, day range and hourly aggregates\n";
  } else {
    out << "results DIFFER:\n";
    for (const JsonValue& problem : checks.Find("mismatches")->elements())
      out << "  " << problem.text() << "\n";
  }
}

// Checks the printed JSON the way a consumer would: it parses, and every key
// the report promises is there with the right type.
std::vector<std::string> SelfCheck(const std::string& printed) {
  std::vector<std::string> problems;
  Result<JsonValue> parsed = JsonValue::Parse(printed);
  if (!parsed.ok()) return {"output is not valid JSON: " + parsed.status().ToString()};
  const JsonValue& report = *parsed;
  auto require_number = [&](const JsonValue& node, std::string_view where, std::string_view key,
                            bool positive) {
    const JsonValue* value = node.Find(key);
    if (value == nullptr || !value->is_number()) {
      problems.push_back(std::string(where) + "." + std::string(key) + " is missing or not a number");
    } else if (value->number() < 0 || (positive && value->number() <= 0)) {
      problems.push_back(std::string(where) + "." + std::string(key) + " = " + value->text() +
                         " is out of range");
    }
  };
  const JsonValue* benchmark = report.Find("benchmark");
  if (benchmark == nullptr || !benchmark->is_string() || benchmark->text() != "core") {
    problems.push_back("benchmark is not \"core\"");
  }
  for (std::string_view key : {"readings", "devices", "hours"}) require_number(report, "report", key, true);
  const JsonValue* machine = report.Find("machine");
  if (machine == nullptr || !machine->is_object()) {
    problems.push_back("machine is missing");
  } else {
    require_number(*machine, "machine", "nproc", true);
    const JsonValue* model = machine->Find("cpu_model");
    if (model == nullptr || !model->is_string() || model->text().empty())
      problems.push_back("machine.cpu_model");
  }
  const JsonValue* counter = report.Find("flash_counter");
  const bool flash_measurable = counter != nullptr && counter->is_string() && counter->text() != "none";
  for (std::string_view store : kStoreNames) {
    const JsonValue* result = report.Find(store);
    if (result == nullptr || !result->is_object()) {
      problems.push_back(std::string(store) + " is missing");
      continue;
    }
    for (const MetricSpec& metric : kMetrics) {
      if (metric.name == "flash_bytes_written_per_reading" && !flash_measurable) continue;
      const bool positive = metric.name != "flash_bytes_written_per_reading";
      require_number(*result, store, metric.name, positive);
    }
  }
  const JsonValue* ratios = report.Find("ratios");
  if (ratios == nullptr || !ratios->is_object()) {
    problems.push_back("ratios is missing");
  } else {
    for (const MetricSpec& metric : kMetrics) {
      const JsonValue* value = ratios->Find(metric.name);
      const bool may_be_null = metric.name == "flash_bytes_written_per_reading";
      if (value == nullptr || !(value->is_number() || (may_be_null && value->is_null()))) {
        problems.push_back("ratios." + std::string(metric.name) + " is missing or not a number");
      }
    }
  }
  const JsonValue* match = FindPath(report, {"checks", "results_match"});
  if (match == nullptr || match->kind() != JsonValue::Kind::kBool || !match->boolean()) {
    problems.push_back("checks.results_match is not true: the stores answered differently");
  }
  return problems;
}

// ---- options ----------------------------------------------------------------

constexpr char kUsage[] =
    "usage: cairn-bench core [--json] [--self-check] [--devices N] [--hours H] [--batch N]\n"
    "                        [--seed N] [--dir PATH] [--keep] [--stores cairn,naive_sqlite]\n"
    "\n"
    "  --devices N   devices sending one multi-measure record per second (default 200)\n"
    "  --hours H     hours of data per device, fractions allowed, at most 648 (default 4)\n"
    "  --batch N     records per write call / SQLite transaction (default 1000)\n"
    "  --seed N      seed of the generated data and of the query choices (default 1)\n"
    "  --dir PATH    where to create the scratch data directory (default $TMPDIR or /tmp);\n"
    "                point it at the storage being measured (tmpfs makes fsync free)\n"
    "  --keep        keep the data directory instead of removing it at exit\n"
    "  --stores L    comma-separated subset of the stores to run (default both)\n"
    "  --json        print one JSON object instead of the table\n"
    "  --self-check  validate the printed JSON (keys, types, stores agreeing); exit 1 if not\n";

template <typename T>
bool ParseInteger(std::string_view text, T* out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size();
}

bool ParseHours(std::string_view text, double* out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && std::isfinite(*out);
}

std::vector<std::string> SplitComma(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    parts.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return parts;
}

// Returns an error message, empty on success.
std::string ParseOptions(int argc, char** argv, CoreOptions* options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    if (const size_t equals = arg.find('='); arg.starts_with("--") && equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      has_value = true;
    }
    auto take_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (arg == "--json") {
      options->json = true;
    } else if (arg == "--self-check") {
      options->self_check = true;
    } else if (arg == "--keep") {
      options->keep = true;
    } else if (arg == "--devices") {
      if (!take_value() || !ParseInteger(value, &options->devices) || options->devices < 1 ||
          options->devices > 1'000'000) {
        return "--devices takes an integer in [1, 1000000]";
      }
    } else if (arg == "--hours") {
      if (!take_value() || !ParseHours(value, &options->hours) || options->hours <= 0 ||
          options->hours > kMaxHours) {
        return "--hours takes a number in (0, 648] (the data must stay inside the 30-day retention)";
      }
    } else if (arg == "--batch") {
      if (!take_value() || !ParseInteger(value, &options->batch) || options->batch < 1 ||
          options->batch > 1'000'000) {
        return "--batch takes an integer in [1, 1000000]";
      }
    } else if (arg == "--seed") {
      if (!take_value() || !ParseInteger(value, &options->seed)) return "--seed takes an unsigned integer";
    } else if (arg == "--dir") {
      if (!take_value() || value.empty()) return "--dir takes a directory";
      options->dir = std::string(value);
    } else if (arg == "--stores") {
      if (!take_value()) return "--stores takes a list";
      options->stores = SplitComma(value);
      if (options->stores.empty()) return "--stores takes a non-empty list";
      for (const std::string& store : options->stores) {
        if (std::find(std::begin(kStoreNames), std::end(kStoreNames), store) == std::end(kStoreNames)) {
          return "unknown store \"" + store + "\" (known: cairn, naive_sqlite)";
        }
      }
    } else {
      return "unknown argument \"" + std::string(arg) + "\"";
    }
  }
  if (options->self_check && options->stores.size() != std::size(kStoreNames)) {
    return "--self-check needs every store";
  }
  const double seconds = std::round(options->hours * 3600);
  if (seconds < 1) return "--hours must cover at least one second";
  return "";
}

}  // namespace

int RunCoreBenchmark(int argc, char** argv) {
  CoreOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << kUsage;
      return 0;
    }
  }
  if (const std::string error = ParseOptions(argc, argv, &options); !error.empty()) {
    std::cerr << "cairn-bench core: " << error << "\n\n" << kUsage;
    return 2;
  }

  Plan plan;
  plan.devices = options.devices;
  plan.seconds = static_cast<uint64_t>(std::llround(options.hours * 3600));
  plan.batch = options.batch;
  plan.seed = options.seed;
  plan.progress = !options.json;
  // The data ends before yesterday's midnight: within the table's retention,
  // never in the future, and a whole UTC day for the day series.
  const int64_t today = Env::Default()->NowUnixNanos() / kNanosPerDay;
  const auto days_of_data = static_cast<int64_t>((plan.seconds + kSecondsPerDay - 1) / kSecondsPerDay);
  plan.start = (today - days_of_data - 1) * kNanosPerDay;

  std::string parent = options.dir;
  if (parent.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    parent = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  Result<ScratchDirectory> scratch = ScratchDirectory::Create(parent, "cairn-bench-");
  if (!scratch.ok()) {
    std::cerr << "cairn-bench core: " << scratch.status().ToString() << "\n";
    return 1;
  }
  if (options.keep) scratch->Keep();

  std::vector<std::pair<std::string, JsonValue>> raw;
  for (std::string_view name : kStoreNames) {
    if (std::find(options.stores.begin(), options.stores.end(), name) == options.stores.end()) continue;
    if (plan.progress)
      std::cerr << "running " << name << " in " << scratch->path() << "/" << name << std::endl;
    Result<JsonValue> result = RunStore(name, plan, scratch->path());
    if (!result.ok()) {
      std::cerr << "cairn-bench core: " << name << ": " << result.status().message() << "\n";
      return 1;
    }
    raw.emplace_back(std::string(name), std::move(*result));
  }

  const JsonValue report = BuildReport(options, plan, scratch->path(), raw);
  const std::string printed = report.Serialize();
  if (options.json) {
    std::cout << printed << "\n";
  } else {
    PrintTable(report, std::cout);
  }
  if (options.keep) std::cerr << "data kept in " << scratch->path() << "\n";

  if (options.self_check) {
    const std::vector<std::string> problems = SelfCheck(printed);
    for (const std::string& problem : problems) std::cerr << "self-check: " << problem << "\n";
    if (!problems.empty()) return 1;
    std::cerr << "self-check: OK\n";
  }
  return FindPath(report, {"checks", "results_match"})->boolean() ? 0 : 1;
}

}  // namespace cairn::bench
